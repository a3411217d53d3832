package kernel

import (
	"math/bits"

	"golang.org/x/sys/unix"
)

// ptrace stops (kernel/signal.c get_signal, ptrace_signal, do_jobctl_trap,
// ptrace_stop). A traced thread stops for its tracer instead of acting on
// a signal (a signal-delivery stop), when its process stops (a group-stop
// trap) and, if seized, for PTRACE_INTERRUPT and for a SIGCONT sent to its
// process (PTRACE_EVENT_STOP traps). It owes these stops as get_signal
// finds them: the group stop first, then the trap, then the pending
// signals, synchronous ones first; a ptrace_event stop (PTRACE_O_TRACEEXEC)
// comes before them all, in the call that raises it. A stop is taken at once when the
// tracer's lock is held anyway, else on a goroutine of its own, as Linux's
// tracee takes it when it next runs; Kernel.Quiesce waits for it.

// traceSignalLocked makes a traced thread stop for sig, whatever its
// disposition (sig_ignored, ptrace_signal: its tracer decides); shared
// marks a signal sent to the process rather than to the thread. A call
// the thread sleeps in is interrupted as for a stop: it goes on once the
// thread is resumed, unless the tracer passes a handled signal.
//
// Preconditions: t.tg.mu is held; t is traced.
//
// +checklocks:t.tg.mu
func (t *Task) traceSignalLocked(sig int, shared bool) {
	t.assertProcessLocked()
	if shared {
		t.traceShared |= sigBit(sig)
	} else {
		t.tracePending |= sigBit(sig)
	}
	t.interruptLocked(int(unix.SIGSTOP))
	t.nextTraceEventLocked()
}

// nextTraceEventLocked starts the next ptrace stop thread t owes, on a
// goroutine of its own. A thread no longer traced owes no trap and acts on
// the signals it kept for its tracer.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) nextTraceEventLocked() {
	tg := t.tg
	if t.traceStop != 0 || tg.groupExiting || t.state.Load() != taskRunning {
		return
	}
	if t.tracer.Load() == nil {
		if t.jobctl.has(jobctlStopPending) {
			tg.participateLocked() // it stops with its process, untraced
		}
		t.eventOwed = 0
		t.jobctl.clear(jobctlPendingMask)
		if tg.stopPending != 0 || tg.stopped {
			// A stop signal its tracer passed on is being acted on:
			// do_signal_stop runs before get_signal dequeues the next
			// signal, so the kept ones wait for it (doSignalStop). A
			// stopped thread dequeues nothing: they stay queued until
			// a SIGCONT, or a tracer that attaches, lets it run.
			return
		}
		for sig, _ := t.dequeueTraceSignalLocked(); sig != 0; sig, _ = t.dequeueTraceSignalLocked() {
			// Queued past an init's send-time filter (a tracee's
			// signals all are), SIGKILL and SIGSTOP act on it; the
			// others get_signal skips.
			tg.actOnSignalToLocked(t, sig, true, nil)
		}
		return
	}
	// The signals its stopped process got are on the shared queue, which
	// a traced thread dequeues, after those sent to it alone, once it
	// runs with no stop left to take: those it does not block.
	if t.traceStop == 0 && !t.jobctl.has(jobctlPendingMask) {
		kept := tg.pendingSigs &^ uint64(t.blockedLocked())
		t.traceShared |= kept
		tg.pendingSigs &^= kept
		t.traceKeptLocked()
	}
	if t.owesTraceStopLocked() {
		tg.k.goAsync(t.ptraceStop)
	}
}

// owesTraceStopLocked reports whether the thread has a ptrace stop to take.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) owesTraceStopLocked() bool {
	return t.eventOwed != 0 || t.jobctl.has(jobctlPendingMask) || t.tracePending|t.traceShared != 0
}

// dequeueTraceSignalLocked takes the next signal the thread keeps for its
// tracer, in dequeue_signal's order: its private queue first, then its
// process's shared one, each in next_signal's order; 0 if none. shared
// tells which queue it came from.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) dequeueTraceSignalLocked() (sig int, shared bool) {
	queue := &t.tracePending
	if *queue == 0 {
		queue, shared = &t.traceShared, true
	}
	if *queue == 0 {
		return 0, false
	}
	sig = nextSignal(*queue)
	*queue &^= sigBit(sig)
	return sig, shared
}

// ptraceStop takes the stop a traced thread owes, with its tracer's lock.
func (t *Task) ptraceStop() {
	tg := t.tg
	for {
		tracer := t.tracer.Load()
		if tracer == nil {
			// Detached meanwhile: the process's own lock guards the
			// signals the thread kept.
			tg.mu.Lock()
			t.nextTraceEventLocked()
			tg.wakeStoppedLocked()
			tg.mu.Unlock()
			return
		}
		lockPair(tracer.tg, tg) // the stop and the tracer's report
		if t.tracer.Load() == tracer {
			t.takeTraceStopLocked(tracer)
			unlockPair(tracer.tg, tg)
			return
		}
		unlockPair(tracer.tg, tg)
	}
}

// takeTraceStopLocked stops a running traced thread for the first stop it
// owes, in get_signal's order, and tells the tracer.
//
// Preconditions: tracer.tg.mu and t.tg.mu are held; tracer traces t.
//
// +checklocks:tracer.tg.mu
// +checklocks:t.tg.mu
func (t *Task) takeTraceStopLocked(tracer *Task) {
	tg := t.tg
	if t.traceStop != 0 || tg.groupExiting || t.state.Load() != taskRunning || t.killPending || t.jobctl.has(jobctlInKernel) {
		return
	}
	var code int32
	var kind jobctlBits // of the stop: a signal-delivery stop's bits, or none
	switch {
	case t.eventOwed != 0:
		// ptrace_event: the call itself stops, before get_signal.
		code, t.eventOwed = t.eventOwed, 0
	case t.jobctl.has(jobctlStopPending):
		// do_signal_stop of a traced thread: it takes part in the group
		// stop through a trap (do_jobctl_trap).
		t.jobctl.clear(jobctlStopPending | jobctlStopDequeued) // task_participate_group_stop
		tg.participateLocked()
		code = tg.stopSig
		if t.jobctl.has(jobctlSeized) {
			t.jobctl.clear(jobctlTrapMask) // a STOP trap clears both
			code = t.eventStopCodeLocked()
		}
	case t.jobctl.has(jobctlTrapMask):
		t.jobctl.clear(jobctlTrapMask)
		code = t.eventStopCodeLocked()
		if !t.jobctl.has(jobctlSeized) {
			// do_jobctl_trap without PT_SEIZED: an attached thread of
			// a stopped process traps with the stop's signal.
			code = tg.stopSig
		}
	case t.tracePending|t.traceShared != 0:
		sig, shared := t.dequeueTraceSignalLocked()
		code, kind = int32(sig), jobctlSignalStop
		if shared {
			kind |= jobctlSignalShared
		}
		t.jobctl.set(jobctlStopDequeued)
	default:
		return
	}
	t.traceStop = code
	t.jobctl.clear(jobctlSignalStopMask)
	t.jobctl.set(kind)
	tracer.tg.reportTraceStopLocked(t, code)
}

// leaveKernel ends a stretch of a call during which the thread could take
// no ptrace stop (jobctlInKernel): the stops it came to owe meanwhile are
// taken now, after any ptrace_event stop the call raised, which comes
// first, and so is a group stop it owes or that no thread could start.
func (t *Task) leaveKernel() {
	tg := t.tg
	var b exitBatch
	defer b.run(t.k)
	// The process lock guards the thread's ptrace and signal state.
	tg.mu.Lock()
	defer tg.mu.Unlock()
	t.jobctl.clear(jobctlInKernel)
	t.joinStopLocked()
	// What no thread could dequeue while it slept: the signals waiting
	// on the queues, then the stop signals.
	t.takeUnblockedLocked(&b)
	if tg.stopPending != 0 && !tg.stopped && !tg.groupExiting {
		tg.k.goAsync(tg.doSignalStop)
	}
	t.nextTraceEventLocked()
}

// eventStopCodeLocked is the code of a PTRACE_EVENT_STOP trap: the group
// stop's signal while the process is stopped, else SIGTRAP.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) eventStopCodeLocked() int32 {
	sig := int32(unix.SIGTRAP)
	if t.tg.stopped {
		sig = t.tg.stopSig
	}
	return sig | ptraceEventStop<<8
}

// reportTraceStopLocked records a tracee's stop with code for the
// tracer's wait, sends the tracer's process SIGCHLD unless it asked not
// to hear of stops, and wakes its waiters (do_notify_parent_cldstop for
// the tracer).
//
// Preconditions: tg.mu is held; tg is the process of tracee's tracer.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) reportTraceStopLocked(tracee *Task, code int32) {
	tracee.assertTracerLocked()
	tracee.traceReport = code
	tg.sendChildStopSignalLocked(tracee.tracer.Load())
	tg.wakeWaitersLocked(tracee)
}

// sendChildStopSignalLocked sends SIGCHLD for a child's or tracee's stop
// or continue to to, the parent or tracer thread, which takes it if it
// wants it (do_notify_parent_cldstop sends to tsk->parent or the leader's
// real_parent), unless the process ignores SIGCHLD or set SA_NOCLDSTOP.
//
// Preconditions: tg.mu is held; to is a thread of tg.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) sendChildStopSignalLocked(to *Task) {
	act := tg.sighand.Load().action(int(unix.SIGCHLD))
	if act.Handler == SigIgn || act.Flags&SaNoCldStop != 0 {
		return
	}
	tg.sendSignalViaLocked(to, int(unix.SIGCHLD), false, nil)
}

// resumeTracedLocked ends a ptrace stop (ptrace_resume, or the wake-up of
// a detach): the signal sig the tracer passes, if the stop was a
// signal-delivery stop, is acted on as if it had been delivered (a trap
// drops it); then the next stop the thread owes begins, or, once it is
// untraced, its kept signals are acted on. A fatal signal passed joins b
// (nil: its exits run on a goroutine of their own).
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) resumeTracedLocked(sig int, b *exitBatch) {
	tg := t.tg
	if t.jobctl.has(jobctlExitHeld) {
		t.releaseExitLocked() // its exit goes on; a signal passed is moot
		tg.wakeStoppedLocked()
		return
	}
	wasSignal, fromShared := t.jobctl.has(jobctlSignalStop), t.jobctl.has(jobctlSignalShared)
	t.traceStop = 0
	t.jobctl.clear(jobctlSignalStopMask | jobctlListening)
	stale := sigDefaultStops(sig) && !t.jobctl.has(jobctlStopDequeued) && tg.sighand.Load().action(sig).Handler == SigDfl
	switch {
	case sig == 0 || !wasSignal || stale:
	case t.blocksLocked(sig):
		// ptrace_signal requeues a signal the tracee now blocks, on
		// the queue it was dequeued from.
		if fromShared {
			tg.sharedQueueLocked().add(sig)
		} else {
			t.sig.pending.add(sig)
		}
	default:
		// get_signal acts on it as the tracee's own: SIGKILL and
		// SIGSTOP reach even an init (SIGNAL_UNKILLABLE spares only the
		// signals it may catch). A default-action stop signal does
		// nothing once a SIGCONT has cleared JOBCTL_STOP_DEQUEUED
		// (do_signal_stop).
		tg.actOnSignalAsLocked(t, sig, true, true, b)
	}
	t.nextTraceEventLocked()
	tg.wakeStoppedLocked()
}

// retrapLocked ends a listening thread's trap for the notification it
// waited for (ptrace_trap_notify's wake-up): it traps again, reporting
// the new state of its process.
//
// Preconditions: tracer.tg.mu and t.tg.mu are held; tracer traces t; t
// is listening.
//
// +checklocks:tracer.tg.mu
// +checklocks:t.tg.mu
func (t *Task) retrapLocked(tracer *Task) {
	t.assertTracerLocked()
	t.traceStop = 0
	t.jobctl.clear(jobctlListening)
	t.traceReport = 0
	t.takeTraceStopLocked(tracer)
}

// nextSignal is next_signal's choice among pending signals: the
// synchronous ones (faults) first, then the lowest number.
func nextSignal(pending uint64) int {
	const synchronous = 1<<(unix.SIGSEGV-1) | 1<<(unix.SIGBUS-1) | 1<<(unix.SIGILL-1) |
		1<<(unix.SIGTRAP-1) | 1<<(unix.SIGFPE-1) | 1<<(unix.SIGSYS-1)
	if s := pending & synchronous; s != 0 {
		pending = s
	}
	return lowestSignal(pending)
}

// lowestSignal returns the lowest signal in a non-empty set.
func lowestSignal(set uint64) int { return bits.TrailingZeros64(set) + 1 }
