package kernel

import (
	"golang.org/x/sys/unix"
)

// Tracing across clone and vfork (kernel/fork.c kernel_clone,
// ptrace_init_task, wait_for_vfork_done): a tracee whose tracer asked for
// PTRACE_O_TRACEFORK, TRACEVFORK or TRACECLONE stops with that event after
// a clone of the kind, and its new child is traced by the same tracer from
// its start; CLONE_PTRACE does the latter without the event.

// cloneTraceEvent is kernel_clone's choice of the ptrace event a clone
// raises, and the option that asks for it.
func cloneTraceEvent(flags uint64, exitSignal int) (event int, option uint64) {
	switch {
	case flags&unix.CLONE_VFORK != 0:
		return unix.PTRACE_EVENT_VFORK, unix.PTRACE_O_TRACEVFORK
	case exitSignal != int(unix.SIGCHLD):
		return unix.PTRACE_EVENT_CLONE, unix.PTRACE_O_TRACECLONE
	}
	return unix.PTRACE_EVENT_FORK, unix.PTRACE_O_TRACEFORK
}

// inheritTraceLocked is ptrace_init_task: a child cloned with
// CLONE_PTRACE, or with the event its creator's tracer asked for, is
// traced by that tracer with the creator's options, and will stop before
// it runs. The tracer field, set before the child is published, already
// refuses other tracers; the link to the tracer's list follows the
// publication (finishInheritedTrace), as it needs the tracer's lock. It
// returns the tracer, or nil.
//
// Preconditions: t.tg.mu is held; child is not yet published.
//
// +checklocks:t.tg.mu
// +checklocksignore: child is reachable only by the caller until it is
// published.
func (t *Task) inheritTraceLocked(child *Task, flags uint64, option uint64) *Task {
	tracer := t.tracer.Load()
	if tracer == nil || flags&unix.CLONE_UNTRACED != 0 && flags&unix.CLONE_PTRACE == 0 ||
		flags&unix.CLONE_PTRACE == 0 && t.ptraceOptions&option == 0 {
		return nil
	}
	child.tracer.Store(tracer)
	child.tg.nrTraced.Add(1)
	child.jobctl.set(t.jobctl & jobctlSeized)
	child.ptraceOptions = t.ptraceOptions
	return tracer
}

// finishInheritedTrace puts a child that inherited its creator's tracer
// on the tracer's list, with the stop it starts with: SIGSTOP, or a
// PTRACE_EVENT_STOP trap if seized. A tracer that began exiting meanwhile
// traces it no longer, as TRACEME declines an exiting parent (D10): the
// tracer's exit_ptrace, which runs after that mark, never saw the child.
func (t *Task) finishInheritedTrace(tracer *Task) {
	if tracer == nil {
		return
	}
	lockPair(tracer.tg, t.tg) // the two ends of the link
	if tracer.state.Load() != taskRunning {
		t.tracer.Store(nil)
		t.tg.nrTraced.Add(-1)
		t.jobctl.clear(jobctlSeized)
		t.ptraceOptions = 0
		zombie := t.traceZombie
		t.traceZombie = false
		unlockPair(tracer.tg, t.tg)
		if zombie {
			t.handOffTracedNow() // its exit waited for a tracer that is gone
		}
		return
	}
	tracer.tg.tracees.pushFront(t, traceLinkOf)
	tracer.nrTracees.Add(1)
	if t.jobctl.has(jobctlSeized) {
		t.jobctl.set(jobctlTrapStop)
	} else {
		t.tracePending |= sigBit(int(unix.SIGSTOP))
	}
	t.takeTraceStopLocked(tracer)
	unlockPair(tracer.tg, t.tg)
}

// raiseTraceEvent is ptrace_event: a tracee whose tracer asked for the
// event with option stops for it before its call returns (the stop is
// owed; the caller's return to user space waits for it, WaitRunnable).
func (t *Task) raiseTraceEvent(event int, option uint64) {
	if t.tracer.Load() == nil {
		// Untraced, the common case: no lock. An attach that races the
		// call may or may not see it stop, as in Linux, which reads
		// current->ptrace without a lock too.
		return
	}
	tg := t.tg
	// The process lock guards the thread's ptrace state.
	tg.mu.Lock()
	if t.tracer.Load() != nil && t.ptraceOptions&option != 0 {
		t.eventOwed = int32(unix.SIGTRAP) | int32(event)<<8
		t.nextTraceEventLocked()
	}
	tg.mu.Unlock()
}

// releaseVforkParent is mm_release's complete_vfork_done: the parent of a
// vfork child, waiting for it to exec or exit, goes on.
func (t *Task) releaseVforkParent() {
	// Every exit passes here: a load keeps the common case free of a
	// write to the task.
	if t.vforkDone.Load() == nil {
		return
	}
	if done := t.vforkDone.Swap(nil); done != nil {
		close(*done)
	}
}

// waitVforkDone is wait_for_vfork_done: the parent sleeps, killably, until
// its vfork child execs or exits, taking no ptrace stop meanwhile (the
// caller ends that with leaveKernel). The PTRACE_EVENT_VFORK stop clone
// raised comes first: ptrace_event stops before the wait. It reports
// whether the child did.
func (t *Task) waitVforkDone(done chan struct{}) bool {
	tg := t.tg
	var dying chan struct{}
	for {
		// The process lock guards the dying channel and the ptrace
		// state.
		tg.mu.Lock()
		dying = t.dyingChanLocked()
		if resume := t.stopWaitLocked(); resume != nil && !t.killPending {
			tg.mu.Unlock()
			t.sleepingOn.Store(&sleep{wake: resume, dying: dying})
			sleepUntil(resume, dying)
			t.sleepingOn.Store(nil)
			continue
		}
		t.jobctl.set(jobctlInKernel)
		tg.mu.Unlock()
		break
	}
	t.sleepingOn.Store(&sleep{wake: done, dying: dying})
	defer t.sleepingOn.Store(nil)
	select {
	case <-done:
		return true
	case <-dying:
		// do_wait_for_common tests the completion before the signal:
		// a child that execed or exited in the step that killed the
		// caller completes the wait.
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
}
