package kernel

import (
	"context"
	"time"

	"golang.org/x/sys/unix"
)

// The calls that sleep until a signal comes (kernel/signal.c sigsuspend,
// do_sigtimedwait).

// Sigsuspend is rt_sigsuspend(2): the caller's mask becomes mask (less
// SIGKILL and SIGSTOP) until a signal with a handler is taken, which
// ends the call with EINTR and restores the mask. Pending signals the
// mask unblocks are taken at once. A signal with no handler does not end
// it: an ignored one is dropped, a stop stops the process and the call
// sleeps on once it is continued (-ERESTARTNOHAND restarts it), a fatal
// one kills it. ctx (nil: context.Background) ends it with EINTR too.
// Errors: ESRCH if the caller has exited; otherwise always EINTR.
func (t *Task) Sigsuspend(ctx context.Context, mask SigSet) error {
	ctx = orBackground(ctx)
	if !t.enterCall() {
		return unix.ESRCH
	}
	defer t.leaveCall()
	tg := t.tg
	var b exitBatch
	// The process lock guards the mask, the queues and the interrupt
	// state; arming first lets a pending signal the mask unblocks
	// interrupt the call at once.
	tg.mu.Lock()
	saved := t.blockedLocked()
	t.armLocked()
	t.setBlockedLocked(mask, &b)
	tg.mu.Unlock()
	b.run(t.k)
	defer t.restoreMask(saved)
	defer t.disarm()
	restart := false
	for {
		// A stop, or a traced thread's signal-delivery stops, hold the
		// call until the thread runs again; it then restarts, and a
		// signal with a handler (SIGCONT's own) ends it either way.
		tg.mu.Lock()
		resume := t.stopWaitLocked()
		tg.mu.Unlock()
		if resume == nil && restart {
			restart = false
			t.restartSigsuspend(saved, mask)
			continue // what the restart let through may stop or interrupt it
		}
		sig, err := t.sleepIntr(ctx, resume)
		if err != nil {
			return err
		}
		if sig != 0 && t.handlerRuns(sig) {
			return unix.EINTR
		}
		restart = restart || sig != 0
	}
}

// restartSigsuspend is -ERESTARTNOHAND when no handler ran: once
// get_signal has nothing more for it (no stop left, no signal the call's
// mask lets through), the thread gets its own mask back
// (restore_saved_sigmask), which lets it take what the call's mask held
// back (a handler that runs then returns into the restarted call), and
// the restarted call sets that mask again.
func (t *Task) restartSigsuspend(saved, mask SigSet) {
	var b exitBatch
	defer b.run(t.k)
	// The process lock guards the mask and the queues.
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	if t.state.Load() == taskRunning {
		t.setBlockedLocked(saved, &b)
		t.setBlockedLocked(mask, &b)
		// A handler that runs now returns into the restarted call: it
		// does not end it.
		t.takeLocked(false)
	}
}

// handlerRuns reports whether taking sig runs a handler of the process's.
func (t *Task) handlerRuns(sig int) bool {
	return !sigKernelOnly(sig) && t.tg.sighand.Load().action(sig).Handler == SigHandler
}

// restoreMask is restore_saved_sigmask: the mask a call replaced comes
// back, and the pending signals it unblocks are taken.
func (t *Task) restoreMask(saved SigSet) {
	var b exitBatch
	defer b.run(t.k)
	// The process lock guards the mask and the queues.
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	if t.state.Load() == taskRunning {
		t.setBlockedLocked(saved, &b)
	}
}

// Sigtimedwait is rt_sigtimedwait(2): it dequeues and returns a pending
// signal of set (SIGKILL and SIGSTOP left out), the caller's own queue
// first; if none is pending it sleeps, the signals of set unblocked
// meanwhile, until one comes or timeout passes (a negative timeout: no
// limit; zero: no sleep). A signal of set that the caller blocked before
// the call neither runs a handler nor kills the process: the call takes
// it. Errors: ESRCH if the caller has exited; EAGAIN when the timeout
// passed; EINTR when another signal was taken meanwhile (a stop, after
// the process is continued), the caller was killed or ctx (nil:
// context.Background) is done.
func (t *Task) Sigtimedwait(ctx context.Context, set SigSet, timeout time.Duration) (int, error) {
	ctx = orBackground(ctx)
	if !t.enterCall() {
		return 0, unix.ESRCH
	}
	defer t.leaveCall()
	set &^= unblockable
	tg := t.tg
	// The process lock guards the mask, the queues and the interrupt
	// state.
	tg.mu.Lock()
	if sig := t.dequeueFromLocked(set); sig != 0 || timeout == 0 {
		tg.mu.Unlock()
		if sig == 0 {
			return 0, unix.EAGAIN
		}
		return sig, nil
	}
	s := t.makeSigsLocked()
	s.realBlocked, s.waiting = s.blocked, set
	s.blocked &^= set
	t.armLocked()
	tg.mu.Unlock()

	var expired chan struct{}
	if timeout > 0 {
		expired = make(chan struct{})
		timer := time.AfterFunc(timeout, func() { close(expired) })
		defer timer.Stop()
	}
	intr, err := t.sleepIntr(ctx, expired)

	tg.mu.Lock()
	s.blocked, s.realBlocked, s.waiting = s.realBlocked, 0, 0
	sig := t.dequeueFromLocked(set)
	late := t.disarmLocked() // an interrupt that came as the sleep ended
	tg.mu.Unlock()
	switch {
	case sig != 0 && !t.Exited():
		return sig, nil
	case err != nil:
		return 0, err
	}
	if intr == 0 {
		intr = late
	}
	if intr == 0 {
		return 0, unix.EAGAIN
	}
	if !t.handlerRuns(intr) {
		t.WaitRunnable(ctx) // a stop takes the thread before the call returns
	}
	return 0, unix.EINTR
}

// dequeueFromLocked is dequeue_signal for the signals of set: one from
// the thread's queue, else from the process's, in next_signal's order; 0
// if none is pending.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) dequeueFromLocked(set SigSet) int {
	if s := t.sigsLocked(); s != nil {
		if sig := s.pending.next(set); sig != 0 {
			s.pending.take(sig)
			return sig
		}
	}
	if q := t.tg.sharedPending; q != nil {
		if sig := q.next(set); sig != 0 {
			q.take(sig)
			return sig
		}
	}
	return 0
}

// catchForWaitLocked hands sig to t, the thread chosen to take it, when t
// sleeps in sigtimedwait for it and reports true: the signal is queued
// (on the process's queue if shared) and t woken to dequeue it, without a
// ptrace stop (dequeue_signal is not get_signal). A signal t did not
// block before the call is queued only if it would not be dropped or kill
// the process (sig_ignored, complete_signal's real_blocked test);
// otherwise false, and it goes its usual way.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) catchForWaitLocked(sig int, shared, force bool) bool {
	t.assertProcessLocked()
	s := t.sigsLocked()
	if s == nil || !s.waiting.Has(sig) || t.state.Load() != taskRunning {
		return false
	}
	// Neither test applies to a traced thread: sig_ignored keeps every
	// signal for a tracee, and complete_signal kills a traced process
	// only for SIGKILL.
	if !s.realBlocked.Has(sig) && t.tracer.Load() == nil {
		switch t.tg.signalActionLocked(sig, force) {
		case sigIgnored, sigKills:
			return false
		}
	}
	if shared {
		t.tg.sharedQueueLocked().add(sig)
	} else {
		s.pending.add(sig)
	}
	t.interruptLocked(sig)
	return true
}

// catchForAnyWaitLocked is catchForWaitLocked for a process-directed sig
// no thread wants: the first thread of tg in sigtimedwait for it takes it.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
// +checklocksignore: the threads are tg's, which checklocks cannot see;
// catchForWaitLocked asserts it at run time.
func (tg *ThreadGroup) catchForAnyWaitLocked(sig int, force bool) bool {
	for t := tg.threads.head; t != nil; t = t.threadLink.next {
		if t.catchForWaitLocked(sig, true, force) {
			return true
		}
	}
	return false
}
