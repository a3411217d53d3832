package refmodel

import (
	"math"
	"slices"

	"golang.org/x/sys/unix"
)

// siginfo si_code values for SIGCHLD.
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

// doWait is do_wait. It scans the children of the caller, then of each
// next thread of its group in thread-list order (only the caller's with
// __WNOTHREAD), each list in order; the first zombie it can reap is
// reported. notask_error becomes 0 when some eligible child may still
// report something.
func (m *Model) doWait(t *task, sel selector, opts int) (WaitResult, error) {
	if sel.kind != selAll {
		// pid_has_task: a selector naming nothing fails at once (C4).
		if sel.pid == nil || (sel.kind == selPID && sel.pid.task == nil) ||
			(sel.kind == selPGID && sel.pid.pgrps == 0) {
			return WaitResult{}, unix.ECHILD
		}
	}
	notask := true
	type cand struct {
		c    *process
		code int // 0 for a zombie, else CLD_STOPPED or CLD_CONTINUED
	}
	var cands []cand
	consider := func(c *process) {
		if sel.kind == selPGID && c.pgrp != sel.pid {
			return
		}
		// eligible_child: __WALL takes every child, __WCLONE exactly those
		// whose exit signal is not SIGCHLD, the default the others.
		if opts&unix.WALL == 0 && (c.exitSignal != int(unix.SIGCHLD)) != (opts&unix.WCLONE != 0) {
			return
		}
		if c.leader.state == zombie && len(c.threads) == 1 {
			// wait_task_zombie: only WEXITED reports it; otherwise it
			// has nothing left to report and notask_error stays.
			if opts&unix.WEXITED != 0 {
				cands = append(cands, cand{c, 0})
			}
			return
		}
		// Alive, or a zombie leader with live threads: it will report,
		// and may have a stop or a continue to report now.
		notask = false
		if code := jobEvent(c, opts); code != 0 {
			cands = append(cands, cand{c, code})
		}
	}
	if sel.kind == selPID {
		// do_wait_pid: the pid must be a process's, and its parent the
		// caller (or, without __WNOTHREAD, a thread of its group).
		if c := sel.pid.task; c != nil && c.proc.leader == c {
			if p := c.proc.parent; p == t || (opts&unix.WNOTHREAD == 0 && p != nil && p.proc == t.proc) {
				consider(c.proc)
			}
		}
	} else {
		threads := t.proc.threads
		i := slices.Index(threads, t)
		for k := range threads {
			th := threads[(i+k)%len(threads)]
			for _, c := range th.children {
				consider(c)
			}
			if opts&unix.WNOTHREAD != 0 {
				break
			}
		}
	}
	if len(cands) > 0 {
		if c := cands[0]; c.code != 0 {
			m.hits["wait reports a stop or continue"]++
			return reportJob(t, c.c, c.code, opts), nil
		}
		m.hits["wait reports"]++
		return m.reportZombie(t, cands[0].c, opts), nil
	}
	if notask {
		return WaitResult{}, unix.ECHILD
	}
	if opts&unix.WNOHANG != 0 {
		return WaitResult{}, nil
	}
	return WaitResult{}, ErrWouldBlock
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
	if opts&unix.WNOWAIT == 0 {
		m.release(c.leader)
	}
	return res
}
