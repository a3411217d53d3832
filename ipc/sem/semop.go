package sem

import (
	"context"
	"math"
	"time"

	"golang.org/x/sys/unix"
)

// Semop performs ops on the set id atomically (semop): either every
// operation proceeds or none does. An operation adds Op to its semaphore;
// a negative Op waits while the result would be negative, a zero Op waits
// while the value is not zero. The first operation that cannot proceed
// decides: with IPC_NOWAIT the call fails with EAGAIN, otherwise the caller
// sleeps until another call changes the set so that every operation
// proceeds; that call applies them on the sleeper's behalf. An operation
// that can proceed does so at once even if earlier callers are asleep
// (sleepers are served in FIFO order among themselves, without starvation
// protection). Each semaphore an applied call touched records the caller
// as its last operator. With SEM_UNDO the negated Op is added to the
// caller's adjustment for that semaphore, to be applied when the caller's
// undo list is released.
//
// Errors, in Linux's order: more than SEMOPM ops → E2BIG; no ops or id < 0
// → EINVAL; no such set → EINVAL; an index not below the set's size →
// EFBIG; read permission (write if any Op is nonzero) missing → EACCES;
// set removed → EIDRM; a result above SEMVMX or an adjustment outside
// [-SEMAEM-1, SEMAEM] → ERANGE; would sleep with IPC_NOWAIT → EAGAIN. While
// asleep: the set removed → EIDRM; ctx done → EINTR (a nil ctx is
// context.Background and is never done); and since the waker
// re-evaluates the whole call, ERANGE or EAGAIN (a later operation with
// IPC_NOWAIT that cannot proceed) are possible too.
func (ns *Namespace) Semop(ctx context.Context, c Caller, id int, ops []Sembuf) error {
	if len(ops) > ns.limits.SEMOPM {
		return unix.E2BIG
	}
	if len(ops) < 1 || id < 0 {
		return unix.EINVAL
	}
	return ns.semtimedop(ctx, c, id, ops, time.Time{})
}

// Semtimedop is [Namespace.Semop] with a timeout (semtimedop): a nil
// timeout waits forever; otherwise a caller still asleep timeout after the
// call began fails with EAGAIN. The deadline is fixed when the call begins.
// A timeout with a negative field or Nsec ≥ 1e9 fails with EINVAL (after
// the E2BIG and ops/id checks); a zero timeout still queues the caller for
// an instant, as Linux does.
func (ns *Namespace) Semtimedop(ctx context.Context, c Caller, id int, ops []Sembuf, timeout *unix.Timespec) error {
	if len(ops) > ns.limits.SEMOPM {
		return unix.E2BIG
	}
	if len(ops) < 1 || id < 0 {
		return unix.EINVAL
	}
	var deadline time.Time
	if timeout != nil {
		if timeout.Sec < 0 || timeout.Nsec < 0 || timeout.Nsec >= 1e9 {
			return unix.EINVAL
		}
		d := time.Duration(math.MaxInt64)
		if timeout.Sec < int64(d/time.Second)-1 {
			d = time.Duration(timeout.Sec)*time.Second + time.Duration(timeout.Nsec)
		}
		deadline = time.Now().Add(d)
	}
	return ns.semtimedop(ctx, c, id, ops, deadline)
}

// semtimedop mirrors __do_semtimedop after its argument checks. A zero
// deadline means none.
func (ns *Namespace) semtimedop(ctx context.Context, c Caller, id int, ops []Sembuf, deadline time.Time) error {
	if ctx == nil {
		ctx = context.Background() // as net/http treats a nil request context
	}
	maxNum, undos, alter := 0, false, false
	for _, op := range ops {
		maxNum = max(maxNum, int(op.Num))
		undos = undos || op.Flg&SEM_UNDO != 0
		alter = alter || op.Op != 0
	}
	var un *undo
	var s *Set
	var err error
	if undos {
		if c.Undo == nil {
			panic("sem: SEM_UNDO without an undo list")
		}
		un, s, err = c.Undo.findAlloc(ns, id)
	} else {
		s, err = ns.obtain(id)
	}
	if err != nil {
		return err
	}
	// The size never changes, so checking it before the lock gives the
	// answer Linux gave under it before seed 003 (docs/seeds.md).
	if maxNum >= s.nsems {
		return unix.EFBIG
	}
	want := 0o444
	if alter {
		want = 0o222
	}
	// access and checkLocked, written out: they are too big to inline,
	// and this is the path seed 003 measured.
	var read *perm
	if !s.lk.PermUnderLock {
		read = s.perm.Load()
		if !read.allows(&c.Creds, want) {
			return unix.EACCES
		}
	}
	op := semCall{ops: ops, un: un, pid: c.PID, want: want, read: read, alter: alter}
	// sem_lock: the semaphore's own lock, or the set's.
	locknum := s.lock(ops)
	w, wq, err := s.semopLocked(&op, &c.Creds, locknum)
	s.unlock(locknum)
	wq.wake()
	if w == nil {
		return err
	}
	return s.sleep(ctx, c.Sleeper, w, deadline)
}

// semCall is one semop call's operations and what was checked of it
// before the lock: read, the permissions checked (nil: none yet).
type semCall struct {
	ops   []Sembuf
	un    *undo
	pid   PID
	want  int
	read  *perm
	alter bool
}

// semopLocked is __do_semtimedop's work under the lock: the permission
// (for creds) and removal checks again if they may be stale, then the operations,
// all or none. It returns a waiter it queued, for the caller to sleep on
// once the lock is dropped, or the call's result, and the sleepers the
// operations completed, to wake after the lock.
//
// Preconditions: locknum is held, as lock(o.ops) returned it.
//
// +checklocksignore: lock decides at run time which lock it holds.
func (s *Set) semopLocked(o *semCall, creds *Creds, locknum int) (*waiter, wakeQ, error) {
	var wq wakeQ
	if s.perm.Load() != o.read || s.deleted.Load() {
		if errno := s.recheckLocked(creds, o.want); errno != 0 {
			return nil, wq, errno
		}
	}
	at, errno := s.performLocked(o.ops, o.un, o.pid)
	switch {
	case at == done && o.alter:
		s.doSmartUpdateLocked(o.ops, true, locknum == lockGlobal, &wq)
		return nil, wq, nil
	case at == done:
		s.setOtimeLocked(o.ops)
		return nil, wq, nil
	case errno != 0:
		return nil, wq, errno
	case s.skipsRevalidation() && s.deleted.Load():
		// The call is on a set removed since its lookup. Nothing would
		// ever wake it there, so it fails as IPC_RMID would have failed
		// it: the toggle's race gives wrong answers, never a hang.
		return nil, wq, unix.EIDRM
	}
	w := &waiter{
		ops:      append([]Sembuf(nil), o.ops...),
		undo:     o.un,
		pid:      o.pid,
		alter:    o.alter,
		blocking: at,
		wake:     make(chan struct{}, 1),
	}
	w.link.w = w
	w.status.Store(statusPending)
	s.enqueueLocked(w, locknum)
	return w, wq, nil
}

// enqueueLocked mirrors the queueing step of __do_semtimedop.
//
// Preconditions: locknum is held and w cannot proceed.
//
// +checklocksignore: the set's fields are touched only under lockGlobal.
func (s *Set) enqueueLocked(w *waiter, locknum int) {
	if len(w.ops) == 1 {
		sm := &s.sems[w.ops[0].Num]
		switch {
		case !w.alter:
			sm.pendingConst.pushBack(&w.link)
		case locknum == lockGlobal && s.complexCount > 0:
			s.pendingAlter.pushBack(&w.link)
		default:
			sm.pendingAlter.pushBack(&w.link)
		}
		return
	}
	if s.complexCount == 0 {
		s.mergeQueuesLocked()
	}
	if w.alter {
		s.pendingAlter.pushBack(&w.link)
	} else {
		s.pendingConst.pushBack(&w.link)
	}
	s.complexCount++
}

// sleep waits until a waker decides w's outcome, ctx is done, the
// sleeper interrupts or the deadline passes, and returns the outcome. The
// deadline is absolute, so nothing that wakes the sleeper early extends
// it.
func (s *Set) sleep(ctx context.Context, sl Sleeper, w *waiter, deadline time.Time) error {
	var expired <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expired = t.C
	}
	var interrupt <-chan struct{}
	if sl != nil {
		interrupt = sl.Sleeping(func() bool { return w.status.Load() == statusPending })
	}
	for again := true; again; {
		again = false
		select {
		case <-w.wake:
			// Under WakeAll a waker also wakes the sleepers it did not
			// complete; such a sleeper looks under the lock and sleeps
			// again. Otherwise a wake-up always comes with an outcome.
			again = s.stillPending(w)
		case <-ctx.Done():
		case <-expired:
		case <-interrupt:
		}
	}
	if sl != nil {
		sl.Awake()
	}
	if st := w.status.Load(); st != statusPending {
		return errnoOf(st)
	}
	locknum := s.lock(w.ops)
	defer s.unlock(locknum)
	// A waker may have decided while this sleeper waited for the lock.
	if st := w.status.Load(); st != statusPending {
		return errnoOf(st)
	}
	s.unlinkWaiterLocked(w)
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		return unix.EAGAIN
	}
	return unix.EINTR
}

// stillPending is a woken sleeper's look at its outcome, made under the
// lock that guards its queue when no outcome is visible yet (gVisor's
// sleeper retaking the set lock to retry). It reports whether no waker has
// decided w's outcome.
//
// +checklocksignore: lock decides at run time which lock it holds.
func (s *Set) stillPending(w *waiter) bool {
	if w.status.Load() != statusPending {
		return false
	}
	locknum := s.lock(w.ops)
	defer s.unlock(locknum)
	return w.status.Load() == statusPending
}

func errnoOf(status int32) error {
	if status == 0 {
		return nil
	}
	return unix.Errno(status)
}

// done is perform's index when every operation was applied.
const done = -1

// performLocked mirrors perform_atomic_semop_slow, which handles every case the
// fast variant does with the same result: it applies ops in order and, if
// one cannot proceed, undoes the ones before it. It returns (done, 0) when
// all were applied, (i, 0) when op i must wait, and (i, errno) when the
// call fails at op i: EAGAIN (op i must wait and has IPC_NOWAIT) or ERANGE.
//
// Preconditions: the set is locked for ops; un is non-nil if an op has
// SEM_UNDO.
func (s *Set) performLocked(ops []Sembuf, un *undo, pid PID) (int, unix.Errno) {
	l := &s.ns.limits
	for i, op := range ops {
		sm := &s.sems[op.Num]
		r := int(sm.val) + int(op.Op)
		if op.Op == 0 && sm.val != 0 || r < 0 {
			s.revertLocked(ops[:i], un)
			if op.Flg&unix.IPC_NOWAIT != 0 {
				return i, unix.EAGAIN
			}
			return i, 0
		}
		if r > l.SEMVMX {
			s.revertLocked(ops[:i], un)
			return i, unix.ERANGE
		}
		if op.Flg&SEM_UNDO != 0 {
			a := int(un.adj[op.Num]) - int(op.Op)
			if a < -l.SEMAEM-1 || a > l.SEMAEM {
				s.revertLocked(ops[:i], un)
				return i, unix.ERANGE
			}
			un.adj[op.Num] = int16(a)
		}
		sm.val = int32(r)
	}
	for _, op := range ops {
		s.sems[op.Num].pid = pid
	}
	return done, 0
}

// revertLocked undoes applied, newest first.
//
// Preconditions: the set is locked for applied.
func (s *Set) revertLocked(applied []Sembuf, un *undo) {
	for i := len(applied) - 1; i >= 0; i-- {
		op := applied[i]
		s.sems[op.Num].val -= int32(op.Op)
		if op.Flg&SEM_UNDO != 0 {
			un.adj[op.Num] += op.Op
		}
	}
}

// doSmartUpdateLocked mirrors do_smart_update: after ops (nil: any semaphore)
// changed the set, complete the sleepers that can now proceed. global
// reports whether the set lock is held; without it the set's queues are
// empty (see the package documentation) and are skipped. Under WakeAll
// every sleeper left queued is woken as well, to look again.
//
// Preconditions: the set is locked for ops.
//
// +checklocksignore: runs under a semaphore lock or the set lock.
func (s *Set) doSmartUpdateLocked(ops []Sembuf, otime, global bool, wq *wakeQ) {
	if s.wakeZeroLocked(ops, global, wq) {
		otime = true
	}
	switch {
	case global && !s.pendingAlter.empty():
		// Complex sleepers may wait on anything: scan them all in order.
		otime = s.updateQueueLocked(-1, global, wq) || otime
	case ops == nil:
		for i := range s.sems {
			otime = s.updateQueueLocked(i, global, wq) || otime
		}
	default:
		// Only an increment can let a single-op decrement proceed.
		for _, op := range ops {
			if op.Op > 0 {
				otime = s.updateQueueLocked(int(op.Num), global, wq) || otime
			}
		}
	}
	if otime {
		s.setOtimeLocked(ops)
	}
	if s.lk.WakeAll {
		s.nudgeAllLocked(wq) // WakeAll implies SetLockOnly: global is true
	}
}

// wakeZeroLocked mirrors do_smart_wakeup_zero: complete the wait-for-zero
// sleepers of every semaphore in ops (nil: any) that is now zero.
//
// Preconditions: the set is locked for ops; global as for
// doSmartUpdateLocked.
//
// +checklocksignore: runs under a semaphore lock or the set lock.
func (s *Set) wakeZeroLocked(ops []Sembuf, global bool, wq *wakeQ) bool {
	completed, gotZero := false, false
	try := func(num int) {
		if s.sems[num].val == 0 {
			gotZero = true
			completed = s.wakeConstLocked(&s.sems[num].pendingConst, wq) || completed
		}
	}
	if ops == nil {
		for i := range s.sems {
			try(i)
		}
	} else {
		for _, op := range ops {
			try(int(op.Num))
		}
	}
	if gotZero && global {
		completed = s.wakeConstLocked(&s.pendingConst, wq) || completed
	}
	return completed
}

// wakeConstLocked mirrors wake_const_ops for the queue q.
//
// Preconditions: the lock guarding q is held.
//
// +checklocksignore: runs under the lock that guards q.
func (s *Set) wakeConstLocked(q *queue, wq *wakeQ) bool {
	completed := false
	for l := q.head.next; l != &q.head; {
		next, w := l.next, l.w
		at, errno := s.performLocked(w.ops, w.undo, w.pid)
		if at != done && errno == 0 {
			w.blocking = at
		} else {
			s.unlinkWaiterLocked(w)
			wq.add(w, errno)
			completed = completed || errno == 0
		}
		l = next
	}
	return completed
}

// updateQueueLocked mirrors update_queue: try the altering sleepers of semaphore
// num (-1: the set's queue) in FIFO order, completing those that can now
// proceed.
//
// Preconditions: the lock guarding that queue is held; global as for
// doSmartUpdateLocked.
//
// +checklocksignore: runs under the lock that guards the queue.
func (s *Set) updateQueueLocked(num int, global bool, wq *wakeQ) bool {
	q := &s.pendingAlter
	if num >= 0 {
		q = &s.sems[num].pendingAlter
	}
	completed := false
again:
	for l := q.head.next; l != &q.head; {
		next, w := l.next, l.w
		// No decrement can proceed on a zero semaphore.
		if num >= 0 && s.sems[num].val == 0 {
			break
		}
		at, errno := s.performLocked(w.ops, w.undo, w.pid)
		if at != done && errno == 0 {
			w.blocking = at
			l = next
			continue
		}
		s.unlinkWaiterLocked(w)
		restart := false
		if errno == 0 {
			completed = true
			s.wakeZeroLocked(w.ops, global, wq)
			// check_restart: a completed single-op decrement cannot help
			// older single-op sleepers, which saw a larger value; anything
			// involving complex sleepers is rescanned.
			restart = global && !s.pendingAlter.empty() || len(w.ops) > 1
		}
		wq.add(w, errno)
		if restart {
			goto again
		}
		l = next
	}
	return completed
}

// setOtimeLocked mirrors set_semotime.
//
// Preconditions: the set is locked for ops.
func (s *Set) setOtimeLocked(ops []Sembuf) {
	num := 0
	if ops != nil {
		num = int(ops[0].Num)
	}
	s.sems[num].otime = now()
}
