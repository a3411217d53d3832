package kernel

import (
	"golang.org/x/sys/unix"
)

// Job control: group stops, continues, and what wait reports of them
// (kernel/signal.c do_signal_stop, prepare_signal, do_notify_parent_cldstop;
// C10). A process stops as a whole: every untraced thread of it at once,
// except that one asleep in an interruptible call takes part once the
// call has taken the stop's interrupt and left its queue; a traced thread
// takes part through a trap its tracer hears of (ptrace_stop.go), and runs
// on once the tracer resumes it. A default-action stop signal is acted on
// soon after it is sent, on a goroutine of its own, as Linux's target
// acts on it when it next runs; Kernel.Quiesce waits for it. A stop, once
// every thread has taken part, or a continue is then reported to the
// parent: the child goes on its parent thread's job queue, which wait
// scans together with the zombies, in children-list order.

// queueStopLocked records a default-action stop signal (sig_kernel_stop)
// and starts the stop if none is under way.
//
// Preconditions: tg.mu is held; the process is not stopped.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) queueStopLocked(sig int) {
	first := tg.stopPending == 0
	tg.stopPending |= sigBit(sig)
	if first {
		tg.k.goAsync(tg.doSignalStop)
	}
}

// doSignalStop acts on the pending stop signals in dequeue order (lowest
// first): SIGTSTP, SIGTTIN and SIGTTOU do nothing in an orphaned process
// group (get_signal's is_current_pgrp_orphaned), and a signal whose
// disposition changed meanwhile is no longer a stop; the first that
// remains stops the process (do_signal_stop), and the parent hears of it.
// While an exec kills the other threads, the signals stay pending:
// do_signal_stop refuses to start a stop while group_exec_task is set, and
// the exec'ing thread takes them once the exec is over (endExecLocked).
func (tg *ThreadGroup) doSignalStop() {
	g := tg.lockPgrpOf()
	orphaned := g.orphanedLocked(nil)
	// The process lock guards its job-control state; the group lock,
	// taken first, keeps the orphan test true while it is used.
	tg.mu.Lock()
	if tg.execTask != nil && !tg.groupExiting || !tg.anyThreadDequeuesLocked() {
		tg.mu.Unlock()
		g.mu.Unlock()
		return
	}
	pending := tg.stopPending
	tg.stopPending = 0
	stopped := false
	for pending != 0 && !tg.groupExiting && tg.liveThreads > 0 && !tg.stopped {
		sig := lowestSignal(pending)
		pending &^= sigBit(sig)
		if sig != int(unix.SIGSTOP) && (orphaned || tg.sighand.Load().action(sig).Handler != SigDfl) {
			continue
		}
		tg.stopped, tg.stopCode, tg.stopSig = true, int32(sig), int32(sig)
		tg.continued.Store(false)
		n := tg.interruptSleepersForStopLocked(sig)
		tg.stopWaiting = tg.trapTracedForStopLocked() + n
		stopped = tg.stopWaiting == 0
	}
	tg.actOnKeptSignalsLocked()
	tg.wakeStoppedLocked()
	tg.mu.Unlock()
	g.mu.Unlock()
	if stopped {
		tg.notifyParentJobctl()
	}
}

// anyThreadDequeuesLocked reports whether a thread of tg can dequeue a
// stop signal now: one running that is not asleep killably inside a call
// (a vfork parent's wait), where no stop signal wakes it. When none can,
// the stop signals stay pending until a thread leaves its call
// (leaveKernel).
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) anyThreadDequeuesLocked() bool {
	found := false
	for t := tg.threads.head; t != nil; t = t.threadLink.next {
		t.assertProcessLocked() // +checklocksforce: t is a thread of tg
		found = found || t.state.Load() == taskRunning && (!t.jobctl.has(jobctlInKernel) || t.intrArmed)
	}
	return found
}

// sleepersWithSignalLocked reports whether a signal sent to target (a
// thread-directed one) or to the process (shared) finds no thread to take
// it because each it could go to sleeps killably in a call (a vfork
// parent's wait) with a signal already pending: wants_signal passes over
// a thread that has one, and no stop or handled signal wakes such a sleep.
//
// Preconditions: tg.mu is held; target, if not nil, is a thread of tg.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) sleepersWithSignalLocked(target *Task, shared bool) bool {
	if shared {
		return (tg.stopPending != 0 || tg.sharedPending != nil && tg.sharedPending.set != 0) &&
			!tg.anyThreadDequeuesLocked()
	}
	return tg.sleepsWithSignalLocked(target)
}

// sleepsWithSignalLocked reports whether thread t of tg sleeps killably in
// a call with a signal it does not block already pending for it.
//
// Preconditions: tg.mu is held; t is a thread of tg.
//
// +checklocks:tg.mu
// +checklocksignore: t is a thread of tg, which checklocks cannot see;
// assertProcessLocked checks it at run time.
func (tg *ThreadGroup) sleepsWithSignalLocked(t *Task) bool {
	t.assertProcessLocked()
	if !t.jobctl.has(jobctlInKernel) || t.intrArmed {
		return false
	}
	pending := SigSet(tg.stopPending)
	if tg.sharedPending != nil {
		pending |= tg.sharedPending.set
	}
	if s := t.sigsLocked(); s != nil {
		pending |= s.pending.set
	}
	return pending&^t.blockedLocked() != 0
}

// actOnKeptSignalsLocked acts on the signals that untraced threads kept
// from their tracers while a stop was pending or the process was stopped
// (nextTraceEventLocked); while it is stopped they stay queued.
//
// Preconditions: tg.mu is held; no stop is pending.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) actOnKeptSignalsLocked() {
	for t := tg.threads.head; t != nil; t = t.threadLink.next {
		t.assertProcessLocked() // +checklocksforce: t is a thread of tg
		if t.tracePending|t.traceShared != 0 && t.tracer.Load() == nil {
			t.nextTraceEventLocked()
		}
	}
}

// trapTracedForStopLocked makes every traced thread of a process that
// has just stopped owe its tracer a group-stop trap (do_signal_stop sets
// JOBCTL_STOP_PENDING on each thread not yet stopped), and returns how
// many do: the stop is complete once each has trapped.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) trapTracedForStopLocked() int32 {
	n := int32(0)
	for t := tg.threads.head; t != nil; t = t.threadLink.next {
		t.assertProcessLocked() // +checklocksforce: t is a thread of tg
		if t.tracer.Load() != nil && t.state.Load() == taskRunning {
			t.jobctl.set(jobctlStopPending)
			n++
			t.nextTraceEventLocked()
		}
	}
	return n
}

// interruptSleepersForStopLocked wakes every thread of a process that has
// just stopped from the interruptible call it sleeps in (do_signal_stop's
// signal_wake_up of each thread, or ptrace_trap_notify's for a traced
// one) and returns how many untraced ones it woke: each of those takes
// part in the stop once its call has taken the interrupt (signal_intr.go), so
// the parent hears of the stop only after the sleepers have left their
// wait queues, as on Linux. A traced thread takes part through its trap
// (trapTracedForStopLocked), which it takes once its call has returned.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) interruptSleepersForStopLocked(sig int) int32 {
	n := int32(0)
	for t := tg.threads.head; t != nil; t = t.threadLink.next {
		t.assertProcessLocked() // +checklocksforce: t is a thread of tg
		if t.jobctl.has(jobctlInKernel) && !t.intrArmed && t.tracer.Load() == nil && t.state.Load() == taskRunning {
			// Asleep killably in a call (a vfork parent's wait): no
			// stop wakes it, and it takes part once the call returns
			// (leaveKernel), as its get_signal runs only then.
			t.jobctl.set(jobctlStopInCall)
			n++
			continue
		}
		if !t.intrArmed || t.state.Load() != taskRunning {
			continue
		}
		t.interruptLocked(sig)
		if t.tracer.Load() == nil {
			t.jobctl.set(jobctlStopInCall)
			n++
		}
	}
	return n
}

// participateLocked counts the part in the group stop of a traced thread
// or of one woken from an interruptible call (task_participate_group_stop):
// the last one completes the stop, and the parent hears of it.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) participateLocked() {
	if tg.stopWaiting == 0 {
		return
	}
	tg.stopWaiting--
	if tg.stopWaiting == 0 && tg.stopped {
		tg.k.goAsync(tg.notifyParentJobctl)
	}
}

// continueLocked is prepare_signal's SIGCONT: pending stops and the stop
// signals still queued are dropped, no thread owes a group stop any more,
// a seized thread owes its tracer a PTRACE_EVENT_STOP trap
// (ptrace_trap_notify, which interrupts a sleep it is in; one listening in
// such a trap takes it at once), and a stopped process runs again, owes
// its parent a continue report, and then acts on the signals its threads
// kept from a former tracer and on the fatal signals it was sent while
// stopped, in next_signal's order.
//
// Preconditions: tg.mu is held; the process is not exiting.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) continueLocked(b *exitBatch) {
	tg.stopPending, tg.stopWaiting = 0, 0
	tg.flushTracedLocked(stopSignals)
	tg.flushPendingLocked(SigSet(stopSignals))
	for t := tg.threads.head; t != nil; t = t.threadLink.next {
		t.assertProcessLocked() // +checklocksforce: t is a thread of tg
		// task_clear_jobctl_pending(JOBCTL_STOP_PENDING) clears
		// JOBCTL_STOP_DEQUEUED with it.
		t.jobctl.clear(jobctlStopPending | jobctlStopInCall | jobctlStopDequeued)
		if t.jobctl.has(jobctlSeized) && t.tracer.Load() != nil && t.state.Load() == taskRunning {
			t.jobctl.set(jobctlTrapNotify)
			// ptrace_trap_notify's signal_wake_up: a sleep ends as for
			// a stop.
			t.interruptLocked(int(unix.SIGSTOP))
			if t.jobctl.take(jobctlListening) {
				// PTRACE_LISTEN's wake-up: the trap ends and is taken
				// again, with the new state.
				t.traceStop = 0
			}
			t.nextTraceEventLocked()
		}
	}
	if !tg.stopped {
		tg.wakeStoppedLocked()
		return
	}
	tg.stopped, tg.stopCode, tg.stopSig = false, 0, 0
	tg.continued.Store(true)
	tg.wakeStoppedLocked()
	tg.k.goAsync(tg.notifyParentJobctl)
	tg.actOnKeptSignalsLocked()
	// Each thread, running again, takes what was sent to it alone first.
	for t := tg.threads.head; t != nil; t = t.threadLink.next {
		t.assertProcessLocked() // +checklocksforce: t is a thread of tg
		if t.state.Load() == taskRunning && t.tracer.Load() == nil {
			t.takeUnblockedLocked(b)
		}
	}
	pending := tg.pendingSigs &^ stopSignals // prepare_signal flushes them
	tg.pendingSigs = 0
	for pending != 0 {
		sig := nextSignal(pending)
		pending &^= sigBit(sig)
		if taker := tg.signalTakerLocked(nil, sig); taker != nil && taker.tracer.Load() != nil {
			// A traced thread that takes it stops for its tracer first
			// (ptrace_signal).
			taker.traceSignalLocked(sig, true) // +checklocksignore: taker is a thread of tg, asserted there
			continue
		}
		if tg.sighand.Load().action(sig).Handler == SigDfl && !sigDefaultIgnored(sig) && !tg.unkillable {
			tg.killLocked(tg.fatalStatus(sig), b)
			return
		}
	}
}

// endJobControlLocked clears the job-control state when the process
// starts a group exit (signal->flags = SIGNAL_GROUP_EXIT): a stop or a
// continue not yet reported is lost, and so are the ptrace stops its
// threads are in or owe, PTRACE_LISTEN's included (SIGKILL wakes a traced
// thread); a thread whose
// own exit waits at PTRACE_EVENT_EXIT is woken too and finishes it.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) endJobControlLocked() {
	tg.stopped, tg.stopCode, tg.stopSig = false, 0, 0
	tg.continued.Store(false)
	tg.stopPending, tg.pendingSigs, tg.stopWaiting = 0, 0, 0
	for t := tg.threads.head; t != nil; t = t.threadLink.next {
		t.assertProcessLocked() // +checklocksforce: t is a thread of tg
		if t.jobctl.has(jobctlExitHeld) {
			t.releaseExitLocked()
			continue
		}
		t.traceStop, t.tracePending, t.traceShared, t.eventOwed = 0, 0, 0, 0
		// A SIGKILL ends a PTRACE_LISTEN trap as any other: the
		// thread leaves ptrace_stop, which clears JOBCTL_LISTENING.
		t.jobctl.clear(jobctlSignalStopMask | jobctlPendingMask | jobctlStopInCall | jobctlListening)
	}
	tg.wakeStoppedLocked()
}

// wakeStoppedLocked wakes the calls that wait for a thread of the process
// to run again; each looks again at its own thread (stopWaitLocked).
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) wakeStoppedLocked() {
	if tg.resumeCh != nil {
		close(tg.resumeCh)
		tg.resumeCh = nil
	}
}

// stopWaitLocked returns, for a thread that is stopped or about to stop,
// a channel closed when that may have changed; nil if it runs. A stopped
// thread makes no progress in a call until it runs again.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) stopWaitLocked() chan struct{} {
	if t.runnableLocked() {
		return nil
	}
	tg := t.tg
	if tg.resumeCh == nil {
		tg.resumeCh = make(chan struct{})
	}
	return tg.resumeCh
}

// sleepUntil blocks until resume or dying is closed.
func sleepUntil(resume, dying <-chan struct{}) {
	select {
	case <-resume:
	case <-dying:
	}
}

// hasJobEventLocked reports whether the process has a stop or a continue
// its parent's wait may report.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) hasJobEventLocked() bool {
	return (tg.stopped && tg.stopCode != 0 && tg.stopWaiting == 0) || tg.continued.Load()
}

// notifyParentJobctl is do_notify_parent_cldstop for a process that
// stopped or continued: the child goes on its parent thread's job queue
// if it still has something to report, the parent is sent SIGCHLD (unless
// it set SA_NOCLDSTOP) and its waiters wake.
func (tg *ThreadGroup) notifyParentJobctl() {
	if tg.parent.Load() == nil {
		return // the root init has no parent
	}
	// The parent's lock guards its job queues and this child's place on
	// them; the child's own lock, which comes after it, its job-control
	// state.
	ptg := tg.lockParentOf()
	tg.mu.Lock()
	event := tg.hasJobEventLocked() && tg.exitState.Load() == procAlive
	if event && tg.jobIdx < 0 {
		ptg.markJobLocked(tg)
	}
	// A group stop is hidden from a parent that traces the process (it
	// hears of the trap instead); a continue is not.
	hidden := tg.stopped && !tg.stopReportableTo(ptg)
	tg.mu.Unlock()
	if event && !hidden {
		ptg.sendChildStopSignalLocked(tg.parent.Load())
	}
	ptg.wakeWaitersLocked(tg.leader.Load())
	ptg.mu.Unlock()
}

// Stopped reports whether the task is stopped or about to stop: in a
// ptrace stop or owing one, or, unless its tracer resumed it, stopped with
// its process or about to be (a stop signal not yet acted on).
func (t *Task) Stopped() bool {
	tg := t.tg
	// The process lock guards its job-control and ptrace state.
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return !t.runnableLocked()
}

// runnableLocked reports whether the thread may run (Stopped's converse).
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) runnableLocked() bool {
	tg := t.tg
	if t.traceStop != 0 || t.owesTraceStopLocked() || tg.stopPending != 0 {
		return false
	}
	return t.tracer.Load() != nil || !tg.stopped
}
