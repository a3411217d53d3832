package kernel

import (
	"golang.org/x/sys/unix"
)

// The queue of a process's sleeping waiters (signal->wait_chldexit). Every
// wake-up names the task it is about, as __wake_up_parent passes the child
// as the key, and child_wait_callback wakes only the waiters that task
// concerns (pid_child_should_wake): a wait for one pid or one process
// group sleeps through the news of other tasks. The wait class is no
// filter: a __WCLONE waiter wakes for a SIGCHLD child, rescans, and may
// find it has nothing left to wait for (ECHILD).

// childWait is one wait4 or waitid call on its process's queue (struct
// wait_opts with its child_wait entry).
type childWait struct {
	t    *Task
	sel  waitSelector
	opts int
}

// queuedWait is a waiter on its process's queue, with the channel the
// next wake-up that concerns it closes; a wake-up takes it off the queue.
type queuedWait struct {
	w    *childWait
	wake chan struct{}
}

// shouldWake is pid_child_should_wake for a wake-up about task p:
// eligible_pid (any child, the task whose pid the wait names, or a task
// of the process group it named at the call) and, with __WNOTHREAD, p's
// parent being the waiting thread itself.
func (w *childWait) shouldWake(p *Task) bool {
	switch {
	case w.sel.all:
	case w.sel.pgrp:
		if p.tg.pgrp.Load().id != w.sel.pid {
			return false
		}
	case p.pid.Load() != w.sel.pid:
		return false
	}
	return w.opts&unix.WNOTHREAD == 0 || p.waitParent() == w.t
}

// waitParent is t->parent: the tracer of a traced task, else its real
// parent.
func (t *Task) waitParent() *Task {
	if tracer := t.tracer.Load(); tracer != nil {
		return tracer
	}
	return t.tg.parent.Load()
}

// sleepChanLocked puts the waiter on its process's queue if it is not on
// it yet (add_wait_queue) and returns the channel the next wake-up that
// concerns it closes.
//
// Preconditions: tg.mu is held; tg is the waiter's process.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) sleepChanLocked(w *childWait) chan struct{} {
	for _, q := range tg.waiters {
		if q.w == w {
			return q.wake
		}
	}
	wake := make(chan struct{})
	tg.waiters = append(tg.waiters, queuedWait{w, wake})
	return wake
}

// dequeueWaiter takes a waiter whose call is over off its process's
// queue (remove_wait_queue).
func (tg *ThreadGroup) dequeueWaiter(w *childWait) {
	// The process lock guards its queue of waiters.
	tg.mu.Lock()
	tg.dropWaiterLocked(w)
	tg.mu.Unlock()
}

// dropWaiterLocked removes w from the queue, if it is on it.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) dropWaiterLocked(w *childWait) {
	for i, q := range tg.waiters {
		if q.w == w {
			last := len(tg.waiters) - 1
			tg.waiters[i], tg.waiters[last] = tg.waiters[last], queuedWait{}
			tg.waiters = tg.waiters[:last]
			return
		}
	}
}

// wakeWaitersLocked is __wake_up_parent(p, parent) on tg, the parent's
// (or tracer's) process: the waiters that p concerns wake and leave the
// queue until they sleep again.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) wakeWaitersLocked(p *Task) {
	kept := tg.waiters[:0]
	for _, q := range tg.waiters {
		if q.w.shouldWake(p) {
			close(q.wake)
			continue
		}
		kept = append(kept, q)
	}
	clear(tg.waiters[len(kept):])
	tg.waiters = kept
}
