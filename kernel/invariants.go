package kernel

import (
	"errors"
	"fmt"
)

// CheckInvariants verifies the whole table and returns every violation it
// finds, joined. It is meant for a quiescent kernel (after Quiesce, with no
// call in progress); concurrent calls may make it report transient states.
//
// It checks that: every pid number maps back to its pid in every level of
// every namespace, and each allocator's count matches its table; each
// pid's reference count matches its users; every task is on its process's
// thread list and each process's live count matches; every live process
// has a parent that can still adopt it, is on that parent's children list,
// and is counted in its wait class; every zombie is on its parent's ready
// list and only zombies are; every process is a member of its process
// group; every namespace's child reaper is a thread of its init; and users'
// RLIMIT_NPROC counts match the tasks charged to them.
func (k *Kernel) CheckInvariants() error {
	c := &checker{k: k, namespaces: map[*PIDNamespace]bool{}, procs: map[*ThreadGroup]bool{},
		userTasks: map[*User]int64{}}
	c.walkPIDs()
	for tg := range c.procs {
		c.checkProcess(tg)
	}
	for ns := range c.namespaces {
		c.checkNamespace(ns)
	}
	k.users.Range(func(_, v any) bool {
		u := v.(*User)
		if got, want := u.tasks.Load(), c.userTasks[u]; got != want {
			c.fail("uid %d counts %d tasks, %d are charged to it", u.uid, got, want)
		}
		return true
	})
	return errors.Join(c.errs...)
}

type checker struct {
	k          *Kernel
	namespaces map[*PIDNamespace]bool
	procs      map[*ThreadGroup]bool
	userTasks  map[*User]int64
	errs       []error
}

func (c *checker) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// walkPIDs visits every pid through the root namespace, where all of them
// are visible.
func (c *checker) walkPIDs() {
	c.k.rootNS.alloc.Range(func(nr int, p *PID) bool {
		t := p.task.Load()
		if t != nil && t.state.Load() < taskRunning {
			c.fail("pid %d: an unfinished clone is published", nr)
			return true
		}
		for ns := p.ns; ns != nil; ns = ns.parent {
			c.namespaces[ns] = true
			if got := ns.alloc.Load(int(p.nrs[ns.level])); got != p {
				c.fail("pid %d: level %d number %d maps to another pid", nr, ns.level, p.nrs[ns.level])
			}
		}
		refs := int32(0)
		if t != nil {
			refs++
			if t.pid != p {
				c.fail("pid %d: its task has another pid", nr)
			}
			if t.state.Load() == taskDead {
				c.fail("pid %d: task is released but still published", nr)
			}
			c.procs[t.tg] = true
			if u := t.user.Load(); u != nil {
				c.userTasks[u]++
			}
		}
		if g := p.pgrp.Load(); g != nil {
			refs++
			if g.id != p {
				c.fail("pid %d names a process group with another id", nr)
			}
		}
		if s := p.session.Load(); s != nil {
			refs++
			if s.id != p {
				c.fail("pid %d names a session with another id", nr)
			}
		}
		if got := p.refs.Load(); got != refs {
			c.fail("pid %d: %d references, %d users", nr, got, refs)
		}
		return true
	})
}

func (c *checker) checkNamespace(ns *PIDNamespace) {
	n := 0
	ns.alloc.Range(func(nr int, p *PID) bool {
		n++
		if p.nrIn(ns) != nr {
			c.fail("ns level %d: number %d holds a pid of another namespace", ns.level, nr)
		}
		return true
	})
	if got := ns.alloc.Count(); got != n {
		c.fail("ns level %d: allocator counts %d pids, table holds %d", ns.level, got, n)
	}
	// A zapped namespace keeps pointing at its last reaper, as Linux's
	// pid_ns->child_reaper does: its init's zombie leader may outlive
	// the thread that zapped it, and nothing can be adopted any more.
	if r := ns.childReaper.Load(); r != nil && ns.alloc.Count() > 0 && !ns.alloc.Disabled() {
		if r.tg.leader.Load().pid.nrIn(ns) != 1 && r.tg.ns == ns {
			c.fail("ns level %d: child reaper is not a thread of pid 1", ns.level)
		}
		if r.state.Load() == taskDead {
			c.fail("ns level %d: child reaper was released", ns.level)
		}
	}
}

func (c *checker) checkProcess(tg *ThreadGroup) {
	leader := tg.leader.Load()
	id := leader.pid.nrs[0]
	tg.mu.Lock()
	live := 0
	tg.threads.each(threadLinkOf, func(t *Task) bool {
		if t.tg != tg {
			c.fail("process %d lists a thread of another process", id)
		}
		if t.state.Load() == taskRunning {
			live++
		}
		return true
	})
	if live != tg.liveThreads {
		c.fail("process %d: %d running threads, live count %d", id, live, tg.liveThreads)
	}
	zombie := tg.exitState.Load() == procZombie
	if zombie && (tg.threads.len != 1 || leader.state.Load() != taskZombie) {
		c.fail("process %d is a zombie but its leader is not alone and exited", id)
	}
	var counted [2]int
	perThread := map[*Task]int32{}
	for ch := tg.children.head; ch != nil; ch = ch.siblingLink.next {
		if p := ch.parent.Load(); p.tg != tg {
			c.fail("process %d: child %d has another parent", id, ch.leader.Load().pid.nrs[0])
		} else {
			perThread[p]++
		}
		counted[waitClass(ch.exitSignal)]++
	}
	if counted != tg.nrChildren {
		c.fail("process %d: children per class %v, counted %v", id, counted, tg.nrChildren)
	}
	for t := tg.threads.head; t != nil; t = t.threadLink.next {
		if got := t.nrChildren.Load(); got != perThread[t] {
			c.fail("thread %d counts %d children, %d are listed", t.pid.nrs[0], got, perThread[t])
		}
		delete(perThread, t)
	}
	if len(perThread) != 0 {
		c.fail("process %d has children of a thread that is gone", id)
	}
	c.checkReadyQueuesLocked(tg, id)
	tg.mu.Unlock()

	if g := tg.pgrp.Load(); g != nil {
		g.mu.Lock()
		member := false
		g.members.each(pgrpLinkOf, func(m *ThreadGroup) bool {
			member = m == tg
			return !member
		})
		if !member || g.dead {
			c.fail("process %d is not a member of its process group", id)
		}
		g.mu.Unlock()
	}
	c.checkParent(tg, id, zombie)
}

// checkParent verifies the parent side of tg: a live parent that lists it.
func (c *checker) checkParent(tg *ThreadGroup, id int32, zombie bool) {
	parent := tg.parent.Load()
	if parent == nil {
		if tg != c.k.init.tg {
			c.fail("process %d has no parent", id)
		}
		return
	}
	ptg := parent.tg
	ptg.mu.Lock()
	defer ptg.mu.Unlock()
	if tg.parent.Load() != parent {
		c.fail("process %d changed parent during the check", id)
		return
	}
	if parent.state.Load() == taskDead || parent.childrenClosed.Load() {
		c.fail("process %d: parent thread %d can no longer adopt", id, parent.pid.nrs[0])
	}
	listed := false
	for ch := ptg.children.head; ch != nil && !listed; ch = ch.siblingLink.next {
		listed = ch == tg
	}
	if !listed {
		c.fail("process %d is not on its parent's children list", id)
	}
	q := *ptg.readyQueueOf(tg)
	inReady := tg.readyIdx >= 0 && tg.readyIdx < len(q) && q[tg.readyIdx] == tg
	if zombie != inReady {
		c.fail("process %d: zombie %v but on parent's ready list %v", id, zombie, inReady)
	}
}

// checkReadyQueuesLocked verifies that each thread's ready queues hold only
// its own zombie children of the queue's class, in heap order, and that
// the process's zombie counts match.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
// +checklocksignore: the threads' queues are guarded by tg.mu.
func (c *checker) checkReadyQueuesLocked(tg *ThreadGroup, id int32) {
	var zombies [2]int
	for th := tg.threads.head; th != nil; th = th.threadLink.next {
		for class, q := range th.ready {
			zombies[class] += len(q)
			for i, ch := range q {
				if ch.exitState.Load() != procZombie || ch.parent.Load() != th ||
					waitClass(ch.exitSignal) != class || ch.readyIdx != i {
					c.fail("process %d: a ready queue holds %d, which is not its thread's zombie child of that class",
						id, ch.leader.Load().pid.nrs[0])
				}
				if i > 0 && q[(i-1)/2].sibOrd > ch.sibOrd {
					c.fail("process %d: a ready queue is out of order", id)
				}
			}
		}
	}
	if zombies != tg.nrZombies {
		c.fail("process %d: %v zombies queued, counted %v", id, zombies, tg.nrZombies)
	}
}
