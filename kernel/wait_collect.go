package kernel

import (
	"golang.org/x/sys/unix"
)

// A wait collects what it reports: findReadyLocked picks the event that
// do_wait would report first, and one collector per kind of event
// (wait_task_zombie, wait_task_stopped, wait_task_continued, and a
// tracee's ptrace stop or exit) checks it, consumes it unless WNOWAIT and
// says what must run once the locks are dropped.

// waitOutcome is how a collector fared.
type waitOutcome int

const (
	waitNone     waitOutcome = iota // nothing to report
	waitFound                       // a report was collected
	waitVanished                    // the event went to another waiter meanwhile: scan again
)

// collected is a report, with what must run once the locks are dropped.
type collected struct {
	res WaitResult
	// release is a zombie child claimed by the wait: release_task.
	release *ThreadGroup
	// handOff is a traced thread whose exit its tracer claimed: it goes
	// on to its real parent or is released (handOffTraced).
	handOff *Task
}

// finish runs what the collector left for after the locks.
func (ev *collected) finish() {
	switch {
	case ev.handOff != nil:
		ev.handOff.handOffTracedNow()
	case ev.release != nil:
		ev.release.release()
	}
}

// collectLocked collects the event do_wait would report first.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) collectLocked(sel waitSelector, opts int) (collected, waitOutcome) {
	c, exited, tracee := t.findReadyLocked(sel, opts)
	switch {
	case tracee != nil:
		return t.collectTraceeLocked(tracee, opts)
	case c != nil && exited:
		return t.collectZombieLocked(c, opts), waitFound
	case c != nil:
		return t.collectJobLocked(c, opts)
	}
	return collected{}, waitNone
}

// collectZombieLocked is wait_task_zombie for a zombie child: the child is
// claimed (EXIT_DEAD) and released after the locks, unless WNOWAIT.
//
// Preconditions: t.tg.mu is held; c is a zombie child of t.tg.
//
// +checklocks:t.tg.mu
func (t *Task) collectZombieLocked(c *ThreadGroup, opts int) collected {
	ev := collected{res: t.reportLocked(c)}
	if opts&unix.WNOWAIT == 0 {
		t.tg.claimZombieLocked(c)
		ev.release = c
	}
	return ev
}

// collectJobLocked collects child c's group stop or, failing that, its
// continue; the event may have gone to another waiter since
// findReadyLocked saw it.
//
// Preconditions: t.tg.mu is held; c is a queued child of t.tg.
//
// +checklocks:t.tg.mu
func (t *Task) collectJobLocked(c *ThreadGroup, opts int) (collected, waitOutcome) {
	// The child's lock, after its parent's, guards its job-control state.
	c.mu.Lock()
	defer c.mu.Unlock()
	res, ok := t.collectStopLocked(c, opts)
	if !ok {
		res, ok = t.collectContinuedLocked(c, opts)
	}
	if !ok {
		return collected{}, waitVanished
	}
	if !c.hasJobEventLocked() {
		t.tg.unmarkJobLocked(c)
	}
	return collected{res: res}, waitFound
}

// collectStopLocked is wait_task_stopped for a child's group stop: it
// reports the stop signal and consumes it unless WNOWAIT.
//
// Preconditions: t.tg.mu and c.mu are held; c is a child of t.tg.
//
// +checklocks:t.tg.mu
// +checklocks:c.mu
func (t *Task) collectStopLocked(c *ThreadGroup, opts int) (WaitResult, bool) {
	if opts&unix.WUNTRACED == 0 || !c.stopReportableTo(t.tg) {
		return WaitResult{}, false
	}
	res := t.jobResult(c, unix.WaitStatus(c.stopCode<<8|0x7f), CLDStopped)
	if opts&unix.WNOWAIT == 0 {
		c.stopCode = 0
	}
	return res, true
}

// collectContinuedLocked is wait_task_continued: it reports a continue
// and consumes it unless WNOWAIT; a continue another waiter consumed
// first is not reported.
//
// Preconditions: t.tg.mu and c.mu are held; c is a child of t.tg.
//
// +checklocks:t.tg.mu
// +checklocks:c.mu
func (t *Task) collectContinuedLocked(c *ThreadGroup, opts int) (WaitResult, bool) {
	if opts&unix.WCONTINUED == 0 || !c.continued.Load() {
		return WaitResult{}, false
	}
	if opts&unix.WNOWAIT == 0 && !c.continued.CompareAndSwap(true, false) {
		return WaitResult{}, false
	}
	return t.jobResult(c, 0xffff, CLDContinued), true
}

// jobResult is the report of child c's stop or continue.
func (t *Task) jobResult(c *ThreadGroup, status unix.WaitStatus, code int) WaitResult {
	leader := c.leader.Load()
	return WaitResult{Pid: leader.pid.Load().nrIn(t.tg.ns), Task: leader, Status: status, Code: code}
}

// collectTraceeLocked collects tracee c's exit, ptrace stop or continue,
// consuming it unless WNOWAIT. A tracee whose exit it claims is unlinked
// and handed on after the locks (handOffTraced), or, when the tracer's
// process has become its real parent, claimed as a zombie child and
// released (wait_task_zombie's EXIT_DEAD for a tracee no longer
// ptrace_reparented). A continue that went to another waiter meanwhile
// has vanished.
//
// Preconditions: t.tg.mu is held; c is a ready tracee of t.tg.
//
// +checklocks:t.tg.mu
func (t *Task) collectTraceeLocked(c *Task, opts int) (collected, waitOutcome) {
	c.assertTracerLocked()
	tg := t.tg
	consume := opts&unix.WNOWAIT == 0
	pid := c.pid.Load().nrIn(tg.ns)
	switch {
	case t.tracedZombieLocked(c):
		ev := collected{}
		if c == c.tg.leader.Load() {
			ev.res = t.reportLocked(c.tg)
		} else {
			ev.res = t.reportThreadExitLocked(c)
		}
		if !consume {
			return ev, waitFound
		}
		tg.unlinkTraceeLocked(c)
		if c == c.tg.leader.Load() && c.tg.isChildOf(tg) {
			tg.claimZombieLocked(c.tg)
			ev.release = c.tg
		} else {
			ev.handOff = c
		}
		return ev, waitFound
	case c.traceReport != 0:
		res := WaitResult{Pid: pid, Task: c, Status: unix.WaitStatus(c.traceReport<<8 | 0x7f), Code: CLDTrapped}
		if consume {
			c.traceReport = 0
		}
		return collected{res: res}, waitFound
	}
	if consume && !c.tg.continued.CompareAndSwap(true, false) {
		return collected{}, waitVanished
	}
	return collected{res: WaitResult{Pid: pid, Task: c, Status: 0xffff, Code: CLDContinued}}, waitFound
}
