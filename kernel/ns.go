package kernel

import (
	"sync/atomic"

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
		ipcNS = sem.NewNamespaceLocking(t.k.cfg.SemLimits, t.k.plan.SemLocking())
	}
	return pidNS, ipcNS, nil
}

// unshareFlags are the flags unshare(2) knows (check_unshare_flags).
const unshareFlags = unix.CLONE_THREAD | unix.CLONE_FS | unix.CLONE_NEWNS | unix.CLONE_SIGHAND |
	unix.CLONE_VM | unix.CLONE_FILES | unix.CLONE_SYSVSEM | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWNET | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// Unshare is unshare(2) (ksys_unshare) for the namespaces the model has:
// CLONE_NEWPID makes the caller's future children start a new pid
// namespace, whose first child becomes its init; CLONE_NEWIPC gives the
// caller a fresh IPC namespace. CLONE_SYSVSEM (implied by CLONE_NEWIPC)
// detaches the caller from its semaphore undo list as exit would.
// CLONE_FILES gives the caller a copy of a descriptor table it shares.
//
// As in Linux, CLONE_NEWUSER implies CLONE_THREAD|CLONE_FS, CLONE_VM
// implies CLONE_SIGHAND, CLONE_SIGHAND implies CLONE_THREAD and
// CLONE_NEWNS implies CLONE_FS. CLONE_THREAD, CLONE_SIGHAND and CLONE_VM
// cannot be undone and are accepted, with no effect, only where there is
// nothing to unshare; the other flags the model has no object for are
// accepted and have no effect.
//
// Errors: EINVAL for unknown flags; for CLONE_THREAD, CLONE_SIGHAND or
// CLONE_VM (or CLONE_NEWUSER) when the caller's process has another
// thread, or is not alone on its thread list (a thread whose leader is a
// zombie); for CLONE_SIGHAND or CLONE_VM when another process shares the
// caller's signal handler table (made with CLONE_SIGHAND, until it is
// reaped or execs); for CLONE_VM when another process shares the caller's
// address space (made with CLONE_VM, a vfork child included, until its
// last thread exits or it execs: current_is_single_threaded); for a
// second CLONE_NEWPID; for CLONE_NEWUSER (not modelled). EPERM without
// CAP_SYS_ADMIN; ENOSPC past 32 levels.
func (t *Task) Unshare(flags uint64) error {
	if !t.alive() {
		return unix.ESRCH
	}
	if flags&^unshareFlags != 0 {
		return unix.EINVAL
	}
	if flags&unix.CLONE_NEWUSER != 0 {
		flags |= unix.CLONE_THREAD | unix.CLONE_FS
	}
	if flags&unix.CLONE_VM != 0 {
		flags |= unix.CLONE_SIGHAND
	}
	if flags&unix.CLONE_SIGHAND != 0 {
		flags |= unix.CLONE_THREAD
	}
	if flags&unix.CLONE_NEWNS != 0 {
		flags |= unix.CLONE_FS
	}
	if flags&unix.CLONE_THREAD != 0 {
		// The process lock makes the thread list stable to read.
		t.tg.mu.Lock()
		alone := t.tg.threads.len == 1
		t.tg.mu.Unlock()
		if !alone {
			return unix.EINVAL // thread_group_empty
		}
	}
	if flags&unix.CLONE_SIGHAND != 0 && t.sighandShared() {
		return unix.EINVAL // sighand->count > 1
	}
	if flags&unix.CLONE_VM != 0 && t.tg.mmShared() {
		return unix.EINVAL // !current_is_single_threaded
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
	if flags&unix.CLONE_FILES != 0 {
		t.unshareFiles()
	}
	return nil
}

// ChildNamespace returns the pid namespace the task's children are made
// in (pid_ns_for_children): its own, or the one unshare(CLONE_NEWPID)
// made.
func (t *Task) ChildNamespace() *PIDNamespace { return t.nsForChildren.Load() }

// addressSpace is an mm_struct as far as unshare(CLONE_VM) needs one: how
// many processes use it (mm_users, counted per process, since the threads
// of a process always share one). A process whose address space nobody
// else has ever shared has none (ThreadGroup.mm is nil), so that fork
// allocates nothing for it.
type addressSpace struct {
	users atomic.Int32
}

// copyMM is copy_mm for a new process: with CLONE_VM it shares tg's
// address space (a CLONE_VM child, a vfork child), making tg's shared
// object on first use; otherwise the copy is private (nil).
func (tg *ThreadGroup) copyMM(flags uint64) *addressSpace {
	if flags&unix.CLONE_VM == 0 {
		return nil
	}
	for {
		if mm := tg.mm.Load(); mm != nil {
			mm.users.Add(1)
			return mm
		}
		// Another thread of tg may share it first: one object wins.
		mm := &addressSpace{}
		mm.users.Store(1)
		tg.mm.CompareAndSwap(nil, mm)
	}
}

// dropMM lets the process's address space go: exit_mm of its last
// thread, exec_mmap (which gives it a private one), or a clone that
// failed.
func (tg *ThreadGroup) dropMM() {
	if mm := tg.mm.Swap(nil); mm != nil {
		mm.users.Add(-1)
	}
}

// mmShared reports whether another process uses tg's address space
// (current_is_single_threaded's mm_users test; its walk over every
// process is not needed, since the count is per process).
func (tg *ThreadGroup) mmShared() bool {
	mm := tg.mm.Load()
	return mm != nil && mm.users.Load() > 1
}

// sighandShared reports whether a process other than the caller's uses
// its signal handler table: Linux's sighand->count above one, which a
// process made with CLONE_SIGHAND holds from its clone until it is
// released (reaped) or its exec gives it a table of its own. A sharer
// created or released concurrently may be counted or not, as it may be by
// Linux's refcount read.
func (t *Task) sighandShared() bool { return t.tg.sighand.Load().users.Load() > 1 }
