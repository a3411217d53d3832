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
// Preconditions: ptg.mu is held; ptg is c's parent process.
//
// +checklocks:ptg.mu
// +checklocksignore: c's parent thread is one of ptg's, which checklocks
// cannot see through the parent pointer; assertParentLocked checks it at
// run time.
func (ptg *ThreadGroup) readyQueueOf(c *ThreadGroup) *readyQueue {
	c.assertParentLocked()
	return &c.parent.Load().ready[waitClass(c.exitSignal)]
}

// markReadyLocked queues a child that became a zombie for its parent's
// waiters.
//
// Preconditions: ptg.mu is held; ptg is c's parent process.
//
// +checklocks:ptg.mu
func (ptg *ThreadGroup) markReadyLocked(c *ThreadGroup) {
	heap.Push(ptg.readyQueueOf(c), c)
	ptg.nrZombies[waitClass(c.exitSignal)]++
}

// unmarkReadyLocked takes a child off its parent thread's ready queue.
//
// Preconditions: ptg.mu is held; ptg is c's parent process; c is queued.
//
// +checklocks:ptg.mu
func (ptg *ThreadGroup) unmarkReadyLocked(c *ThreadGroup) {
	heap.Remove(ptg.readyQueueOf(c), int(c.readyIdx))
	ptg.nrZombies[waitClass(c.exitSignal)]--
}

// jobQueueOf returns the job queue of c's parent thread for c's wait
// class.
//
// Preconditions: ptg.mu is held; ptg is c's parent process.
//
// +checklocks:ptg.mu
// +checklocksignore: as for readyQueueOf.
func (ptg *ThreadGroup) jobQueueOf(c *ThreadGroup) *jobQueue {
	c.assertParentLocked()
	return &c.parent.Load().jobs[waitClass(c.exitSignal)]
}

// markJobLocked queues a child with a stop or continue to report.
//
// Preconditions: ptg.mu is held; ptg is c's parent process; c is not on
// a job queue.
//
// +checklocks:ptg.mu
func (ptg *ThreadGroup) markJobLocked(c *ThreadGroup) { heap.Push(ptg.jobQueueOf(c), c) }

// unmarkJobLocked takes a child off its parent thread's job queue, if it
// is on it.
//
// Preconditions: ptg.mu is held; ptg is c's parent process.
//
// +checklocks:ptg.mu
func (ptg *ThreadGroup) unmarkJobLocked(c *ThreadGroup) {
	c.assertParentLocked()
	if c.jobIdx >= 0 {
		heap.Remove(ptg.jobQueueOf(c), int(c.jobIdx))
	}
}

// setExitSignalLocked changes child c's exit signal, moving it to the wait
// class the new signal puts it in.
//
// Preconditions: ptg.mu is held; ptg is c's parent process.
//
// +checklocks:ptg.mu
func (ptg *ThreadGroup) setExitSignalLocked(c *ThreadGroup, sig int32) {
	c.assertParentLocked()
	if c.exitSignal == sig {
		return
	}
	ready, job := c.readyIdx >= 0, c.jobIdx >= 0
	if ready {
		ptg.unmarkReadyLocked(c)
	}
	if job {
		ptg.unmarkJobLocked(c)
	}
	ptg.nrChildren[waitClass(c.exitSignal)]--
	c.exitSignal = sig
	ptg.nrChildren[waitClass(sig)]++
	if ready {
		ptg.markReadyLocked(c)
	}
	if job {
		ptg.markJobLocked(c)
	}
}

// adoptLocked makes thread p of ptg the parent of c, at the end of p's
// children list (list_add_tail, list_splice_tail).
//
// Preconditions: ptg.mu is held, and so is the lock of c's previous parent
// process if it has one; p is a thread of ptg (p.tg.mu is ptg.mu); c is
// on no ready queue.
//
// +checklocks:ptg.mu
// +checklocks:p.tg.mu
func (ptg *ThreadGroup) adoptLocked(c *ThreadGroup, p *Task) {
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
// Preconditions: ptg.mu is held; ptg is c's parent process.
//
// +checklocks:ptg.mu
func (ptg *ThreadGroup) claimZombieLocked(c *ThreadGroup) {
	c.assertParentLocked()
	if c.readyIdx >= 0 {
		ptg.unmarkReadyLocked(c)
	}
	ptg.unmarkJobLocked(c)
	c.exitState.Store(procDead)
	c.unlinkFromParentLocked(ptg)
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
