package refmodel

import (
	"math"
	"slices"

	"golang.org/x/sys/unix"
)

// siginfo si_code values for SIGCHLD: the model's own copy of abi.CLD_*,
// on purpose (see the constants in model.go).
const (
	cldExited    = 1 // CLD_EXITED
	cldKilled    = 2 // CLD_KILLED
	cldDumped    = 3 // CLD_DUMPED
	cldStopped   = 5 // CLD_STOPPED
	cldContinued = 6 // CLD_CONTINUED
)

// WaitResult is what a wait reports: the child's pid as the caller sees
// it (0 when WNOHANG found nothing ready), the wait4 status word, and
// waitid's si_code.
type WaitResult struct {
	Pid    int
	Status int
	Code   int
}

// Pid types of a wait selector.
const (
	selAll = iota
	selPID
	selPGID
)

type selector struct {
	kind int
	pid  *pid // nil when the number names nothing
}

// Wait4 is wait4(2) without rusage (C1, C2, C4–C9).
func (m *Model) Wait4(tid, upid, options int) (WaitResult, error) {
	t := m.task(tid)
	if t == nil || t.state != running {
		return WaitResult{}, unix.ESRCH
	}
	const valid = unix.WNOHANG | unix.WUNTRACED | unix.WCONTINUED | unix.WNOTHREAD | unix.WCLONE | unix.WALL
	if options&^valid != 0 {
		return WaitResult{}, unix.EINVAL
	}
	if upid == math.MinInt32 {
		return WaitResult{}, unix.ESRCH
	}
	ns := t.proc.ns
	var sel selector
	switch {
	case upid == -1:
		sel.kind = selAll
	case upid < 0:
		sel = selector{selPGID, ns.pids[-upid]}
	case upid == 0:
		sel = selector{selPGID, t.proc.pgrp}
	default:
		sel = selector{selPID, ns.pids[upid]}
	}
	return m.doWait(t, sel, options|unix.WEXITED)
}

// Waitid is waitid(2) (C3) for P_ALL, P_PID and P_PGID.
func (m *Model) Waitid(tid, idtype, id, options int) (WaitResult, error) {
	t := m.task(tid)
	if t == nil || t.state != running {
		return WaitResult{}, unix.ESRCH
	}
	const valid = unix.WNOHANG | unix.WNOWAIT | unix.WEXITED | unix.WSTOPPED | unix.WCONTINUED |
		unix.WNOTHREAD | unix.WCLONE | unix.WALL
	if options&^valid != 0 || options&(unix.WEXITED|unix.WSTOPPED|unix.WCONTINUED) == 0 {
		return WaitResult{}, unix.EINVAL
	}
	ns := t.proc.ns
	var sel selector
	switch idtype {
	case unix.P_ALL:
		sel.kind = selAll
	case unix.P_PID:
		if id <= 0 {
			return WaitResult{}, unix.EINVAL
		}
		sel = selector{selPID, ns.pids[id]}
	case unix.P_PGID:
		if id < 0 {
			return WaitResult{}, unix.EINVAL
		}
		sel = selector{selPGID, t.proc.pgrp}
		if id != 0 {
			sel.pid = ns.pids[id]
		}
	default:
		return WaitResult{}, unix.EINVAL
	}
	return m.doWait(t, sel, options)
}

// doWait is do_wait. It scans, for the caller and then each next thread
// of its group in thread-list order (only the caller with __WNOTHREAD),
// that thread's children and then its tracees (do_wait_thread,
// ptrace_do_wait), each list in order; the first child or tracee with
// something to report is reported (wait_consider_task). notask_error
// becomes 0 when some eligible child may still report something.
func (m *Model) doWait(t *task, sel selector, opts int) (WaitResult, error) {
	if sel.kind != selAll {
		// pid_has_task: a selector naming nothing fails at once (C4).
		if sel.pid == nil || (sel.kind == selPID && sel.pid.task == nil) ||
			(sel.kind == selPGID && sel.pid.pgrps == 0) {
			return WaitResult{}, unix.ECHILD
		}
	}
	notask := true
	var found *cand
	consider := func(c *process, ptrace bool) {
		if found != nil {
			return
		}
		if cd := m.considerChild(c, ptrace, sel, opts, &notask); cd != nil {
			found = cd
		}
	}
	mine := func(p *task) bool { return p == t || (opts&unix.WNOTHREAD == 0 && p != nil && p.proc == t.proc) }
	if sel.kind == selPID {
		// do_wait_pid: the pid's process if the caller's thread group is
		// its real parent, then the pid's task if it traces it.
		if c := sel.pid.task; c != nil && c.proc.leader == c {
			if mine(c.proc.parent) {
				consider(c.proc, false)
			}
			if mine(c.proc.tracer) {
				consider(c.proc, true)
			}
		}
	} else {
		threads := t.proc.threads
		i := slices.Index(threads, t)
		for k := range threads {
			th := threads[(i+k)%len(threads)]
			for _, c := range th.children {
				consider(c, false)
			}
			for _, c := range m.tracees(th) {
				consider(c, true)
			}
			if opts&unix.WNOTHREAD != 0 {
				break
			}
		}
	}
	if found != nil {
		return m.report(t, found, opts), nil
	}
	if notask {
		return WaitResult{}, unix.ECHILD
	}
	if opts&unix.WNOHANG != 0 {
		return WaitResult{}, nil
	}
	return WaitResult{}, ErrWouldBlock
}

// cand is what wait_consider_task found to report.
type cand struct {
	c    *process
	code int // 0 for a zombie, else CLD_STOPPED, CLD_TRAPPED or CLD_CONTINUED
}

// considerChild is wait_consider_task for process c, found on a children
// list (ptrace false) or on a ptraced list.
func (m *Model) considerChild(c *process, ptrace bool, sel selector, opts int, notask *bool) *cand {
	if sel.kind == selPGID && c.pgrp != sel.pid {
		return nil
	}
	// eligible_child: a tracer sees every tracee; otherwise __WALL takes
	// every child, __WCLONE exactly those whose exit signal is not
	// SIGCHLD, the default the others.
	if !ptrace && opts&unix.WALL == 0 && (c.exitSignal != int(unix.SIGCHLD)) != (opts&unix.WCLONE != 0) {
		return nil
	}
	// A child traced by its real parent's own thread group is waited for
	// as a tracee: its ptrace stops show, its group stops do not.
	if !ptrace && c.tracer != nil && !reparented(c) {
		ptrace = true
	}
	if c.leader.state == zombie && len(c.threads) == 1 {
		if ptrace || c.tracer == nil {
			// wait_task_zombie: only WEXITED reports it; otherwise it
			// has nothing left to report and notask_error stays.
			if opts&unix.WEXITED != 0 {
				return &cand{c, 0}
			}
			return nil
		}
		// A zombie traced from another process is its tracer's to
		// report first (C11): eligible, never ready here.
		m.hits["zombie tracee hidden from the real parent"]++
		*notask = false
		return nil
	}
	// Alive, or a zombie leader with live threads: it will report,
	// and may have a stop or a continue to report now.
	*notask = false
	if ptrace {
		// wait_task_stopped with ptrace: a ptrace stop not yet
		// reported, whatever WUNTRACED says (C10).
		if c.ptStop != ptRunning && c.exitCode != 0 {
			return &cand{c, cldTrapped}
		}
		if opts&unix.WCONTINUED != 0 && c.continued {
			return &cand{c, cldContinued}
		}
		return nil
	}
	if code := jobEvent(c, opts); code != 0 {
		return &cand{c, code}
	}
	return nil
}

// report reports what considerChild found.
func (m *Model) report(t *task, cd *cand, opts int) WaitResult {
	c := cd.c
	switch cd.code {
	case 0:
		m.hits["wait reports"]++
		res := m.reportZombie(t, c, opts)
		m.settle()
		return res
	case cldTrapped:
		m.hits["wait reports a ptrace stop"]++
		res := WaitResult{Pid: c.leader.pid.nrIn(t.proc.ns), Code: cldTrapped, Status: c.exitCode<<8 | 0x7f}
		if opts&unix.WNOWAIT == 0 {
			c.exitCode = 0
		}
		return res
	}
	m.hits["wait reports a stop or continue"]++
	return reportJob(t, c, cd.code, opts)
}

// reportZombie is wait_task_zombie: report the status and, unless
// WNOWAIT, reap the child.
func (m *Model) reportZombie(t *task, c *process, opts int) WaitResult {
	st := c.exitStatus
	code := cldExited
	if sig := st & 0x7f; sig != 0 && sig != 0x7f {
		code = cldKilled
		if st&0x80 != 0 {
			code = cldDumped
		}
	}
	res := WaitResult{Pid: c.leader.pid.nrIn(t.proc.ns), Status: st, Code: code}
	if opts&unix.WNOWAIT != 0 {
		return res
	}
	if reparented(c) {
		// EXIT_TRACE: the tracer has had the exit; it is unlinked and
		// notified to the real parent, which gets it too unless it
		// ignores SIGCHLD (C11).
		m.hits["zombie tracee handed to the real parent"]++
		m.unlink(c)
		if !m.notifyParent(c) {
			return res
		}
	}
	m.release(c.leader)
	return res
}
