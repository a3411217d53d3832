package kernel

import (
	"context"

	"golang.org/x/sys/unix"

	"tasklist/plan"
)

// The ends of a ptrace link at exit (kernel/ptrace.c exit_ptrace,
// __ptrace_detach; kernel/exit.c exit_notify, release_task): a tracer's
// exit detaches its tracees, and a traced thread's exit is reported to its
// tracer, which reaps it.

// exitPtrace is exit_ptrace (D9): a tracer's exit detaches every thread
// it traces; tracees with PTRACE_O_EXITKILL are killed, stopped ones run
// again (the signal a signal-delivery stop was for acts unless the
// tracer's wait has reported the stop), and a zombie whose exit waited for the tracer
// is handed to its real parent, or, for a thread other than a leader,
// released (D8). The releases come before the tracer's children are
// reparented, so a namespace init never waits for its own dead tracees
// (seed 001, docs/seeds.md).
//
// Fast path (seed 000): a tracer with no tracees skips it. The count is
// read without a lock: the caller is marked exiting, under its process
// lock, before this runs, and TRACEME links only under that lock to a
// parent not exiting, so every link that will ever be made is visible. A
// plan that models Linux before seed 000 takes its table lock anyway.
//
// The zombies it detaches are released once its section is over, or,
// under a plan with seed 001's change, put on dead for exit_notify to
// release. The exits it starts join q.
func (t *Task) exitPtrace(dead *deadList, q *exitQueue) {
	p := t.k.plan
	if t.nrTracees.Load() == 0 && !p.TakesExitPtrace() {
		return
	}
	// A plan's table lock: exit_ptrace detaches under it.
	p.Lock(plan.ExitPtrace)
	var released deadList
	t.detachTracees(&released, q)
	p.Unlock(plan.ExitPtrace)
	if p.Has(plan.ReleaseTraceesInReaper) {
		dead.add(&released)
		return
	}
	released.release()
}

// detachTracees is exitPtrace's work; the zombies to release go on dead,
// the exits it starts on q.
func (t *Task) detachTracees(dead *deadList, q *exitQueue) {
	if t.nrTracees.Load() == 0 {
		return
	}
	tg := t.tg
	var tracees, zombies []*Task
	var unreported []bool
	// The tracer's lock guards its list and the tracer-side state.
	tg.mu.Lock()
	for c := tg.tracees.head; c != nil; {
		next := c.traceLink.next
		if c.tracer.Load() == t {
			pending := c.traceReport != 0
			if tg.unlinkTraceeLocked(c) {
				zombies = append(zombies, c)
			} else {
				tracees = append(tracees, c)
				unreported = append(unreported, pending)
			}
		}
		c = next
	}
	tg.mu.Unlock()
	var b exitBatch
	for i, c := range tracees {
		ctg := c.tg
		// The tracee's process lock guards its ptrace state.
		ctg.mu.Lock()
		switch {
		case c.jobctl.has(jobctlExitHeld):
			c.releaseExitLocked()
		case c.ptraceOptions&unix.PTRACE_O_EXITKILL != 0:
			ctg.killLocked(ctg.fatalStatus(int(unix.SIGKILL)), &b)
		case c.traceStop != 0:
			// A stop the tracer's wait reported had its signal taken
			// with the report (wait_task_stopped clears exit_code);
			// one it never reported keeps it, and acts now.
			sig := 0
			if unreported[i] && c.jobctl.has(jobctlSignalStop) {
				sig = int(c.traceStop)
			}
			c.resumeTracedLocked(sig, &b)
		default:
			c.nextTraceEventLocked()
		}
		c.ptraceOptions = 0
		ctg.mu.Unlock()
		if c == ctg.leader.Load() && ctg.exitState.Load() == procZombie {
			ctg.reapIfParentIgnores(dead)
		}
	}
	q.push(b)
	for _, c := range zombies {
		c.handOffTraced(dead)
	}
}

// handOffTraced ends a zombie tracee's stay with its tracer, whose wait
// has reported it or who detached it: a leader's exit goes on to its real
// parent (do_notify_parent again; the status is delivered twice, C11),
// and goes on dead if the parent does not want it; another thread goes
// on dead.
func (t *Task) handOffTraced(dead *deadList) {
	if t != t.tg.leader.Load() {
		dead.threads.push(t)
		return
	}
	if t.tg.notifyParent() {
		dead.groups.push(t.tg)
	}
}

// handOffTracedNow is handOffTraced in a table section of its own, as
// wait_task_zombie hands a traced zombie on under tasklist_lock, with the
// release after it.
func (t *Task) handOffTracedNow() { t.k.inSection(plan.Release, t.handOffTraced) }

// reapIfParentIgnores is __ptrace_detach's release of a zombie leader
// whose tracer was a thread of its real parent's process, which waits for
// it no longer if it ignores SIGCHLD (ignoring_children, D8); the leader
// goes on dead.
func (tg *ThreadGroup) reapIfParentIgnores(dead *deadList) {
	// The parent's lock guards the child's place on its lists, and a
	// claim under it is exclusive (C9).
	ptg := tg.lockParentOf()
	act := ptg.sighand.Load().action(int(unix.SIGCHLD))
	reap := tg.exitState.Load() == procZombie && (act.Handler == SigIgn || act.Flags&SaNoCldWait != 0)
	if reap {
		ptg.claimZombieLocked(tg)
	}
	ptg.mu.Unlock()
	if reap {
		dead.groups.push(tg)
	}
}

// untrace takes a released thread off its tracer's list
// (ptrace_release_task).
func (t *Task) untrace() {
	for {
		tracer := t.tracer.Load()
		if tracer == nil {
			return
		}
		// The tracer's lock guards its list.
		tracer.tg.mu.Lock()
		if t.tracer.Load() == tracer {
			tracer.tg.unlinkTraceeLocked(t)
			tracer.tg.mu.Unlock()
			return
		}
		tracer.tg.mu.Unlock()
	}
}

// tracedAway reports whether the process's leader is traced by a thread
// outside its real parent's process (ptrace_reparented): its exit is
// reported to the tracer first (C11).
func (tg *ThreadGroup) tracedAway() bool {
	tracer, parent := tg.leader.Load().tracer.Load(), tg.parent.Load()
	return tracer != nil && parent != nil && tracer.tg != parent.tg
}

// notifyTracer is exit_notify's do_notify_parent to the tracer of thread
// t, a zombie: a leader whose tracer is not its real parent, once the
// process is empty, or any other traced thread. The zombie waits for the
// tracer's wait. It reports false once the tracer has it; true if t is
// no longer traced, and the caller must carry on as for an untraced
// thread.
func (t *Task) notifyTracer() bool {
	tracer := t.tracer.Load()
	if tracer == nil {
		return true
	}
	ttg := tracer.tg
	// The tracer's lock guards the tracer-side state and its waiters.
	ttg.mu.Lock()
	defer ttg.mu.Unlock()
	if t.tracer.Load() != tracer {
		return true
	}
	t.traceZombie = true
	t.traceReport = 0
	// A traced thread's exit signal is SIGCHLD; the tracer's disposition
	// does not reap it (do_notify_parent's autoreap is for untraced
	// tasks).
	ttg.signalTracerLocked(tracer, t)
	return false
}

// holdExitForTracer is do_exit's ptrace_event(PTRACE_EVENT_EXIT): a
// thread whose tracer asked for PTRACE_O_TRACEEXIT stops before it exits,
// whatever ends it, and its exit goes on (exitNotify, on a goroutine of
// its own) once the tracer resumes it, detaches it or exits, or its
// process is killed again. It reports whether the exit is held. Any other
// exiting tracee has left the ptrace stop it may have been in, killed out
// of it: a report of that stop the tracer has not collected is gone, as
// task_stopped_code reports only a task still in TASK_TRACED.
func (t *Task) holdExitForTracer() bool {
	// From here the thread counts as alive only while held at the stop.
	defer t.flags.set(flagExitEventDue, false)
	tracer := t.tracer.Load()
	if tracer == nil {
		return false
	}
	lockPair(tracer.tg, t.tg) // the stop and the tracer's report
	defer unlockPair(tracer.tg, t.tg)
	if t.tracer.Load() != tracer {
		return false
	}
	t.requeueStopSignalLocked()
	if t.ptraceOptions&unix.PTRACE_O_TRACEEXIT == 0 {
		t.traceReport = 0
		return false
	}
	t.jobctl.clear(jobctlSignalStopMask)
	t.jobctl.set(jobctlExitHeld)
	t.traceStop = int32(unix.SIGTRAP) | unix.PTRACE_EVENT_EXIT<<8
	tracer.tg.reportTraceStopLocked(t, t.traceStop)
	return true
}

// requeueStopSignalLocked is ptrace_signal's requeue for a thread an exec
// kills out of a signal-delivery stop: the signal, unless the tracer's
// wait collected it (which zeroes exit_code), goes back to the queue it
// came from since a fatal signal is pending. One from the thread's own
// queue dies with it; one from the process's waits for the exec'ing
// thread (execRequeued). A group exit drops it (prepare_signal).
//
// Preconditions: t.tracer.tg.mu and t.tg.mu are held; t is exiting.
//
// +checklocks:t.tg.mu
func (t *Task) requeueStopSignalLocked() {
	t.assertTracerLocked()
	tg := t.tg
	if tg.execTask != nil && !tg.groupExiting && t.traceStop != 0 && t.jobctl.has(jobctlSignalStop) &&
		t.jobctl.has(jobctlSignalShared) && t.traceReport != 0 {
		tg.execRequeued |= sigBit(int(t.traceStop))
	}
}

// releaseExitLocked lets a thread held at PTRACE_EVENT_EXIT finish its
// exit: its tracer resumed or detached it, or a SIGKILL that starts a
// group exit or an exec's zap_other_threads woke it (signal_wake_up with
// fatal set ends any ptrace stop).
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) releaseExitLocked() {
	if t.jobctl.take(jobctlExitHeld) {
		t.traceStop = 0
		t.tg.wakeStoppedLocked()
		t.tg.k.goAsync(t.finishHeldExit)
	}
}

// finishHeldExit is the rest of do_exit for a thread released from
// PTRACE_EVENT_EXIT: the stop is over, so a report of it its tracer has
// not collected is gone, as in holdExitForTracer.
func (t *Task) finishHeldExit() {
	if tracer := t.tracer.Load(); tracer != nil {
		// The tracer's lock guards its view of the tracee.
		tracer.tg.mu.Lock()
		if t.tracer.Load() == tracer {
			t.traceReport = 0
		}
		tracer.tg.mu.Unlock()
	}
	var q exitQueue
	t.exitNotify(&q)
	q.drain(t.tg.k)
}

// waitExitRelease sleeps while the task's exit is held at
// PTRACE_EVENT_EXIT, which only its tracer ends (a kill cannot: the task
// is dying already), or until ctx is done. It reports whether the exit
// was held.
func (t *Task) waitExitRelease(ctx context.Context) bool {
	tg := t.tg
	held := false
	for {
		// The process lock guards the hold and the stop's channel.
		tg.mu.Lock()
		if !t.jobctl.has(jobctlExitHeld) {
			tg.mu.Unlock()
			return held
		}
		held = true
		resume := t.stopWaitLocked()
		tg.mu.Unlock()
		t.sleepingOn.Store(&sleep{wake: resume})
		select {
		case <-resume:
		case <-ctx.Done():
		}
		t.sleepingOn.Store(nil)
		if ctx.Err() != nil {
			return true
		}
	}
}
