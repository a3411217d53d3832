package refmodel

import (
	"slices"

	"golang.org/x/sys/unix"
)

// Signal masks (kernel/signal.c sigprocmask, sig_ignored, complete_signal,
// dequeue_signal, do_sigtimedwait). A signal that the thread it is sent to
// blocks, or, sent to the process, that every live thread blocks, is
// queued and does nothing else until a thread unblocks it; then it is
// taken as get_signal takes it. The model queues nothing else: a signal
// that reaches a thread is acted on at once.

// rtMin is SIGRTMIN as the kernel numbers it: from there on, every send
// of a signal queues one more instance (legacy_queue).
const rtMin = 32

// queue is a queue of pending signals: each signal's count of instances.
type queue map[int]int

func (q *queue) add(sig int) {
	if *q == nil {
		*q = queue{}
	}
	if sig < rtMin && (*q)[sig] > 0 {
		return
	}
	(*q)[sig]++
}

// set is the pending signals as a mask.
func (q queue) set() uint64 {
	var s uint64
	for sig, n := range q {
		if n > 0 {
			s |= 1 << (sig - 1)
		}
	}
	return s
}

// take dequeues the signal next_signal picks among those in mask:
// synchronous ones first, then the lowest; 0 if none.
func (q queue) take(mask uint64) int {
	pending := q.set() & mask
	if pending == 0 {
		return 0
	}
	if pending&syncMask != 0 {
		pending &= syncMask
	}
	sig := 1
	for pending&(1<<(sig-1)) == 0 {
		sig++
	}
	if q[sig]--; q[sig] == 0 {
		delete(q, sig)
	}
	return sig
}

func (q queue) flush(mask uint64) {
	for sig := range q {
		if mask&(1<<(sig-1)) != 0 {
			delete(q, sig)
		}
	}
}

// flushQueues drops the signals in mask from every pending queue of pr
// (prepare_signal: SIGCONT and the stop signals flush each other).
func flushQueues(pr *process, mask uint64) {
	pr.shared.flush(mask)
	for _, t := range pr.threads {
		t.pending.flush(mask)
	}
}

// holdBlocked queues sig and reports true when it must wait for a thread
// to unblock it: thread to blocks it, or, for a process-directed signal,
// every running thread does. SIGKILL and SIGSTOP are never blocked.
func (m *Model) holdBlocked(pr *process, to *task, sig int) bool {
	bit := uint64(1) << (sig - 1)
	if sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP) {
		return false
	}
	if to != nil {
		if to.blocked&bit == 0 {
			return false
		}
		to.pending.add(sig)
		m.hits["signal held by a thread's mask"]++
		return true
	}
	running := slices.DeleteFunc(slices.Clone(pr.threads), func(t *task) bool { return t.state != running })
	if len(running) == 0 || slices.ContainsFunc(running, func(t *task) bool { return t.blocked&bit == 0 }) {
		return false
	}
	pr.shared.add(sig)
	m.hits["signal held by every mask"]++
	return true
}

// takeUnblocked makes t take the pending signals its mask lets through,
// its own first: a traced process stops for each, a stopped one keeps
// them for its SIGCONT, the others act on each as get_signal does.
func (m *Model) takeUnblocked(t *task) {
	pr := t.proc
	for !pr.groupExit && t.state == running {
		sig := t.pending.take(^t.blocked)
		private := sig != 0
		if !private {
			sig = pr.shared.take(^t.blocked)
		}
		if sig == 0 {
			return
		}
		m.hits["pending signal taken"]++
		switch {
		case pr.tracer != nil && sig != int(unix.SIGKILL):
			m.queueTraced(pr, sig, private)
		case pr.stopped || pr.stopPending != 0:
			pr.pendingSigs |= 1 << (sig - 1)
		default:
			m.actOn(pr, sig, true)
		}
	}
}

const unblockable = uint64(1)<<(unix.SIGKILL-1) | uint64(1)<<(unix.SIGSTOP-1)

// Sigprocmask is rt_sigprocmask for task tid: SIG_BLOCK, SIG_UNBLOCK or
// SIG_SETMASK with set; it returns the old mask. EINVAL for another how.
func (m *Model) Sigprocmask(tid, how int, set uint64) (uint64, error) {
	t := m.task(tid)
	if t == nil || t.state != running {
		return 0, unix.ESRCH
	}
	old := t.blocked
	switch how {
	case unix.SIG_BLOCK:
		t.blocked |= set
	case unix.SIG_UNBLOCK:
		t.blocked &^= set
	case unix.SIG_SETMASK:
		t.blocked = set
	default:
		return old, unix.EINVAL
	}
	t.blocked &^= unblockable
	m.takeUnblocked(t)
	m.settle()
	return old, nil
}

// Sigpending is rt_sigpending for task tid: the signals pending for it or
// its process that it blocks.
func (m *Model) Sigpending(tid int) (uint64, error) {
	t := m.task(tid)
	if t == nil || t.state != running {
		return 0, unix.ESRCH
	}
	return (t.pending.set() | t.proc.shared.set() | t.proc.pendingSigs) & t.blocked, nil
}

// Sigtimedwait is rt_sigtimedwait for task tid with a zero timeout: a
// pending signal of set, its own queue first, or EAGAIN.
func (m *Model) Sigtimedwait(tid int, set uint64) (int, error) {
	t := m.task(tid)
	if t == nil || t.state != running {
		return 0, unix.ESRCH
	}
	set &^= unblockable
	if sig := t.pending.take(set); sig != 0 {
		return sig, nil
	}
	if sig := t.proc.shared.take(set); sig != 0 {
		return sig, nil
	}
	return 0, unix.EAGAIN
}

// Tkill is tkill(2) by task tid to thread ttid of its namespace.
func (m *Model) Tkill(tid, ttid, sig int) error {
	t := m.task(tid)
	if t == nil || t.state != running {
		return unix.ESRCH
	}
	if ttid <= 0 {
		return unix.EINVAL
	}
	p := t.proc.ns.lookup(ttid)
	if p == nil {
		return unix.ESRCH
	}
	return m.sendSpecific(t, p, sig)
}
