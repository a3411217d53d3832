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
// group, which lists only its own members, is named by its pid and is on
// its session's list; every namespace's child reaper is a thread of its
// init; each user lists exactly the tasks of its real uid and counts them
// for RLIMIT_NPROC; a child is on its parent's job queue exactly when it
// has a stop or a continue to report (or a group stop some of its threads
// have yet to complete); and every traced thread's tracer is a running
// thread whose process lists it, every listed tracee names a thread of the
// listing process as its tracer, each thread's tracee count and each
// process's count of traced threads match (no task is left linked to a
// dead tracer, D10); and each signal handler table and shared address
// space counts exactly the processes that use it.
func (k *Kernel) CheckInvariants() error {
	c := &checker{k: k, namespaces: map[*PIDNamespace]bool{}, procs: map[*ThreadGroup]bool{},
		userTasks: map[*User]int{}, groups: map[*ProcessGroup]bool{}, sessions: map[*Session]bool{}}
	c.walkPIDs()
	for tg := range c.procs {
		c.checkProcess(tg)
	}
	c.checkSharerCounts()
	for ns := range c.namespaces {
		c.checkNamespace(ns)
	}
	k.users.Range(func(_, v any) bool {
		c.checkUser(v.(*User))
		return true
	})
	for g := range c.groups {
		c.checkGroup(g)
	}
	for s := range c.sessions {
		c.checkSession(s)
	}
	return errors.Join(c.errs...)
}

// checkSharerCounts verifies the user counts of the signal handler tables
// and address spaces the processes use (unshare reads them).
func (c *checker) checkSharerCounts() {
	tables := map[*SignalHandlers]int32{}
	spaces := map[*addressSpace]int32{}
	for tg := range c.procs {
		tables[tg.sighand.Load()]++
		if mm := tg.mm.Load(); mm != nil {
			spaces[mm]++
		}
	}
	for sh, n := range tables {
		if got := sh.users.Load(); got != n {
			c.fail("a signal handler table counts %d processes, %d use it", got, n)
		}
	}
	for mm, n := range spaces {
		if got := mm.users.Load(); got != n {
			c.fail("an address space counts %d processes, %d use it", got, n)
		}
	}
}

// checkUser verifies a user's member list: exactly the tasks whose real
// uid it is, and its RLIMIT_NPROC count.
func (c *checker) checkUser(u *User) {
	u.rlockAll()
	n := 0
	var perShard [userShards]int64
	u.eachMemberLocked(func(t *Task) bool {
		n++
		perShard[t.userShard]++
		if t.user.Load() != u || t.creds.Load().UID != u.uid {
			c.fail("uid %d lists task %d of another user", u.uid, t.pid.Load().nrs[0])
		}
		if t.state.Load() == taskDead {
			c.fail("uid %d lists released task %d", u.uid, t.pid.Load().nrs[0])
		}
		return true
	})
	u.runlockAll()
	if want := c.userTasks[u]; n != want {
		c.fail("uid %d lists %d tasks, %d have it", u.uid, n, want)
	}
	for i := range u.shards {
		want := perShard[i]
		if !u.counted() {
			want = 0
		}
		if got := u.shards[i].tasks.Load(); got != want {
			c.fail("uid %d counts %d tasks in shard %d, %d are charged to it", u.uid, got, i, want)
		}
	}
}

// checkGroup verifies that a live group's members all point at it, that
// it is listed in its session, and that it is named by its pid.
func (c *checker) checkGroup(g *ProcessGroup) {
	g.mu.Lock()
	if g.dead.Load() || g.members.empty() {
		c.fail("process group %d is in use but dead or empty", g.id.nrs[0])
	}
	g.members.each(func(m *ThreadGroup) bool {
		if m.pgrp.Load() != g {
			c.fail("process group %d lists process %d of another group", g.id.nrs[0], m.leader.Load().pid.Load().nrs[0])
		}
		if !c.procs[m] {
			c.fail("process group %d lists a released process", g.id.nrs[0])
		}
		return true
	})
	g.mu.Unlock()
	if g.id.pgrp.Load() != g {
		c.fail("process group %d is not the one its pid names", g.id.nrs[0])
	}
	c.sessions[g.session] = true
	s := g.session
	s.mu.Lock()
	listed := false
	s.groups.each(sessionLinkOf, func(x *ProcessGroup) bool {
		listed = x == g
		return !listed
	})
	s.mu.Unlock()
	if !listed {
		c.fail("process group %d is not on its session's list", g.id.nrs[0])
	}
}

// checkSession verifies that a session lists only live groups of its own
// and is the one its pid names.
func (c *checker) checkSession(s *Session) {
	s.mu.Lock()
	s.groups.each(sessionLinkOf, func(g *ProcessGroup) bool {
		if g.session != s || !c.groups[g] {
			c.fail("session %d lists group %d, which is not one of its live groups", s.id.nrs[0], g.id.nrs[0])
		}
		return true
	})
	s.mu.Unlock()
	if s.id.session.Load() != s {
		c.fail("session %d is not the one its pid names", s.id.nrs[0])
	}
}

type checker struct {
	k          *Kernel
	namespaces map[*PIDNamespace]bool
	procs      map[*ThreadGroup]bool
	userTasks  map[*User]int
	groups     map[*ProcessGroup]bool
	sessions   map[*Session]bool
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
			if t.pid.Load() != p {
				c.fail("pid %d: its task has another pid", nr)
			}
			if t.state.Load() == taskDead {
				c.fail("pid %d: task is released but still published", nr)
			}
			c.procs[t.tg] = true
			c.userTasks[t.user.Load()]++
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
		// The root init is pid 1 unless its kernel shares a pid space
		// (Config.PIDSpace).
		rootInit := ns.parent == nil && r.tg == c.k.init.tg
		if r.tg.leader.Load().pid.Load().nrIn(ns) != 1 && r.tg.ns == ns && !rootInit {
			c.fail("ns level %d: child reaper is not a thread of pid 1", ns.level)
		}
		if r.state.Load() == taskDead {
			c.fail("ns level %d: child reaper was released", ns.level)
		}
	}
}

func (c *checker) checkProcess(tg *ThreadGroup) {
	leader := tg.leader.Load()
	id := leader.pid.Load().nrs[0]
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
	if int32(live) != tg.liveThreads {
		c.fail("process %d: %d running threads, live count %d", id, live, tg.liveThreads)
	}
	if sole := tg.soleThread.Load(); (tg.threads.len == 1) != (sole != nil) || sole != nil && sole != tg.threads.head {
		c.fail("process %d: its sole thread does not match its %d-thread list", id, tg.threads.len)
	}
	zombie := tg.exitState.Load() == procZombie
	if zombie && (tg.threads.len != 1 || leader.state.Load() != taskZombie) {
		c.fail("process %d is a zombie but its leader is not alone and exited", id)
	}
	var counted [2]int32
	perThread := map[*Task]int32{}
	for ch := tg.children.head; ch != nil; ch = ch.siblingLink.next {
		if p := ch.parent.Load(); p.tg != tg {
			c.fail("process %d: child %d has another parent", id, ch.leader.Load().pid.Load().nrs[0])
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
			c.fail("thread %d counts %d children, %d are listed", t.pid.Load().nrs[0], got, perThread[t])
		}
		delete(perThread, t)
	}
	if len(perThread) != 0 {
		c.fail("process %d has children of a thread that is gone", id)
	}
	c.checkReadyQueuesLocked(tg, id)
	tg.mu.Unlock()

	if g := tg.pgrp.Load(); g != nil {
		c.groups[g] = true
		g.mu.Lock()
		member := false
		g.members.each(func(m *ThreadGroup) bool {
			member = m == tg
			return !member
		})
		if !member || g.dead.Load() {
			c.fail("process %d is not a member of its process group", id)
		}
		g.mu.Unlock()
	}
	c.checkParent(tg, id, zombie)
	c.checkPtrace(tg, id)
}

// checkPtrace verifies the ptrace links of tg's threads in both
// directions.
func (c *checker) checkPtrace(tg *ThreadGroup, id int32) {
	// tg's lock guards its thread list.
	tg.mu.Lock()
	var traced []*Task
	for th := tg.threads.head; th != nil; th = th.threadLink.next {
		if th.tracer.Load() != nil {
			traced = append(traced, th)
		}
	}
	if n := tg.nrTraced.Load(); int(n) != len(traced) {
		c.fail("process %d counts %d traced threads, %d are", id, n, len(traced))
	}
	tg.mu.Unlock()
	for _, th := range traced {
		tracer := th.tracer.Load()
		if tracer == nil {
			continue // detached meanwhile (the table is not quiescent)
		}
		if tracer.state.Load() != taskRunning {
			c.fail("thread %d of process %d is traced by thread %d, which has exited",
				th.pid.Load().nrs[0], id, tracer.pid.Load().nrs[0])
		}
		// The tracer's lock guards its tracee list.
		tracer.tg.mu.Lock()
		listed := false
		tracer.tg.tracees.each(traceLinkOf, func(x *Task) bool {
			listed = x == th
			return !listed
		})
		tracer.tg.mu.Unlock()
		if !listed {
			c.fail("thread %d of process %d: its tracer's process does not list it", th.pid.Load().nrs[0], id)
		}
	}
	// tg's lock guards its tracee list.
	tg.mu.Lock()
	defer tg.mu.Unlock()
	perThread := map[*Task]int32{}
	tg.tracees.each(traceLinkOf, func(x *Task) bool {
		if tr := x.tracer.Load(); tr == nil || tr.tg != tg {
			c.fail("process %d lists a tracee it does not trace", id)
		} else {
			perThread[tr]++
		}
		return true
	})
	for th := tg.threads.head; th != nil; th = th.threadLink.next {
		if got := th.nrTracees.Load(); got != perThread[th] {
			c.fail("thread %d counts %d tracees, %d are listed", th.pid.Load().nrs[0], got, perThread[th])
		}
	}
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
	if parent.state.Load() == taskDead || parent.flags.has(flagChildrenClosed) {
		c.fail("process %d: parent thread %d can no longer adopt", id, parent.pid.Load().nrs[0])
	}
	listed := false
	for ch := ptg.children.head; ch != nil && !listed; ch = ch.siblingLink.next {
		listed = ch == tg
	}
	if !listed {
		c.fail("process %d is not on its parent's children list", id)
	}
	q := *ptg.readyQueueOf(tg)
	inReady := tg.readyIdx >= 0 && int(tg.readyIdx) < len(q) && q[tg.readyIdx] == tg
	if zombie != inReady {
		c.fail("process %d: zombie %v but on parent's ready list %v", id, zombie, inReady)
	}
	jq := *ptg.jobQueueOf(tg)
	queued := tg.jobIdx >= 0 && int(tg.jobIdx) < len(jq) && jq[tg.jobIdx] == tg
	if queued != (tg.jobIdx >= 0) {
		c.fail("process %d: job queue index %d is stale", id, tg.jobIdx)
	}
	// The child's lock comes after its parent's.
	tg.mu.Lock()
	// A stop that some threads have yet to complete is an event to
	// come: the entry a report consumed stays until a wait passes it.
	event, coming := tg.hasJobEventLocked(), tg.stopped && tg.stopWaiting > 0
	exiting := tg.groupExiting || tg.liveThreads == 0
	tg.mu.Unlock()
	switch {
	case queued && (zombie || !(event || coming || exiting)):
		c.fail("process %d is on its parent's job queue with nothing to report", id)
	case !queued && event && !zombie && !exiting:
		c.fail("process %d has a stop or continue to report but is not queued", id)
	}
}

// checkReadyQueuesLocked verifies that each thread's ready queues hold only
// its own zombie children of the queue's class, in heap order, and that
// the process's zombie counts match.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (c *checker) checkReadyQueuesLocked(tg *ThreadGroup, id int32) {
	var zombies [2]int32
	for th := tg.threads.head; th != nil; th = th.threadLink.next {
		th.assertProcessLocked() // +checklocksforce: th is a thread of tg
		for class, q := range th.ready {
			zombies[class] += int32(len(q))
			for i, ch := range q {
				if ch.exitState.Load() != procZombie || ch.parent.Load() != th ||
					waitClass(ch.exitSignal) != class || int(ch.readyIdx) != i {
					c.fail("process %d: a ready queue holds %d, which is not its thread's zombie child of that class",
						id, ch.leader.Load().pid.Load().nrs[0])
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
	for th := tg.threads.head; th != nil; th = th.threadLink.next {
		th.assertProcessLocked() // +checklocksforce: th is a thread of tg
		for class, q := range th.jobs {
			for i, ch := range q {
				if ch.parent.Load() != th || waitClass(ch.exitSignal) != class || int(ch.jobIdx) != i {
					c.fail("process %d: a job queue holds %d, which is not its thread's child of that class",
						id, ch.leader.Load().pid.Load().nrs[0])
				}
				if i > 0 && q[(i-1)/2].sibOrd > ch.sibOrd {
					c.fail("process %d: a job queue is out of order", id)
				}
			}
		}
	}
}
