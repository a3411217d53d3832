package sem

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"tasklist/lockstat"
	"tasklist/plan"
)

// hysteresis is USE_GLOBAL_LOCK_HYSTERESIS: the number of global-lock
// releases with no complex sleeper after which a set returns to
// per-semaphore locking.
const hysteresis = 10

// lockGlobal is the lock number of a caller holding the set lock
// (SEM_GLOBAL_LOCK); other lock numbers name one semaphore.
const lockGlobal = -1

// Set is one semaphore set (struct sem_array).
type Set struct {
	ns    *Namespace
	id    int
	key   int32
	nsems int
	// lk is the namespace's locking design, kept here so that a call
	// reads it from the set it already has in hand.
	lk plan.SemLocking

	// perm is replaced, never changed, by IPC_SET under mu.
	perm atomic.Pointer[perm]
	// deleted is ipc_valid_object's negation: set by IPC_RMID under mu
	// in global mode, read under either lock.
	deleted atomic.Bool
	// useGlobal is use_global_lock: nonzero while the set is in global
	// mode, counting down the hysteresis. Changed only under mu.
	useGlobal atomic.Int32

	mu lockstat.Mutex
	// complexCount counts the complex sleepers (complex_count).
	// +checklocks:mu
	complexCount int
	// pendingAlter holds complex altering sleepers, and single-op ones
	// while complexCount > 0; pendingConst holds complex sleepers that
	// only wait for zero.
	// +checklocks:mu
	pendingAlter queue
	// +checklocks:mu
	pendingConst queue
	// undos are the set's undo entries, one per undo list (list_id).
	// +checklocks:mu
	undos map[*undo]struct{}
	// +checklocks:mu
	ctime int64

	sems []sem
}

// sem is one semaphore (struct sem). Its fields after mu are guarded by mu
// while the set is in fine-grained mode and by Set.mu in global mode.
type sem struct {
	mu    lockstat.Mutex
	val   int32
	pid   PID // last operator, nil if none
	otime int64
	// pendingAlter holds single-op sleepers that decrement this semaphore
	// (increments never sleep); pendingConst those waiting for zero.
	pendingAlter queue
	pendingConst queue
}

func newSet(ns *Namespace, id int, key int32, nsems int, p *perm) *Set {
	s := &Set{ns: ns, id: id, key: key, nsems: nsems, lk: ns.locking, sems: make([]sem, nsems)}
	s.perm.Store(p)
	s.useGlobal.Store(hysteresis)
	s.mu.Init(setClass, 0)
	s.pendingAlter.init()
	s.pendingConst.init()
	s.undos = make(map[*undo]struct{})
	s.ctime = now()
	for i := range s.sems {
		sm := &s.sems[i]
		sm.mu.Init(semClass, 0)
		sm.pendingAlter.init()
		sm.pendingConst.init()
	}
	return s
}

// lock mirrors sem_lock. A call with one operation takes that semaphore's
// lock unless the set is in global mode; any other call (ops of another
// length, nil for semctl), and every call under SetLockOnly, takes the set
// lock and enters global mode. It returns the lock number to pass to
// unlock.
//
// +checklocksignore: which lock it returns holding is decided at run time.
func (s *Set) lock(ops []Sembuf) int {
	if len(ops) != 1 || s.lk.SetLockOnly {
		s.lockAll()
		return lockGlobal
	}
	num := int(ops[0].Num)
	sm := &s.sems[num]
	// The second load pairs with complexmodeEnter's store-then-drain: either
	// it sees global mode or the drain waits for this holder.
	if s.useGlobal.Load() == 0 {
		sm.mu.Lock()
		if s.useGlobal.Load() == 0 {
			return num
		}
		sm.mu.Unlock()
	}
	s.mu.Lock()
	if s.useGlobal.Load() == 0 {
		// The set left global mode meanwhile; only the set lock's holder
		// can enter it again, so the semaphore lock suffices once held.
		sm.mu.Lock()
		s.mu.Unlock()
		return num
	}
	return lockGlobal
}

// unlock mirrors sem_unlock.
//
// +checklocksignore: releases the lock lock returned.
func (s *Set) unlock(locknum int) {
	if locknum == lockGlobal {
		s.unlockAll()
		return
	}
	s.sems[locknum].mu.Unlock()
}

// lockAll takes the set lock in global mode (sem_lock with nsops -1).
//
// +checklocksacquire:s.mu
func (s *Set) lockAll() {
	s.mu.Lock()
	s.complexmodeEnterLocked()
}

// unlockAll releases the set lock, first returning single-op sleepers to
// their semaphores if no complex sleeper is left and counting down the
// hysteresis.
//
// +checklocksrelease:s.mu
func (s *Set) unlockAll() {
	s.unmergeQueuesLocked()
	s.complexmodeTryLeaveLocked()
	s.mu.Unlock()
}

// complexmodeEnterLocked mirrors complexmode_enter: announce global mode, then
// wait out every single-op holder that missed the announcement.
//
// Preconditions: s.mu is held.
//
// +checklocks:s.mu
func (s *Set) complexmodeEnterLocked() {
	if s.useGlobal.Load() > 0 {
		s.useGlobal.Store(hysteresis)
		return
	}
	s.useGlobal.Store(hysteresis)
	for i := range s.sems {
		s.sems[i].mu.Lock()
		s.sems[i].mu.Unlock()
	}
}

// complexmodeTryLeaveLocked mirrors complexmode_tryleave. Under
// SetLockOnly the set never leaves global mode, so the semaphore locks are
// never taken: not by a single-op call, nor by a drain.
//
// Preconditions: s.mu is held in global mode.
//
// +checklocks:s.mu
func (s *Set) complexmodeTryLeaveLocked() {
	if s.complexCount > 0 || s.lk.SetLockOnly {
		return
	}
	s.useGlobal.Add(-1)
}

// mergeQueuesLocked mirrors merge_queues: before the first complex sleeper
// queues, every single-op altering sleeper moves to the set's queue so that
// the FIFO scan sees them all.
//
// Preconditions: s.mu is held in global mode.
//
// +checklocks:s.mu
func (s *Set) mergeQueuesLocked() {
	for i := range s.sems {
		s.pendingAlter.spliceBack(&s.sems[i].pendingAlter)
	}
}

// unmergeQueuesLocked mirrors unmerge_queues.
//
// Preconditions: s.mu is held in global mode.
//
// +checklocks:s.mu
func (s *Set) unmergeQueuesLocked() {
	if s.complexCount > 0 {
		return
	}
	q := &s.pendingAlter
	for l := q.head.next; l != &q.head; {
		next := l.next
		s.sems[l.w.ops[0].Num].pendingAlter.pushBack(l)
		l = next
	}
	q.init()
}

// access is the permission check a call makes before it locks the set:
// ipcperms right after ipc_obtain_object_check, outside the lock (seed
// 003). It returns the permissions it read, for checkLocked, and whether
// they grant want; under PermUnderLock it reads nothing and grants
// anything, leaving the check to checkLocked.
func (s *Set) access(c *Creds, want int) (read *perm, ok bool) {
	if s.lk.PermUnderLock {
		return nil, true
	}
	read = s.perm.Load()
	return read, read.allows(c, want)
}

// checkLocked is what a call checks once it holds a lock of the set it
// looked up without one: that IPC_RMID has not removed the set since
// (ipc_valid_object; EIDRM), then that c has the permission want (EACCES).
// Under PermUnderLock, where access checked nothing, this is the
// permission check (ipc_lock_check, then ipcperms under the lock, before
// seed 003, docs/seeds.md); otherwise it is redone only if IPC_SET replaced the
// permissions access read. Under NoRevalidate nothing is checked again:
// the call acts on whatever set it looked up. It returns 0 if the call may
// go on.
//
// Preconditions: the set is locked for the call.
func (s *Set) checkLocked(read *perm, c *Creds, want int) unix.Errno {
	if s.deleted.Load() || s.perm.Load() != read {
		return s.recheckLocked(c, want)
	}
	return 0
}

// recheckLocked is checkLocked's answer when the set was removed, its
// permissions replaced, or not yet checked (read nil).
//
// Preconditions: the set is locked for the call.
func (s *Set) recheckLocked(c *Creds, want int) unix.Errno {
	switch {
	case s.skipsRevalidation():
		return 0
	case s.deleted.Load():
		return unix.EIDRM
	case !s.perm.Load().allows(c, want):
		return unix.EACCES
	}
	return 0
}

// eachQueueLocked calls f on every sleeper queue of s: the set's, then each
// semaphore's.
//
// Preconditions: s.mu is held in global mode.
//
// +checklocks:s.mu
func (s *Set) eachQueueLocked(f func(q *queue)) {
	f(&s.pendingConst)
	f(&s.pendingAlter)
	for i := range s.sems {
		f(&s.sems[i].pendingConst)
		f(&s.sems[i].pendingAlter)
	}
}

// failAllLocked fails every sleeper with errno (freeary's part that wakes
// the queues) and forgets every semaphore's last operator.
//
// Preconditions: s.mu is held in global mode.
//
// +checklocks:s.mu
func (s *Set) failAllLocked(errno unix.Errno, wq *wakeQ) {
	s.eachQueueLocked(func(q *queue) {
		for l := q.head.next; l != &q.head; {
			next := l.next
			s.unlinkWaiterLocked(l.w)
			wq.add(l.w, errno)
			l = next
		}
	})
	for i := range s.sems {
		s.sems[i].pid = nil
	}
}

// nudgeAllLocked wakes every sleeper still queued on s to look again,
// leaving it queued (WakeAll; see the package documentation).
//
// Preconditions: s.mu is held in global mode.
//
// +checklocks:s.mu
func (s *Set) nudgeAllLocked(wq *wakeQ) {
	s.eachQueueLocked(func(q *queue) {
		for l := q.head.next; l != &q.head; l = l.next {
			wq.nudge(l.w)
		}
	})
}

// statusPending is a waiter's status until a waker decides its outcome.
const statusPending = -1

// waiter is a sleeping semop (struct sem_queue).
type waiter struct {
	link
	ops   []Sembuf
	undo  *undo
	pid   PID
	alter bool
	// blocking is the index of the operation that made it sleep the last
	// time it was tried; GETNCNT and GETZCNT count by it.
	blocking int
	// status is statusPending, 0 on success, or an errno; written by the
	// waker under the lock that guards the waiter's queue.
	status atomic.Int32
	wake   chan struct{}
}

// unlinkWaiterLocked mirrors unlink_queue.
//
// Preconditions: the lock guarding w's queue is held.
//
// +checklocksignore: in fine-grained mode only single-op waiters are
// unlinked, which leave complexCount alone.
func (s *Set) unlinkWaiterLocked(w *waiter) {
	w.link.unlink()
	if len(w.ops) > 1 {
		s.complexCount--
	}
}

// wakeQ collects the waiters whose outcome a critical section decided, to
// be woken after the locks are released (wake_q), and, under WakeAll, the
// waiters it leaves queued but wakes to look again.
type wakeQ []*waiter

// add records w's outcome (wake_up_sem_queue_prepare).
func (wq *wakeQ) add(w *waiter, errno unix.Errno) {
	w.status.Store(int32(errno))
	*wq = append(*wq, w)
}

// nudge wakes w without deciding its outcome: w looks under the lock, finds
// none and sleeps again (WakeAll).
func (wq *wakeQ) nudge(w *waiter) { *wq = append(*wq, w) }

// wake wakes every collected waiter (wake_up_q). A waiter's channel holds
// one token; one already there (a nudge not yet seen) wakes it just as
// well, and it then finds its outcome.
func (wq wakeQ) wake() {
	for _, w := range wq {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// link is an intrusive doubly linked list node; a queue's head is a link
// with no waiter, so a waiter can leave its queue without knowing which
// queue it is on, as with Linux's list_head.
type link struct {
	next, prev *link
	w          *waiter
}

func (l *link) unlink() {
	l.prev.next = l.next
	l.next.prev = l.prev
	l.next, l.prev = nil, nil
}

type queue struct{ head link }

func (q *queue) init() { q.head.next, q.head.prev = &q.head, &q.head }

func (q *queue) empty() bool { return q.head.next == &q.head }

func (q *queue) pushBack(l *link) {
	l.prev, l.next = q.head.prev, &q.head
	q.head.prev.next = l
	q.head.prev = l
}

// spliceBack moves every node of from to the end of q.
func (q *queue) spliceBack(from *queue) {
	if from.empty() {
		return
	}
	first, last := from.head.next, from.head.prev
	first.prev, last.next = q.head.prev, &q.head
	q.head.prev.next = first
	q.head.prev = last
	from.init()
}
