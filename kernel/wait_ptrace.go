package kernel

import (
	"golang.org/x/sys/unix"
)

// What a tracer's wait sees of its tracees (ptrace_do_wait,
// wait_task_stopped with ptrace set, and wait_task_zombie for a traced
// task): every tracee, whatever its wait class and whether or not it
// leads its process (C5); its ptrace stops whether or not WUNTRACED is
// given (C10), reported by waitid as CLD_TRAPPED; the exit of a traced
// thread that is not a leader, which the wait then releases; and the exit
// of a leader whose real parent is another process, which is then handed
// to that parent (C11).

// traceeMatchesLocked reports whether tracee c of the caller's process
// matches the wait's selector: a pid names the thread itself.
//
// Preconditions: t.tg.mu is held; c is on t.tg's tracee list.
//
// +checklocks:t.tg.mu
func (t *Task) traceeMatchesLocked(c *Task, sel waitSelector, opts int) bool {
	switch {
	case opts&unix.WNOTHREAD != 0 && c.tracer.Load() != t:
		return false
	case sel.all:
		return true
	case sel.pgrp:
		return c.tg.pgrp.Load().id == sel.pid
	}
	return c.pid.Load() == sel.pid
}

// readyTraceeLocked returns c if it is a tracee of the caller's process
// that matches the wait and has a stop or an exit to report; nil
// otherwise.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) readyTraceeLocked(c *Task, opts int) *Task {
	if c == nil {
		return nil
	}
	tracer := c.tracer.Load()
	if tracer == nil || tracer.tg != t.tg {
		return nil
	}
	if opts&unix.WNOTHREAD != 0 && tracer != t && !c.isChildLeaderOf(t) {
		return nil // neither the caller's tracee nor its child
	}
	if t.traceeReadyLocked(c, opts) {
		return c
	}
	return nil
}

// firstTrappedChildOfThreadLocked returns the child of thread th, traced
// by a thread of th's own process, with a ptrace stop to report that
// comes first on th's children list: the real parent's scan reports such
// a child as its tracer's would (wait_consider_task's ptrace = 1 for a
// tracee not ptrace_reparented). Only a child of a wait class the wait
// asks for: eligible_child checks the class before wait_consider_task
// looks at the tracing, so a child of the other class is found by the
// tracee scan, after the children.
//
// Preconditions: t.tg.mu is held; th is a thread of t.tg.
//
// +checklocks:t.tg.mu
func (t *Task) firstTrappedChildOfThreadLocked(th *Task, sel waitSelector, opts int) *Task {
	var best *Task
	for c := t.tg.tracees.head; c != nil; c = c.traceLink.next {
		if c.traceReport != 0 && c.isChildLeaderOf(th) && classOK(c.tg, opts) &&
			t.traceeMatchesLocked(c, sel, 0) && (best == nil || c.tg.sibOrd < best.tg.sibOrd) {
			best = c
		}
	}
	return best
}

// isChildLeaderOf reports whether t leads a process whose parent thread is
// th: a tracee that th's children scan reports as well.
func (t *Task) isChildLeaderOf(th *Task) bool {
	return t == t.tg.leader.Load() && t.tg.parent.Load() == th
}

// firstReadyTraceeOfThreadLocked returns the tracee of thread th that
// ptrace_do_wait would report: the latest attached first (the list is
// kept newest first, as __ptrace_link adds at the head).
//
// Preconditions: t.tg.mu is held; th is a thread of t.tg.
//
// +checklocks:t.tg.mu
func (t *Task) firstReadyTraceeOfThreadLocked(th *Task, sel waitSelector, opts int) *Task {
	for c := t.tg.tracees.head; c != nil; c = c.traceLink.next {
		if c.tracer.Load() == th && t.traceeMatchesLocked(c, sel, opts) && t.traceeReadyLocked(c, opts) {
			return c
		}
	}
	return nil
}

// traceeReadyLocked reports whether tracee c has something to report to
// a wait with opts: an exit (with WEXITED), a ptrace stop (whatever the
// options, C10), or its process's continue (with WCONTINUED: there is one
// continued state, and a tracer's wait may consume it).
//
// Preconditions: t.tg.mu is held; c is a tracee of t.tg.
//
// +checklocks:t.tg.mu
func (t *Task) traceeReadyLocked(c *Task, opts int) bool {
	c.assertTracerLocked()
	if t.tracedZombieLocked(c) {
		return opts&unix.WEXITED != 0
	}
	return c.traceReport != 0 || opts&unix.WCONTINUED != 0 && c.tg.continued.Load()
}

// tracedZombieLocked reports whether tracee c is a zombie its tracer's
// wait reaps: one held for the tracer (C11), or the zombie leader of a
// child of the tracer's own process, which waits on that process's ready
// list and which ptrace_do_wait finds too (wait_task_zombie with ptrace
// set).
//
// Preconditions: t.tg.mu is held; c is a tracee of t.tg.
//
// +checklocks:t.tg.mu
func (t *Task) tracedZombieLocked(c *Task) bool {
	c.assertTracerLocked()
	return c.traceZombie ||
		c == c.tg.leader.Load() && c.tg.isChildOf(t.tg) && c.tg.exitState.Load() == procZombie
}

// reportThreadExitLocked builds the result for a traced thread other than
// a leader that has exited: the group's exit status once its process is
// in a group exit, whenever that began (SIGNAL_GROUP_EXIT, which the last
// thread's exit sets too), else its own.
//
// Preconditions: t.tg.mu is held; c is a zombie tracee of t.tg.
//
// +checklocks:t.tg.mu
func (t *Task) reportThreadExitLocked(c *Task) WaitResult {
	status := unix.WaitStatus(c.exitStatusForTracer())
	return WaitResult{Pid: c.pid.Load().nrIn(t.tg.ns), Status: status, Code: exitCode(status), Task: c}
}

// exitStatusForTracer returns a zombie thread's exit status. It is read
// without t.tg.mu, which may not be taken under the tracer's lock: the
// thread's own status was fixed under it before the notification that
// made t a zombie for its tracer, and the group's is published
// atomically.
func (t *Task) exitStatusForTracer() int32 {
	if status, ok := t.tg.groupExitStatus(); ok {
		return status
	}
	return t.exitCode // +checklocksignore: fixed before the zombie was published
}

// anyTraceeLocked reports whether some tracee matches the wait, ready or
// not: a tracer does not get ECHILD while it traces one.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) anyTraceeLocked(sel waitSelector, opts int) bool {
	for c := t.tg.tracees.head; c != nil; c = c.traceLink.next {
		if t.traceeMatchesLocked(c, sel, opts) && t.traceeCountsLocked(c, opts) {
			return true
		}
	}
	return false
}

// traceeCountsLocked reports whether tracee c keeps a wait with opts from
// failing with ECHILD (wait_consider_task with ptrace set): a live one
// does; one with an exit state, whether it waits for the tracer or for a
// real parent in the tracer's process, only for WEXITED, since
// wait_task_zombie returns before notask_error is cleared, or for
// WCONTINUED while it is a leader whose live threads keep it from being
// reported (delay_group_leader).
//
// Preconditions: t.tg.mu is held; c is on its tracee list.
//
// +checklocks:t.tg.mu
func (t *Task) traceeCountsLocked(c *Task, opts int) bool {
	c.assertTracerLocked()
	if c.state.Load() < taskZombie || opts&unix.WEXITED != 0 {
		return true
	}
	delayed := c == c.tg.leader.Load() && !c.traceZombie && c.tg.exitState.Load() == procAlive
	return delayed && opts&unix.WCONTINUED != 0
}
