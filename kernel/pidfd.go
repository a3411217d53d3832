package kernel

import (
	"math/bits"

	"golang.org/x/sys/unix"
)

// The scopes pidfd_send_signal may be given (PIDFD_SIGNAL_*, Linux 6.9).
const (
	PidfdSignalThread       = unix.PIDFD_SIGNAL_THREAD
	PidfdSignalThreadGroup  = unix.PIDFD_SIGNAL_THREAD_GROUP
	PidfdSignalProcessGroup = unix.PIDFD_SIGNAL_PROCESS_GROUP
)

// PidfdOpen is pidfd_open(2) (kernel/pid.c): a pidfd for the task whose
// tid is pid in the caller's namespace, at the lowest free number of the
// caller's table. It reads the pid's task under RCU in Linux, and takes no
// lock here but its table's. flags are PidfdNonblock and PidfdThread.
// Errors: EINVAL for another flag or pid <= 0; ESRCH when no task has the
// number, or the task that had it has been released while the number
// lives on as a process group's or session's id; ENOENT for a thread that
// leads no process without PidfdThread (pidfd_prepare: Linux 6.15 and
// later; earlier kernels said EINVAL); EMFILE when the table is full.
func (t *Task) PidfdOpen(pid int, flags int) (int, error) {
	if !t.alive() {
		return -1, unix.ESRCH
	}
	if uint32(flags)&^(PidfdNonblock|PidfdThread) != 0 || pid <= 0 {
		return -1, unix.EINVAL
	}
	p := t.tg.ns.alloc.Load(pid) // find_get_pid
	if p == nil {
		return -1, unix.ESRCH
	}
	task := p.liveTask()
	switch {
	case task == nil:
		return -1, unix.ESRCH
	case flags&PidfdThread == 0 && task.tg.leader.Load() != task:
		return -1, unix.ENOENT // pid_has_task(pid, PIDTYPE_TGID) fails
	}
	return t.installPidfd(&Pidfd{pid: p, flags: flags})
}

// liveTask is pid_task(pid, PIDTYPE_PID): the task whose tid this is, nil
// before its clone is complete and once release_task has unhashed it.
func (p *PID) liveTask() *Task {
	task := p.publishedTask()
	if task == nil || task.state.Load() == taskDead {
		return nil
	}
	return task
}

// PidfdSendSignal is pidfd_send_signal(2) without a siginfo (kernel/
// signal.c): sig goes, with kill's permission rules (G5), to the process
// of the task the pidfd refers to, or to that thread alone for a pidfd
// opened with PidfdThread. flags may name one scope instead:
// PidfdSignalThread, PidfdSignalThreadGroup or PidfdSignalProcessGroup,
// the process group whose id the pidfd's pid is (kill_pgrp_info, which
// Linux walks under tasklist_lock, as kill(-pgrp)). Errors: EINVAL for an
// unknown flag or more than one scope, for a pidfd of a namespace the
// caller cannot see (access_pidfd_pidns), or for an invalid signal once a
// target is found; EBADF when fd is not open; ESRCH when the task has been
// released (for the process group: when the group is gone); EPERM.
func (t *Task) PidfdSendSignal(fd, sig int, flags int) error {
	if !t.alive() {
		return unix.ESRCH
	}
	const scopes = PidfdSignalThread | PidfdSignalThreadGroup | PidfdSignalProcessGroup
	if uint32(flags)&^scopes != 0 || bits.OnesCount32(uint32(flags)) > 1 {
		return unix.EINVAL
	}
	f := t.Pidfd(fd)
	if f == nil {
		return unix.EBADF
	}
	if !t.tg.ns.isAncestorOf(f.pid.ns) {
		return unix.EINVAL
	}
	thread := f.Thread()
	switch flags {
	case PidfdSignalThread:
		thread = true
	case PidfdSignalThreadGroup:
		thread = false
	case PidfdSignalProcessGroup:
		g := f.pid.pgrp.Load()
		if g == nil {
			return unix.ESRCH
		}
		return t.killPgrp(g, sig)
	}
	p := f.pid.liveTask()
	switch {
	case p == nil:
		return unix.ESRCH
	case thread:
		return t.sendSpecific(p, sig)
	}
	return t.groupSendSig(p, sig, nil)
}

// Close is close(2) for a pidfd. Errors: EBADF when fd is not open.
func (t *Task) Close(fd int) error {
	if !t.alive() {
		return unix.ESRCH
	}
	if !t.files.Load().close(fd) {
		return unix.EBADF
	}
	return nil
}

// Poll is poll(2) of one pidfd for POLLIN with no timeout (pidfd_poll):
// whether it is readable, that is whether the task it refers to has been
// released, or is a zombie that is not a leader whose other threads are
// still there (delay_group_leader). A negative fd is ignored, as poll
// ignores it: not readable. Errors: EBADF (POLLNVAL) when fd is not open.
func (t *Task) Poll(fd int) (readable bool, err error) {
	if !t.alive() {
		return false, unix.ESRCH
	}
	if fd < 0 {
		return false, nil
	}
	f := t.Pidfd(fd)
	if f == nil {
		return false, unix.EBADF
	}
	task := f.pid.liveTask()
	if task == nil {
		return true, nil
	}
	if task.state.Load() < taskZombie {
		return false, nil
	}
	tg := task.tg
	// The process lock guards the thread list.
	tg.mu.Lock()
	delayed := tg.leader.Load() == task && tg.threads.len > 1
	tg.mu.Unlock()
	return !delayed, nil
}
