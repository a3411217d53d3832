package kernel

import (
	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
)

// newNSFlags are the CLONE_NEW* flags: each needs CAP_SYS_ADMIN.
const newNSFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWPID |
	unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// copyNamespaces picks the pid and IPC namespaces of a new task, creating
// those flags ask for (copy_namespaces). The mount, UTS, network, cgroup
// and time namespaces are not modelled: their flags only need the
// capability. Errors: EPERM without CAP_SYS_ADMIN; EINVAL for
// CLONE_NEWIPC with CLONE_SYSVSEM (an undo list cannot span namespaces) or
// a second new pid namespace after unshare; ENOSPC past 32 pid levels.
func (t *Task) copyNamespaces(flags uint64, creds *Creds) (*PIDNamespace, *sem.Namespace, error) {
	pidNS, ipcNS := t.nsForChildren.Load(), t.ipcNS.Load()
	if flags&newNSFlags == 0 {
		return pidNS, ipcNS, nil
	}
	if !creds.HasCap(unix.CAP_SYS_ADMIN) {
		return nil, nil, unix.EPERM
	}
	if flags&(unix.CLONE_NEWIPC|unix.CLONE_SYSVSEM) == unix.CLONE_NEWIPC|unix.CLONE_SYSVSEM {
		return nil, nil, unix.EINVAL
	}
	if flags&unix.CLONE_NEWPID != 0 {
		// copy_pid_ns: only one new pid namespace per task and level.
		if pidNS != t.tg.ns {
			return nil, nil, unix.EINVAL
		}
		var err error
		if pidNS, err = newPIDNamespace(t.k, pidNS, pidNS.PIDMax()); err != nil {
			return nil, nil, err
		}
	}
	if flags&unix.CLONE_NEWIPC != 0 {
		ipcNS = sem.NewNamespace(t.k.semLimits)
	}
	return pidNS, ipcNS, nil
}

// Unshare is unshare(2) for the namespaces the model has: CLONE_NEWPID
// makes the caller's future children start a new pid namespace, whose
// first child becomes its init; CLONE_NEWIPC gives the caller a fresh IPC
// namespace. CLONE_SYSVSEM (implied by CLONE_NEWIPC) detaches the caller
// from its semaphore undo list as exit would. Other flags are accepted and
// have no effect. Errors: EINVAL for unknown flags, for CLONE_THREAD,
// CLONE_SIGHAND or CLONE_VM in a multi-threaded process, for a second
// CLONE_NEWPID, and for CLONE_NEWUSER (not modelled); EPERM without
// CAP_SYS_ADMIN; ENOSPC past 32 levels.
func (t *Task) Unshare(flags uint64) error {
	if !t.alive() {
		return unix.ESRCH
	}
	const known = unix.CLONE_THREAD | unix.CLONE_FS | unix.CLONE_NEWNS | unix.CLONE_SIGHAND |
		unix.CLONE_VM | unix.CLONE_FILES | unix.CLONE_SYSVSEM | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
		unix.CLONE_NEWNET | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME
	if flags&^known != 0 {
		return unix.EINVAL
	}
	if flags&(unix.CLONE_THREAD|unix.CLONE_SIGHAND|unix.CLONE_VM) != 0 {
		// The process lock makes the thread count stable to read.
		t.tg.mu.Lock()
		multi := t.tg.threads.len > 1
		t.tg.mu.Unlock()
		if multi {
			return unix.EINVAL
		}
	}
	if flags&unix.CLONE_NEWUSER != 0 {
		return unix.EINVAL
	}
	// The new namespaces are made as for a child, without CLONE_SYSVSEM:
	// unshare detaches from the undo list instead of sharing it.
	pidNS, ipcNS, err := t.copyNamespaces(flags&^unix.CLONE_SYSVSEM, t.creds.Load())
	if err != nil {
		return err
	}
	if flags&(unix.CLONE_SYSVSEM|unix.CLONE_NEWIPC) != 0 {
		t.exitSem()
	}
	t.nsForChildren.Store(pidNS)
	t.ipcNS.Store(ipcNS)
	return nil
}
