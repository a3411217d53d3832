package kernel

import (
	"golang.org/x/sys/unix"

	"tasklist/internal/abi"
)

// Signal masks and the signals they hold back (kernel/signal.c
// sigprocmask, sig_ignored, complete_signal's wants_signal,
// dequeue_signal, sigpending; include/linux/signal.h).
//
// Each thread has a mask of blocked signals; SIGKILL and SIGSTOP are never
// in it. A signal the thread it is sent to blocks (a thread-directed one),
// or that every thread of the process blocks (a process-directed one),
// does nothing yet: it waits on the thread's or the process's queue of
// pending signals, ignored or not (sig_ignored never drops a blocked
// signal, as its handler may change before it is unblocked), without
// waking a sleep, stopping or killing anyone, and without a ptrace
// signal-delivery stop (ptrace_signal runs when a signal is dequeued). A
// process-directed signal goes to a thread that does not block it when
// there is one. When a thread unblocks pending signals (sigprocmask,
// sigsuspend's mask, sigtimedwait's wait set) it takes them then, its own
// queue first, each queue in next_signal's order (takeUnblockedLocked). A
// standard signal is pending once at most; a real-time one once per send
// (legacy_queue). RLIMIT_SIGPENDING, which bounds the real-time signals a
// user may have queued, is not modelled.
//
// The model keeps pending only what is blocked: a signal a thread does
// not block is acted on at once (a handler runs on the thread's next
// return to user space, which the model cannot observe, or interrupts the
// call the thread sleeps in), as before masks existed; and what a stopped
// process or a traced thread keeps has queues of its own (pendingSigs,
// tracePending, traceShared).

// SigSet is a set of signals, bit sig-1 for signal sig (sigset_t).
type SigSet uint64

// SigSetOf returns the set of the given signals; numbers outside 1..64
// are left out.
func SigSetOf(sigs ...int) SigSet {
	var s SigSet
	for _, sig := range sigs {
		if validSignal(sig) {
			s |= SigSet(sigBit(sig))
		}
	}
	return s
}

// Has reports whether sig is in the set.
func (s SigSet) Has(sig int) bool { return validSignal(sig) && s&SigSet(sigBit(sig)) != 0 }

// unblockable is the set sigprocmask and sigsuspend never block.
const unblockable = SigSet(1<<(unix.SIGKILL-1) | 1<<(unix.SIGSTOP-1))

// sigQueue is a queue of pending signals (struct sigpending): set holds
// each pending signal once; rt counts the further sends of real-time
// signals pending more than once.
type sigQueue struct {
	set SigSet
	rt  map[int]int
}

// add queues sig: a standard signal already pending is not queued twice.
func (q *sigQueue) add(sig int) {
	if q.set.Has(sig) && sig >= abi.SIGRTMIN {
		if q.rt == nil {
			q.rt = make(map[int]int)
		}
		q.rt[sig]++
	}
	q.set |= SigSet(sigBit(sig))
}

// take dequeues one instance of sig and reports whether one was pending.
func (q *sigQueue) take(sig int) bool {
	if !q.set.Has(sig) {
		return false
	}
	if n := q.rt[sig]; n > 0 {
		q.rt[sig] = n - 1
		return true
	}
	q.set &^= SigSet(sigBit(sig))
	return true
}

// flush drops every instance of the signals in set.
func (q *sigQueue) flush(set SigSet) {
	q.set &^= set
	for sig := range q.rt {
		if set.Has(sig) {
			delete(q.rt, sig)
		}
	}
}

// next returns the signal dequeue_signal takes first among the pending
// ones in mask, 0 if none.
func (q *sigQueue) next(mask SigSet) int {
	if s := uint64(q.set & mask); s != 0 {
		return nextSignal(s)
	}
	return 0
}

// sigState is a thread's signal mask and queue, made when first needed:
// most threads never block a signal. It is guarded by the process lock.
type sigState struct {
	// blocked is t->blocked.
	blocked SigSet
	// waiting is the set a sigtimedwait in progress waits for, which its
	// sleep takes out of blocked; realBlocked is the mask it replaced
	// (t->real_blocked), which still keeps those signals from being
	// ignored or killing the process (sig_ignored, complete_signal).
	waiting, realBlocked SigSet
	// pending is t->pending: signals sent to the thread that it blocks.
	pending sigQueue
}

// sigs returns the thread's signal state, nil if it has none yet.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) sigsLocked() *sigState { return t.sig }

// makeSigsLocked returns the thread's signal state, making it if needed.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) makeSigsLocked() *sigState {
	if t.sig == nil {
		t.sig = &sigState{}
	}
	return t.sig
}

// blockedLocked returns the thread's mask.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) blockedLocked() SigSet {
	if t.sig == nil {
		return 0
	}
	return t.sig.blocked
}

// blocksLocked reports whether sig waits, pending, instead of reaching
// the thread: it is in the thread's mask, or in the mask a sigtimedwait
// replaced without waiting for it.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) blocksLocked(sig int) bool {
	t.assertProcessLocked()
	return t.sig != nil && t.sig.blocked.Has(sig)
}

// heldBackLocked reports whether sig is blocked or held by a sigtimedwait
// that waits for it: sig_ignored's test, under which a signal is queued
// whatever its disposition.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) heldBackLocked(sig int) bool {
	return t.sig != nil && (t.sig.blocked.Has(sig) || t.sig.realBlocked.Has(sig))
}

// sharedQueueLocked returns the process's queue of pending signals
// (signal->shared_pending), making it if needed.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) sharedQueueLocked() *sigQueue {
	if tg.sharedPending == nil {
		tg.sharedPending = &sigQueue{}
	}
	return tg.sharedPending
}

// blockedByAllLocked reports whether every running thread of tg blocks
// sig, so that a process-directed sig waits on the shared queue.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) blockedByAllLocked(sig int) bool {
	running := false
	for t := tg.threads.head; t != nil; t = t.threadLink.next {
		if tg.runsUnblockedLocked(t, sig) {
			return false
		}
		running = running || t.state.Load() == taskRunning
	}
	return running
}

// queueHeldLocked queues sig, which target (for a thread-directed signal)
// or every thread (for a process-directed one, shared) blocks, and reports
// true; false when sig reaches a thread now. SIGKILL and SIGSTOP are
// never blocked.
//
// Preconditions: tg.mu is held; target, if not nil, is a thread of tg.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) queueHeldLocked(target *Task, shared bool, sig int) bool {
	if sigKernelOnly(sig) {
		return false
	}
	if !shared {
		if !target.blocksLocked(sig) { // +checklocksignore: target is a thread of tg
			return false
		}
		target.sig.pending.add(sig) // +checklocksignore: as above
		return true
	}
	if !tg.blockedByAllLocked(sig) {
		return false
	}
	tg.sharedQueueLocked().add(sig)
	return true
}

// flushPendingLocked is prepare_signal's flush of the queues: SIGCONT
// drops the pending stop signals, a stop signal the pending SIGCONT, from
// the process's queue and every thread's.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) flushPendingLocked(set SigSet) {
	if tg.sharedPending != nil {
		tg.sharedPending.flush(set)
	}
	for t := tg.threads.head; t != nil; t = t.threadLink.next {
		t.assertProcessLocked() // +checklocksforce: t is a thread of tg
		if s := t.sigsLocked(); s != nil {
			s.pending.flush(set)
		}
	}
}

// takeUnblockedLocked makes the thread take the pending signals its mask
// no longer blocks, as get_signal dequeues them on its way back to user
// space: its own queue first, then the process's, each in next_signal's
// order. A traced thread stops for each in turn (ptrace_signal). An
// untraced one acts on each; a stop signal ends the run, the signals after
// it waiting, as a stopped thread dequeues nothing, until the process runs
// again (they join those a stopped process keeps). A fatal one's exits
// join b.
//
// Preconditions: t.tg.mu is held; t is running.
//
// +checklocks:t.tg.mu
func (t *Task) takeUnblockedLocked(b *exitBatch) {
	tg := t.tg
	for {
		mask := ^t.blockedLocked()
		sig, shared := 0, false
		if s := t.sigsLocked(); s != nil {
			sig = s.pending.next(mask)
		}
		if sig == 0 && tg.sharedPending != nil {
			sig, shared = tg.sharedPending.next(mask), true
		}
		if sig == 0 || tg.groupExiting || t.state.Load() != taskRunning {
			return
		}
		if shared {
			tg.sharedPending.take(sig)
		} else {
			t.sig.pending.take(sig)
		}
		if t.tracer.Load() != nil && sig != int(unix.SIGKILL) {
			t.traceSignalLocked(sig, shared)
			continue
		}
		if tg.stopped || tg.stopPending != 0 && lowestSignal(tg.stopPending) < sig {
			// A stop comes first (next_signal's order): a stopped
			// thread dequeues nothing more.
			tg.pendingSigs |= sigBit(sig)
			continue
		}
		// Queued past an init's send-time filter: get_signal lets only
		// SIGKILL and SIGSTOP act on it.
		tg.actOnSignalAsLocked(t, sig, true, true, b)
	}
}

// pendingSetLocked is what sigpending reports: the signals pending for
// the thread or its process that the thread blocks.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) pendingSetLocked() SigSet {
	s := t.sigsLocked()
	if s == nil {
		return 0
	}
	set := s.pending.set | SigSet(t.tg.pendingSigs)
	if q := t.tg.sharedPending; q != nil {
		set |= q.set
	}
	return set & s.blocked
}

// Sigprocmask is rt_sigprocmask(2): how is SIG_BLOCK, SIG_UNBLOCK or
// SIG_SETMASK, set the signals it applies (nil: only read the mask). It
// returns the mask as it was. SIGKILL and SIGSTOP are never blocked.
// Pending signals the new mask unblocks are taken before it returns:
// fatal ones kill the process, a stop signal stops it. Errors: ESRCH if
// the caller has exited; EINVAL for another how (with a set).
func (t *Task) Sigprocmask(how int, set *SigSet) (SigSet, error) {
	if !t.alive() {
		return 0, unix.ESRCH
	}
	tg := t.tg
	var b exitBatch
	defer b.run(t.k)
	// The process lock guards the thread's mask, the queues and what
	// taking a signal changes.
	tg.mu.Lock()
	defer tg.mu.Unlock()
	old := t.blockedLocked()
	if set == nil {
		return old, nil
	}
	next := old
	switch how {
	case unix.SIG_BLOCK:
		next |= *set
	case unix.SIG_UNBLOCK:
		next &^= *set
	case unix.SIG_SETMASK:
		next = *set
	default:
		return old, unix.EINVAL
	}
	t.setBlockedLocked(next, &b)
	return old, nil
}

// setBlockedLocked is set_current_blocked: the mask becomes mask, less
// SIGKILL and SIGSTOP, and the pending signals it unblocks are taken.
//
// Preconditions: t.tg.mu is held; t is running.
//
// +checklocks:t.tg.mu
func (t *Task) setBlockedLocked(mask SigSet, b *exitBatch) {
	mask &^= unblockable
	if mask == t.blockedLocked() {
		return
	}
	t.makeSigsLocked().blocked = mask
	t.takeUnblockedLocked(b)
}

// Sigpending is rt_sigpending(2): the signals pending for the caller or
// its process that the caller blocks. Errors: ESRCH if the caller has
// exited.
func (t *Task) Sigpending() (SigSet, error) {
	if !t.alive() {
		return 0, unix.ESRCH
	}
	// The process lock guards the mask and the queues.
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	return t.pendingSetLocked(), nil
}

// Tkill is tkill(2): sig goes to thread tid of the caller's namespace,
// whichever process it belongs to. Errors: EINVAL for tid <= 0 or an
// invalid signal; ESRCH when no such thread is found; EPERM.
func (t *Task) Tkill(tid, sig int) error {
	if !t.alive() {
		return unix.ESRCH
	}
	if tid <= 0 {
		return unix.EINVAL
	}
	p := t.tg.ns.Lookup(tid)
	if p == nil {
		return unix.ESRCH
	}
	return t.sendSpecific(p, sig)
}

// inheritMaskLocked gives child, a task clone has not published yet, the
// caller's mask (copy_process copies t->blocked); its queue starts empty.
//
// Preconditions: t.tg.mu is held; child is unpublished.
//
// +checklocks:t.tg.mu
func (t *Task) inheritMaskLocked(child *Task) {
	if m := t.blockedLocked(); m != 0 {
		child.sig = &sigState{blocked: m} // +checklocksignore: nobody else reaches child yet
	}
}

// traceKeptLocked moves the signals kept while t's process was stopped
// that t does not block, those sent to it alone and those on the
// process's queue, to the ones it stops for.
//
// Preconditions: t.tg.mu is held; t is traced.
//
// +checklocks:t.tg.mu
func (t *Task) traceKeptLocked() {
	mask := ^t.blockedLocked()
	if s := t.sigsLocked(); s != nil {
		for sig := s.pending.next(mask); sig != 0; sig = s.pending.next(mask) {
			s.pending.take(sig)
			t.tracePending |= sigBit(sig)
		}
	}
	if q := t.tg.sharedPending; q != nil {
		for sig := q.next(mask); sig != 0; sig = q.next(mask) {
			q.take(sig)
			t.traceShared |= sigBit(sig)
		}
	}
}
