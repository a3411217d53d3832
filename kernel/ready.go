package kernel

import (
	"container/heap"
	"slices"
)

// readyQueue holds the children of one thread that have something to
// report to wait, ordered by their place on that thread's children list.
// Linux's do_wait scans the calling thread's children list first, then the
// other threads' in thread order, and reports the first child that is
// ready; keeping each thread's ready children in a heap by list position
// finds that child without scanning the children that are not ready.
type readyQueue []*ThreadGroup

func (q readyQueue) Len() int           { return len(q) }
func (q readyQueue) Less(i, j int) bool { return q[i].sibOrd < q[j].sibOrd }
func (q readyQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].readyIdx, q[j].readyIdx = i, j
}
func (q *readyQueue) Push(x any) {
	c := x.(*ThreadGroup)
	c.readyIdx = len(*q)
	*q = append(*q, c)
}
func (q *readyQueue) Pop() any {
	old := *q
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	c.readyIdx = -1
	return c
}

// first returns the ready child earliest on the children list, or nil.
func (q readyQueue) first() *ThreadGroup {
	if len(q) == 0 {
		return nil
	}
	return q[0]
}

// inOrder returns the queue's children in children-list order.
func (q readyQueue) inOrder() []*ThreadGroup {
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
// cannot see through the parent pointer.
func (ptg *ThreadGroup) readyQueueOf(c *ThreadGroup) *readyQueue {
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
	heap.Remove(ptg.readyQueueOf(c), c.readyIdx)
	ptg.nrZombies[waitClass(c.exitSignal)]--
}

// adoptLocked makes thread p of ptg the parent of c, at the end of p's
// children list (list_add_tail, list_splice_tail).
//
// Preconditions: ptg.mu is held, and so is the lock of c's previous parent
// process if it has one; p is a thread of ptg; c is on no ready queue.
//
// +checklocks:ptg.mu
// +checklocksignore: p.tg is ptg, which checklocks cannot see.
func (ptg *ThreadGroup) adoptLocked(c *ThreadGroup, p *Task) {
	if old := c.parent.Load(); old != nil {
		old.nrChildren.Add(-1)
	}
	c.parent.Store(p)
	c.sibOrd = p.childSeq
	p.childSeq++
	p.nrChildren.Add(1)
}

// readyChildrenLocked returns every child on a ready queue of tg's threads.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
// +checklocksignore: the threads' queues are guarded by their t.tg.mu,
// which is tg.mu.
func (tg *ThreadGroup) readyChildrenLocked() []*ThreadGroup {
	var cs []*ThreadGroup
	for th := tg.threads.head; th != nil; th = th.threadLink.next {
		for _, q := range th.ready {
			cs = append(cs, q...)
		}
	}
	return cs
}
