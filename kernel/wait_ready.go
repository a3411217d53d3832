package kernel

import (
	"container/heap"
	"slices"
)

// childQueue holds children of one thread that have something to report
// to wait, ordered by their place on that thread's children list. Linux's
// do_wait scans the calling thread's children list first, then the other
// threads' in thread order, and reports the first child that is ready;
// keeping each thread's ready children in a heap by list position finds
// that child without scanning the children that are not ready. A child
// sits on a queue of each kind it has to report; I says which of its
// index fields records its place.
type childQueue[I queueIndex] []*ThreadGroup

// queueIndex picks a child's index field for one kind of queue.
type queueIndex interface{ of(*ThreadGroup) *int32 }

type zombieIndex struct{}

func (zombieIndex) of(c *ThreadGroup) *int32 { return &c.readyIdx }

type jobIndex struct{}

func (jobIndex) of(c *ThreadGroup) *int32 { return &c.jobIdx }

// readyQueue holds zombies; jobQueue holds children with a stop or a
// continue to report.
type (
	readyQueue = childQueue[zombieIndex]
	jobQueue   = childQueue[jobIndex]
)

func (q childQueue[I]) Len() int           { return len(q) }
func (q childQueue[I]) Less(i, j int) bool { return q[i].sibOrd < q[j].sibOrd }
func (q childQueue[I]) Swap(i, j int) {
	var ix I
	q[i], q[j] = q[j], q[i]
	*ix.of(q[i]), *ix.of(q[j]) = int32(i), int32(j)
}
func (q *childQueue[I]) Push(x any) {
	var ix I
	c := x.(*ThreadGroup)
	*ix.of(c) = int32(len(*q))
	*q = append(*q, c)
}
func (q *childQueue[I]) Pop() any {
	var ix I
	old := *q
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	*ix.of(c) = -1
	return c
}

// first returns the ready child earliest on the children list, or nil.
func (q childQueue[I]) first() *ThreadGroup {
	if len(q) == 0 {
		return nil
	}
	return q[0]
}

// inOrder returns the queue's children in children-list order.
func (q childQueue[I]) inOrder() []*ThreadGroup {
	s := slices.Clone([]*ThreadGroup(q))
	slices.SortFunc(s, func(a, b *ThreadGroup) int {
		switch {
		case a.sibOrd < b.sibOrd:
			return -1
		case a.sibOrd > b.sibOrd:
			return 1
		}
		return 0
	})
	return s
}

// readyQueueOf returns the queue of c's parent thread for c's wait class.
//
// Preconditions: tg.mu is held; tg is c's parent process.
//
// +checklocks:tg.mu
// +checklocksignore: c's parent thread is one of tg's, which checklocks
// cannot see through the parent pointer; assertParentLocked checks it at
// run time.
func (tg *ThreadGroup) readyQueueOf(c *ThreadGroup) *readyQueue {
	c.assertParentLocked()
	return &c.parent.Load().ready[waitClass(c.exitSignal)]
}

// markReadyLocked queues a child that became a zombie for its parent's
// waiters.
//
// Preconditions: tg.mu is held; tg is c's parent process.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) markReadyLocked(c *ThreadGroup) {
	heap.Push(tg.readyQueueOf(c), c)
	tg.nrZombies[waitClass(c.exitSignal)]++
}

// unmarkReadyLocked takes a child off its parent thread's ready queue.
//
// Preconditions: tg.mu is held; tg is c's parent process; c is queued.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) unmarkReadyLocked(c *ThreadGroup) {
	heap.Remove(tg.readyQueueOf(c), int(c.readyIdx))
	tg.nrZombies[waitClass(c.exitSignal)]--
}

// jobQueueOf returns the job queue of c's parent thread for c's wait
// class.
//
// Preconditions: tg.mu is held; tg is c's parent process.
//
// +checklocks:tg.mu
// +checklocksignore: as for readyQueueOf.
func (tg *ThreadGroup) jobQueueOf(c *ThreadGroup) *jobQueue {
	c.assertParentLocked()
	return &c.parent.Load().jobs[waitClass(c.exitSignal)]
}

// markJobLocked queues a child with a stop or continue to report.
//
// Preconditions: tg.mu is held; tg is c's parent process; c is not on
// a job queue.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) markJobLocked(c *ThreadGroup) { heap.Push(tg.jobQueueOf(c), c) }

// unmarkJobLocked takes a child off its parent thread's job queue, if it
// is on it.
//
// Preconditions: tg.mu is held; tg is c's parent process.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) unmarkJobLocked(c *ThreadGroup) {
	c.assertParentLocked()
	if c.jobIdx >= 0 {
		heap.Remove(tg.jobQueueOf(c), int(c.jobIdx))
	}
}

// setExitSignalLocked changes child c's exit signal, moving it to the wait
// class the new signal puts it in.
//
// Preconditions: tg.mu is held; tg is c's parent process.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) setExitSignalLocked(c *ThreadGroup, sig int32) {
	c.assertParentLocked()
	if c.exitSignal == sig {
		return
	}
	ready, job := c.readyIdx >= 0, c.jobIdx >= 0
	if ready {
		tg.unmarkReadyLocked(c)
	}
	if job {
		tg.unmarkJobLocked(c)
	}
	tg.nrChildren[waitClass(c.exitSignal)]--
	c.exitSignal = sig
	tg.nrChildren[waitClass(sig)]++
	if ready {
		tg.markReadyLocked(c)
	}
	if job {
		tg.markJobLocked(c)
	}
}

// adoptLocked makes thread p of tg the parent of c, at the end of p's
// children list (list_add_tail, list_splice_tail).
//
// Preconditions: tg.mu is held, and so is the lock of c's previous parent
// process if it has one; p is a thread of tg (p.tg.mu is tg.mu); c is
// on no ready queue.
//
// +checklocks:tg.mu
// +checklocks:p.tg.mu
func (tg *ThreadGroup) adoptLocked(c *ThreadGroup, p *Task) {
	c.assertParentLocked()
	if old := c.parent.Load(); old != nil {
		old.nrChildren.Add(-1)
	}
	c.parent.Store(p)
	c.sibOrd = p.childSeq
	p.childSeq++
	p.nrChildren.Add(1)
}

// lockParentOf locks the process of tg's parent, retrying while a
// reparent moves tg meanwhile, and returns it; tg's parent thread cannot
// change until it is unlocked. Every caller takes it to change or read
// the parent's view of tg, which that lock guards.
//
// Preconditions: tg is not the root init (it has a parent).
//
// +checklocksacquire:ptg.mu
func (tg *ThreadGroup) lockParentOf() (ptg *ThreadGroup) {
	for {
		parent := tg.parent.Load()
		ptg = parent.tg
		// A reparent holds the old and the new parent's locks: with
		// this one held, the parent it names stays.
		ptg.mu.Lock()
		if tg.parent.Load() == parent {
			return ptg
		}
		ptg.mu.Unlock()
	}
}

// claimZombieLocked takes a zombie child off its parent's lists as dead,
// for the caller to release once the lock is dropped (C9: the one claim
// under the parent's lock). A zombie that its tracer held was never on
// the ready queue.
//
// Preconditions: tg.mu is held; tg is c's parent process.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) claimZombieLocked(c *ThreadGroup) {
	c.assertParentLocked()
	if c.readyIdx >= 0 {
		tg.unmarkReadyLocked(c)
	}
	tg.unmarkJobLocked(c)
	c.exitState.Store(procDead)
	c.unlinkFromParentLocked(tg)
}

// readyChildrenLocked returns every child on a ready queue of tg's threads.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) readyChildrenLocked() []*ThreadGroup {
	var cs []*ThreadGroup
	for th := tg.threads.head; th != nil; th = th.threadLink.next {
		th.assertProcessLocked() // +checklocksforce: th is a thread of tg
		for _, q := range th.ready {
			cs = append(cs, q...)
		}
	}
	return cs
}
