package refmodel

import (
	"errors"

	"golang.org/x/sys/unix"
)

// ErrNotModelled is returned, with nothing changed, for a ptrace call the
// model does not follow: requests other than TRACEME, ATTACH and DETACH, a
// DETACH that passes a signal, and an ATTACH of a process that is not
// plainly running (stopped, stopping, exiting or with signals pending),
// where the SIGSTOP would meet job control.
var ErrNotModelled = errors.New("refmodel: ptrace case not modelled")

// Ptrace is ptrace(2) (kernel/ptrace.c) for PTRACE_TRACEME, ATTACH and
// DETACH. A whole process is traced; its tracer is a thread. The model
// takes the interleaving in which an attached tracee takes its SIGSTOP
// into a signal-delivery stop right after the call.
func (m *Model) Ptrace(tid, request, nr int, addr, data uint64) error {
	t := m.task(tid)
	if t == nil || t.state != running {
		return unix.ESRCH
	}
	pr := t.proc
	if request == unix.PTRACE_TRACEME {
		// ptrace_traceme (D1): no access check. The root init's real
		// parent on Linux is the idle task; it has none here, and the
		// call is refused.
		switch {
		case pr.tracer != nil, pr.parent == nil:
			return unix.EPERM
		case pr.parent.state != running:
			return nil // the parent is exiting: no link, and no error
		}
		m.hits["ptrace traceme"]++
		pr.tracer = pr.parent
		return nil
	}
	if request != unix.PTRACE_ATTACH && request != unix.PTRACE_DETACH {
		return ErrNotModelled
	}
	target := pr.ns.lookup(nr)
	if target == nil {
		return unix.ESRCH
	}
	tp := target.proc
	if request == unix.PTRACE_DETACH {
		// ptrace_check_attach, then ptrace_detach (D6, D7).
		if tp.tracer != t || tp.traceStop == 0 {
			return unix.ESRCH
		}
		if data > nSig {
			return unix.EIO
		}
		if data != 0 {
			return ErrNotModelled
		}
		m.hits["ptrace detach"]++
		m.ptraceDetach(tp)
		return nil
	}
	// ptrace_attach (D3): same_thread_group and the access check come
	// first, then, under tasklist_lock, exit_state and an existing tracer.
	if tp == pr || !m.ptraceMayAccess(t, target) || target.state == zombie || tp.tracer != nil {
		return unix.EPERM
	}
	if !plainlyRunning(tp) {
		return ErrNotModelled
	}
	m.hits["ptrace attach"]++
	tp.tracer = t
	tp.traceStop = int(unix.SIGSTOP)
	return nil
}

// plainlyRunning reports whether every thread of pr runs and no signal or
// stop is pending for it.
func plainlyRunning(pr *process) bool {
	for _, o := range pr.threads {
		if o.state != running {
			return false
		}
	}
	return !pr.stopped && pr.stopPending == 0 && pr.pendingSigs == 0 && !pr.groupExit && pr.zapping == nil
}

// ptraceMayAccess is __ptrace_may_access with PTRACE_MODE_ATTACH_REALCREDS
// (D4): the caller's real uid must equal the target's real, effective and
// saved uids (every gid in the model is 0, so the gid half always holds),
// or the caller needs CAP_SYS_PTRACE; a non-dumpable target needs
// CAP_SYS_PTRACE whatever the ids.
func (m *Model) ptraceMayAccess(t, target *task) bool {
	if t.proc == target.proc {
		return true
	}
	c, tc := t.creds, target.creds
	capable := c.hasCap(unix.CAP_SYS_PTRACE)
	if !(c.UID == tc.EUID && c.UID == tc.SUID && c.UID == tc.UID) && !capable {
		return false
	}
	return capable || !target.proc.nonDumpable
}

// ptraceDetach is __ptrace_detach for a tracee that is not a zombie
// (D8): real_parent becomes the parent again and the tracee runs on. A
// signal-delivery stop's signal is dropped: ptrace_detach sets exit_code
// to the data (0), and exit_ptrace's detach leaves the tracee running too
// (host: a SIGSTOP-attached tracee whose tracer exits is in state S, not T).
// The model never lets a tracee reach its exit while traced, so the zombie
// cases of D8 do not arise.
func (m *Model) ptraceDetach(tp *process) {
	tp.tracer = nil
	tp.traceStop = 0
}

// exitPtrace is exit_ptrace (D9), run at the start of
// forget_original_parent: father's tracees are all detached before its
// children are handed on. No tracee has PTRACE_O_EXITKILL (SEIZE is not
// modelled).
func (m *Model) exitPtrace(father *task) {
	for _, tid := range m.Tasks() {
		if pr := m.tasks[tid].proc; pr.tracer == father && pr.leader.pid.nrs[0] == tid {
			m.hits["exit_ptrace"]++
			m.ptraceDetach(pr)
		}
	}
}

// Tracer returns the root tid of the thread that traces tid's process, or
// 0.
func (m *Model) Tracer(tid int) int {
	if t := m.tasks[tid]; t != nil && t.proc.tracer != nil {
		return t.proc.tracer.pid.nrs[0]
	}
	return 0
}
