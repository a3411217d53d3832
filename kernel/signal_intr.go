package kernel

import (
	"context"

	"golang.org/x/sys/unix"
)

// Signals that interrupt a sleeping system call (kernel/signal.c
// complete_signal and signal_wake_up; the syscall-restart rules of
// arch/x86/kernel/signal.c handle_signal and do_signal).
//
// A thread in wait4 or waitid, or asleep in semop, is armed: a signal
// delivered to it — a handled one, a stop, or SIGKILL — closes its
// interrupt channel under its process's lock (signal_wake_up) and records
// the signal. The call wakes, takes the signal under the same lock (which
// replaces the channel) and decides what to do with it: semop returns
// EINTR whatever the signal (ipc/sem.c's -EINTR, never restarted); wait4
// and waitid return EINTR for a handler without SA_RESTART and otherwise
// go on waiting (do_wait's -ERESTARTSYS, restarted after a stop or by
// SA_RESTART). A thread that is not asleep in such a call takes no
// interrupt: Linux would run the handler on its way back to user space,
// which the model cannot observe.
//
// Between the delivery and the call taking the signal the interrupt is
// counted by Kernel.Quiesce, as Linux's target acts on it before it runs
// anything else: a runner that quiesces after a kill sees the sleeper gone
// from its semaphore queue, or the wait restarted.

// SaRestart is SA_RESTART: a wait4 or waitid interrupted by the handled
// signal is restarted rather than failing with EINTR.
const SaRestart = 0x10000000

// signalTakerLocked is the thread that takes sig sent to the process:
// target for a thread-directed one, or the one complete_signal chose;
// otherwise complete_signal's choice for a signal sent through the
// leader. When no thread wants it, the signal waits, shared, for a thread
// to take it: the model gives it to the leader, or the first running
// thread once the leader has exited, among those that do not block it;
// nil if there is none.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) signalTakerLocked(target *Task, sig int) *Task {
	if target != nil {
		return target
	}
	if t := tg.completeSignalTargetLocked(nil, sig); t != nil {
		return t
	}
	if leader := tg.leader.Load(); tg.runsUnblockedLocked(leader, sig) {
		return leader
	}
	for t := tg.threads.head; t != nil; t = t.threadLink.next {
		if tg.runsUnblockedLocked(t, sig) {
			return t
		}
	}
	return nil
}

// runsUnblockedLocked reports whether thread t of tg runs and does not
// block sig.
//
// Preconditions: tg.mu is held; t is a thread of tg.
//
// +checklocks:tg.mu
// +checklocksignore: t is a thread of tg, which checklocks cannot see;
// assertProcessLocked checks it at run time.
func (tg *ThreadGroup) runsUnblockedLocked(t *Task, sig int) bool {
	t.assertProcessLocked()
	return t.state.Load() == taskRunning && !t.blocksLocked(sig)
}

// completeSignalTargetLocked is complete_signal's choice of the thread
// that takes a signal sent to the process through thread p (nil: the
// leader; kill names a thread by any tid, a parent is notified through
// the thread it is): p itself if it wants the signal; otherwise, in a
// process with other threads, the first that does from
// signal->curr_target on, which becomes the new curr_target. nil when
// none does.
//
// Preconditions: tg.mu is held; p, if not nil, is a thread of tg.
//
// +checklocks:tg.mu
// +checklocksignore: p and the threads it walks are tg's, which checklocks
// cannot see, and a forced hold may not reach its returns; each
// wantsSignalLocked asserts the lock at run time.
func (tg *ThreadGroup) completeSignalTargetLocked(p *Task, sig int) *Task {
	if p == nil {
		p = tg.leader.Load()
	}
	if p.wantsSignalLocked(sig) {
		return p
	}
	if tg.threads.len <= 1 {
		return nil
	}
	start := tg.currTarget
	if start == nil {
		start = tg.threads.head
	}
	for t := start; ; {
		if t.wantsSignalLocked(sig) {
			tg.currTarget = t
			return t
		}
		if t = t.threadLink.next; t == nil {
			t = tg.threads.head
		}
		if t == start {
			return nil
		}
	}
}

// removeThreadLocked takes t off its process's thread list; a
// signal->curr_target that was t moves on to the next thread
// (__exit_signal).
//
// Preconditions: tg.mu is held; t is a thread of tg.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) removeThreadLocked(t *Task) {
	if tg.currTarget == t {
		tg.currTarget = t.threadLink.next
	}
	tg.threads.remove(t, threadLinkOf)
	tg.noteThreadsLocked()
}

// addThreadLocked appends t to the process's thread list.
//
// Preconditions: tg.mu is held; t is a new thread of tg.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) addThreadLocked(t *Task) {
	tg.threads.pushBack(t, threadLinkOf)
	tg.noteThreadsLocked()
}

// noteThreadsLocked brings soleThread in step with the thread list.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) noteThreadsLocked() {
	if tg.threads.len == 1 {
		tg.soleThread.Store(tg.threads.head)
	} else {
		tg.soleThread.Store(nil)
	}
}

// wantsSignalLocked is wants_signal for sig: the thread does not block
// it, runs, is not being killed, is neither in a ptrace stop nor, unless
// a tracer resumed it, stopped with its process, and has no signal
// pending yet (a sleeping thread woken for one, here a ptrace stop it
// owes, leaves the next to another thread).
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) wantsSignalLocked(sig int) bool {
	t.assertProcessLocked()
	return !t.blocksLocked(sig) && t.state.Load() == taskRunning && !t.killPending && t.traceStop == 0 &&
		(t.tracer.Load() != nil || !t.tg.stopped) && !t.owesTraceStopLocked()
}

// interruptLocked is signal_wake_up for a thread in an interruptible
// call: the call wakes and will take sig. A thread in no such call is
// left alone. A thread already interrupted keeps the first signal (the
// first handle_signal decides the call's fate), unless that was a stop
// (firstSignal).
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) interruptLocked(sig int) {
	t.assertProcessLocked()
	if !t.intrArmed {
		return
	}
	if t.intrSig != 0 {
		t.intrSig = int32(firstSignal(int(t.intrSig), sig))
		return
	}
	t.intrSig = int32(sig)
	t.intrChanLocked()
	close(t.intr)
	t.k.async.Add(1) // until the call takes it (disarmLocked)
}

// intrChanLocked returns the channel closed when the thread's current
// sleep is interrupted, making it on first use.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) intrChanLocked() chan struct{} {
	if t.intr == nil {
		t.intr = make(chan struct{})
	}
	return t.intr
}

// armLocked marks the thread asleep in an interruptible call and returns
// the channel that a signal closes. A thread already killed is
// interrupted at once, so the channel also fires on SIGKILL.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) armLocked() <-chan struct{} {
	t.intrArmed = true
	ch := t.intrChanLocked()
	if t.killWoken {
		t.interruptLocked(int(unix.SIGKILL))
	}
	return ch
}

// disarmLocked ends an interruptible call and returns the signal that
// interrupted it and that it has not taken, or 0.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) disarmLocked() int {
	t.intrArmed = false
	return t.takeLocked(true)
}

// takeLocked takes the signal that interrupted the call, or 0; the call
// stays armed. A taken interrupt's channel is replaced, so the next sleep
// waits on a fresh one. With joinStop, a thread out of its wait queue
// takes part in the group stop that interrupted it (joinStopLocked).
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) takeLocked(joinStop bool) int {
	sig := int(t.intrSig)
	if sig != 0 {
		t.intrSig = 0
		t.intr = nil
		t.k.asyncDone()
	}
	if joinStop {
		t.joinStopLocked()
	}
	return sig
}

// joinStopLocked makes a thread that a group stop interrupted in a call
// take part in the stop, once the call has done what it does before
// get_signal stops the thread.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) joinStopLocked() {
	if t.jobctl.take(jobctlStopInCall) {
		t.tg.participateLocked()
	}
}

// waitRestarts reports whether a wait4 or waitid interrupted by sig goes
// on: do_wait returns -ERESTARTSYS, which handle_signal turns into EINTR
// only for a handler without SA_RESTART; after a stop, or a signal no
// longer handled, the call is restarted.
func (t *Task) waitRestarts(sig int) bool {
	if sig == int(unix.SIGKILL) {
		return false
	}
	act := t.tg.sighand.Load().action(sig)
	return act.Handler != SigHandler || act.Flags&SaRestart != 0
}

// arm marks the task in an interruptible call (armLocked).
func (t *Task) arm() {
	// The process lock orders arming against a delivery.
	t.tg.mu.Lock()
	t.armLocked()
	t.tg.mu.Unlock()
}

// disarm ends an interruptible call (disarmLocked).
func (t *Task) disarm() {
	// The process lock guards the interrupt state.
	t.tg.mu.Lock()
	t.disarmLocked()
	t.tg.mu.Unlock()
}

// sleepIntr blocks, in an armed call, until wake is closed, or the task
// is killed, a signal interrupts it (at once if one did since the call
// last took one) or ctx is done. It returns the signal taken (0 if none)
// and EINTR when the task was killed or ctx is done.
func (t *Task) sleepIntr(ctx context.Context, wake <-chan struct{}) (int, error) {
	return t.sleepIntrThen(ctx, wake, true)
}

// sleepIntrThen is sleepIntr; without joinStop, a group stop that ends the
// sleep is joined only when the call next sleeps for the stop or ends
// (do_wait scans its children before it returns -ERESTARTSYS and
// get_signal stops the thread).
func (t *Task) sleepIntrThen(ctx context.Context, wake <-chan struct{}, joinStop bool) (int, error) {
	tg := t.tg
	// The process lock guards the channels and orders them against a
	// delivery.
	tg.mu.Lock()
	dying, intr := t.dyingChanLocked(), t.intrChanLocked()
	tg.mu.Unlock()
	t.sleepingOn.Store(&sleep{wake: wake, dying: dying, intr: intr})
	var err error
	select {
	case <-wake:
	case <-intr:
	case <-dying:
		err = unix.EINTR
	case <-ctx.Done():
		err = unix.EINTR
	}
	t.sleepingOn.Store(nil)
	// The process lock guards the interrupt state the call takes.
	tg.mu.Lock()
	sig := t.takeLocked(joinStop)
	tg.mu.Unlock()
	if sig == int(unix.SIGKILL) {
		err = unix.EINTR
	}
	return sig, err
}

// WaitRunnable blocks until the task is neither stopped nor about to
// stop: a call that stopped its caller (a signal it sent itself, a stop
// that interrupted it, exec's ptrace trap) returns to user space only once
// the task runs again. Signals that arrive meanwhile are taken and
// dropped. It returns early when the task is killed or ctx (nil:
// context.Background) is done; an exit its tracer holds at
// PTRACE_EVENT_EXIT ends only when released.
func (t *Task) WaitRunnable(ctx context.Context) {
	ctx = orBackground(ctx)
	if t.waitExitRelease(ctx) {
		return
	}
	tg := t.tg
	t.arm()
	defer t.disarm()
	for {
		// The process lock guards its job-control state.
		tg.mu.Lock()
		resume := t.stopWaitLocked()
		tg.mu.Unlock()
		if resume == nil {
			return
		}
		if _, err := t.sleepIntr(ctx, resume); err != nil {
			return
		}
	}
}

// orBackground is the context a blocking call uses: ctx, or
// context.Background when the caller passed nil (as net/http treats a nil
// request context).
func orBackground(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}
