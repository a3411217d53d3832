package kernel

import (
	"golang.org/x/sys/unix"
)

// What a tracer's wait sees of its tracees (ptrace_do_wait,
// wait_task_stopped with ptrace set, and the EXIT_TRACE case of
// wait_task_zombie): every tracee, whatever its wait class (C5); its
// ptrace stops whether or not WUNTRACED is given (C10), reported by
// waitid as CLD_TRAPPED; and the exit of a tracee whose real parent is
// another process, which is then handed to that parent (C11).

// traceeMatchesLocked reports whether tracee c of the caller's process
// matches the wait's selector.
//
// Preconditions: t.tg.mu is held; c is on t.tg's tracee list.
//
// +checklocks:t.tg.mu
func (t *Task) traceeMatchesLocked(c *ThreadGroup, sel waitSelector, opts int) bool {
	if opts&unix.WNOTHREAD != 0 && c.tracer.Load() != t {
		return false
	}
	return sel.matches(c)
}

// waitTraceeLocked reports the first tracee with a stop or an exit to
// report, and consumes it unless WNOWAIT. A tracee whose exit it claims
// is unlinked and returned in handOff: the caller hands it to its real
// parent once the lock is dropped.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) waitTraceeLocked(sel waitSelector, opts int) (res WaitResult, handOff *ThreadGroup, ok bool) {
	tg := t.tg
	for c := tg.tracees.head; c != nil; c = c.traceLink.next {
		if !t.traceeMatchesLocked(c, sel, opts) {
			continue
		}
		consume := opts&unix.WNOWAIT == 0
		switch {
		case c.traceZombie && opts&unix.WEXITED != 0:
			res = t.reportLocked(c)
			if consume {
				tg.unlinkTraceeLocked(c)
				handOff = c
			}
			return res, handOff, true
		case c.traceReport != 0:
			leader := c.leader.Load()
			res = WaitResult{Pid: leader.pid.Load().nrIn(tg.ns), Task: leader,
				Status: unix.WaitStatus(c.traceReport<<8 | 0x7f), Code: CLDTrapped}
			if consume {
				c.traceReport = 0
			}
			return res, nil, true
		}
	}
	return WaitResult{}, nil, false
}

// anyTraceeLocked reports whether some tracee matches the wait, ready or
// not: a tracer does not get ECHILD while it traces one.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) anyTraceeLocked(sel waitSelector, opts int) bool {
	for c := t.tg.tracees.head; c != nil; c = c.traceLink.next {
		if t.traceeMatchesLocked(c, sel, opts) {
			return true
		}
	}
	return false
}

// handOffTracee gives a tracee's exit, which its tracer's wait has
// reported, to its real parent: do_notify_parent again, and the release
// if the parent does not want it (the status is delivered twice, C11).
func handOffTracee(c *ThreadGroup) {
	if c.notifyParent() {
		c.release()
	}
}

// unlinkTraceeLocked is unlinkTracerLocked for a tracee of one of tg's
// threads.
//
// Preconditions: tg.mu is held; c is on tg's tracee list.
//
// +checklocks:tg.mu
// +checklocksignore: c's tracer is a thread of tg, which checklocks cannot
// see through the tracer pointer.
func (tg *ThreadGroup) unlinkTraceeLocked(c *ThreadGroup) bool {
	return unlinkTracerLocked(c.tracer.Load(), c)
}
