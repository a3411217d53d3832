package kernel

import (
	"golang.org/x/sys/unix"

	"tasklist/plan"
)

// forgetOriginalParent hands an exiting thread's children to a new reaper
// (forget_original_parent, B8, B9); children it finds dead go on dead,
// the exits it starts on q. It reports zap when the thread is its
// namespace's last init thread: the caller zaps the namespace
// (zapPIDNamespace) and the exit resumes once it is empty. It reports
// zombie when the thread already became a zombie with its children's move
// (adoptByNewReaper).
func (t *Task) forgetOriginalParent(dead *deadList, q *exitQueue) (zap, zombie bool) {
	tg := t.tg
	ns := tg.ns
	// The process lock guards the children lists of its threads and the
	// namespace's child_reaper pointer when it is one of them.
	tg.mu.Lock()
	if ns.childReaper.Load() == t {
		alive := tg.findAliveThreadLocked()
		if alive == nil {
			tg.mu.Unlock()
			return true, false
		}
		ns.childReaper.Store(alive) // find_child_reaper
	}
	if t.nrChildren.Load() == 0 {
		t.flags.set(flagChildrenClosed, true)
		tg.mu.Unlock()
		return false, false
	}
	if alive := tg.findAliveThreadLocked(); alive != nil {
		moved := tg.moveChildrenWithinLocked(t, alive)
		tg.mu.Unlock()
		deliverPdeathSignals(t, moved, q)
		return false, false
	}
	tg.mu.Unlock()
	return false, t.adoptByNewReaper(dead, q)
}

// adoptByNewReaper moves the children of an exiting thread whose process
// has no live thread to the nearest subreaper or the namespace's reaper.
//
// When that reaper is the father's own parent process and the father is
// its process's leader, the father also becomes a zombie and notifies the
// parent before the locks are dropped, and adoptByNewReaper reports true:
// exit_notify does both in one tasklist_lock section, so a waiter of the
// parent woken by an adopted zombie finds the father a zombie too, and
// reports whichever comes first on its children list.
//
// Children the new reaper does not want, and the father if its parent
// does not, go on dead.
func (t *Task) adoptByNewReaper(dead *deadList, q *exitQueue) (zombie bool) {
	tg := t.tg
	var moved []*ThreadGroup
	autoreap, across := false, false
	reaper := t.lockNewReaper()
	if rtg := reaper.tg; rtg == tg {
		moved = tg.moveChildrenWithinLocked(t, reaper)
		unlockPair(rtg, tg)
	} else {
		across = true
		var unwanted []*ThreadGroup
		moved, unwanted = moveChildrenAcrossLocked(t, reaper)
		for _, c := range unwanted {
			dead.groups.push(c)
		}
		if t == tg.leader.Load() && tg.isChildOf(rtg) && !tg.tracedAway() {
			zombie = true
			autoreap = t.becomeZombieLocked(rtg)
		}
		unlockPair(rtg, tg)
	}
	deliverPdeathSignals(t, moved, q)
	if across {
		// reparent_leader: each child's group may have lost its last
		// link to the rest of the session.
		for _, c := range moved {
			killOrphanedPgrp(c, tg, nil, q)
		}
	}
	if autoreap {
		dead.groups.push(tg)
	}
	return zombie
}

// lockNewReaper finds the reaper for an exiting thread whose process has
// no live thread left (find_new_reaper, steps 2 and 3) and returns it with
// its process's lock and t's process lock held, as lockPair takes
// them: one lock when the reaper is a thread of t's own process. A
// candidate that turns out to be exiting is skipped.
//
// +checklocksacquire:t.tg.mu
// +checklocksacquire:reaper.tg.mu
// +checklocksignore: it returns holding the locks of the candidate it
// settles on, which checklocks cannot follow through the loop.
func (t *Task) lockNewReaper() (reaper *Task) {
	tg := t.tg
	for {
		if tg.hasChildSubreaper.Load() {
			for p := tg.parent.Load(); p != nil && p.tg.ns.level == tg.ns.level; p = p.tg.parent.Load() {
				stg := p.tg
				if stg == tg.k.init.tg {
					break
				}
				if !stg.isChildSubreaper.Load() {
					continue
				}
				// An ancestor's serial is lower: its lock comes first.
				lockPair(stg, tg)
				if alive := stg.findAliveThreadLocked(); alive != nil {
					return alive
				}
				unlockPair(stg, tg)
			}
		}
		reaper = tg.ns.childReaper.Load()
		rtg := reaper.tg
		// The namespace init's serial is lower than any other process's
		// in the namespace.
		lockPair(rtg, tg)
		if tg.ns.childReaper.Load() == reaper && !reaper.flags.has(flagChildrenClosed) {
			return reaper
		}
		unlockPair(rtg, tg)
	}
}

// childrenOfLocked returns father's children in children-list order.
//
// Preconditions: tg.mu is held; father is a thread of tg.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) childrenOfLocked(father *Task) []*ThreadGroup {
	var cs []*ThreadGroup
	for c := tg.children.head; c != nil; c = c.siblingLink.next {
		if c.parent.Load() == father {
			cs = append(cs, c)
		}
	}
	return readyQueue(cs).inOrder()
}

// moveChildrenWithinLocked gives father's children to another thread of
// the same process, at the end of its children list in their order
// (list_splice_tail), and returns them, for pdeath signals.
//
// Preconditions: tg.mu is held; father and reaper are threads of tg.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) moveChildrenWithinLocked(father, reaper *Task) []*ThreadGroup {
	moved := tg.childrenOfLocked(father)
	for _, c := range moved {
		zombie, job := c.readyIdx >= 0, c.jobIdx >= 0
		if zombie {
			tg.unmarkReadyLocked(c)
		}
		tg.unmarkJobLocked(c)
		reaper.assertProcessLocked() // +checklocksforce: reaper is a thread of tg
		tg.adoptLocked(c, reaper)
		if zombie {
			tg.markReadyLocked(c)
		}
		if job {
			tg.markJobLocked(c)
		}
	}
	father.flags.set(flagChildrenClosed, true)
	return moved
}

// moveChildrenAcrossLocked gives father's children to a thread of another
// process (reparent_leader): each gets SIGCHLD as its exit signal and, if
// it is a notified zombie, is notified again to its new parent; those the
// new parent does not want are returned in dead, to be released after the
// locks are dropped. moved lists every child, for pdeath signals.
//
// Preconditions: father.tg.mu and reaper.tg.mu are held.
//
// +checklocks:father.tg.mu
// +checklocks:reaper.tg.mu
func moveChildrenAcrossLocked(father, reaper *Task) (moved, dead []*ThreadGroup) {
	from, to := father.tg, reaper.tg
	moved = from.childrenOfLocked(father)
	var jobs []*ThreadGroup
	for _, c := range moved {
		if c.exitState.Load() == procZombie {
			from.unmarkReadyLocked(c)
		}
		if c.jobIdx >= 0 {
			from.unmarkJobLocked(c)
			jobs = append(jobs, c)
		}
		from.nrChildren[waitClass(c.exitSignal)]--
		from.children.remove(c, siblingLinkOf)
		to.adoptLocked(c, reaper)
		c.exitSignal = int32(unix.SIGCHLD)
		to.nrChildren[classSIGCHLD]++
		to.children.pushBack(c, siblingLinkOf)
		if to.hasChildSubreaper.Load() || to.isChildSubreaper.Load() {
			c.hasChildSubreaper.Store(true)
		}
	}
	father.flags.set(flagChildrenClosed, true)
	for _, c := range jobs {
		to.markJobLocked(c) // the new parent may report the stop or continue
	}
	for _, c := range moved {
		if c.exitState.Load() == procZombie && c.notifyParentLocked(to) {
			dead = append(dead, c)
		}
	}
	for _, c := range moved {
		to.adoptTracedZombieLocked(c)
	}
	return moved, dead
}

// adoptTracedZombieLocked handles a moved child c whose zombie leader
// waits for a tracer in its new parent process: reparent_leader does not
// notify a traced zombie, but it is no longer ptrace_reparented, so the
// tracer's children scan reports it, in children-list order, as a zombie
// child it traces (wait_consider_task with ptrace set).
//
// Preconditions: tg.mu is held; tg is c's new parent process.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) adoptTracedZombieLocked(c *ThreadGroup) {
	leader := c.leader.Load()
	// The leader's traceZombie is read only once its tracer is known to
	// be a thread of to, whose lock guards it.
	if tracer := leader.tracer.Load(); tracer != nil && tracer.tg == tg && leader.traceZombie {
		leader.traceZombie = false
		c.exitState.Store(procZombie)
		tg.markReadyLocked(c)
	}
}

// deliverPdeathSignals sends each moved child's threads' parent-death
// signals, as the exiting father (B9), with kill's permission check. Each
// goes to the process through the thread that asked for it, which takes it
// if it wants it (forget_original_parent's group_send_sig_info to t): a
// traced one stops for it. The exits it starts join q.
func deliverPdeathSignals(father *Task, moved []*ThreadGroup, q *exitQueue) {
	var b exitBatch
	for _, c := range moved {
		type pdeath struct {
			t   *Task
			sig int
		}
		var sends []pdeath
		// The child's lock guards its thread list.
		c.mu.Lock()
		for t := c.threads.head; t != nil; t = t.threadLink.next {
			if sig := int(t.pdeathSignal.Load()); sig != 0 && killPermitted(father, t, sig) {
				sends = append(sends, pdeath{t, sig})
			}
		}
		// Each goes to the process through the thread whose parent died
		// (group_send_sig_info to that thread).
		for _, s := range sends {
			c.sendSignalViaLocked(s.t, s.sig, father.forcesOn(c), &b)
		}
		c.mu.Unlock()
	}
	q.push(b)
}

// zapPIDNamespace is zap_pid_ns_processes, run by a namespace init's last
// thread (B11): allocation is disabled, init ignores SIGCHLD and reaps its
// zombies, every other task of the namespace is killed, and the init's
// exit resumes once the namespace holds no pid but its own.
func (t *Task) zapPIDNamespace(q *exitQueue) {
	tg := t.tg
	ns := tg.ns
	ns.alloc.Disable()
	var reap []*ThreadGroup
	// The process lock guards the ready lists and the zapping state that
	// notifyParentLocked reads.
	tg.mu.Lock()
	tg.zapping = true
	tg.sighand.Load().set(int(unix.SIGCHLD), SigAction{Handler: SigIgn})
	for _, c := range tg.readyChildrenLocked() {
		tg.unmarkReadyLocked(c)
		c.exitState.Store(procDead)
		c.unlinkFromParentLocked(tg)
		reap = append(reap, c)
	}
	tg.mu.Unlock()
	for _, c := range reap {
		c.release()
	}
	// Allocation is disabled, so this walk sees every task that can still
	// come to exist: one not yet published is doomed and its clone fails.
	// A plan's table lock, read, as for the walk of kill(-1).
	var b exitBatch
	tg.k.plan.Lock(plan.KillGroup)
	ns.alloc.Range(func(_ int, p *PID) bool {
		victim := p.task.Load()
		// An embryo's fields are still being written: decide on its state
		// alone, before reading anything else of it.
		if victim == nil || victim.state.CompareAndSwap(taskEmbryo, taskDoomed) || victim.state.Load() == taskDoomed || victim.tg == tg {
			return true
		}
		signalFromTask(t, victim, int(unix.SIGKILL), &b)
		return true
	})
	tg.k.plan.Unlock(plan.KillGroup)
	q.push(b)
	threshold := 1
	if t != tg.leader.Load() {
		threshold = 2
	}
	ns.whenDrained(threshold, func() {
		// Adoption checks childrenClosed under the process lock.
		tg.mu.Lock()
		t.flags.set(flagChildrenClosed, true)
		tg.mu.Unlock()
		t.becomeZombieNow()
	})
}

// PrctlSetChildSubreaper is prctl(PR_SET_CHILD_SUBREAPER): a subreaper
// adopts the orphans of its descendants before the namespace's init does.
// Setting it marks every descendant as having a subreaper ancestor.
func (t *Task) PrctlSetChildSubreaper(on bool) error {
	if !t.alive() {
		return unix.ESRCH
	}
	t.tg.isChildSubreaper.Store(on)
	if on {
		t.tg.propagateHasChildSubreaper()
	}
	return nil
}

// PrctlGetChildSubreaper is prctl(PR_GET_CHILD_SUBREAPER).
func (t *Task) PrctlGetChildSubreaper() bool { return t.tg.isChildSubreaper.Load() }

// propagateHasChildSubreaper sets has_child_subreaper on every descendant
// (walk_process_tree). Each process's flag is set and its children read
// under its lock, which a clone or an adoption into it also holds, so no
// descendant is missed.
func (tg *ThreadGroup) propagateHasChildSubreaper() {
	queue := []*ThreadGroup{tg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		p.mu.Lock()
		for c := p.children.head; c != nil; c = c.siblingLink.next {
			// A descendant that already has the flag passed it on to its
			// own subtree; a namespace init's subtree never leaves its
			// namespace.
			if !c.unkillable && !c.hasChildSubreaper.Swap(true) {
				queue = append(queue, c)
			}
		}
		p.mu.Unlock()
	}
}

// PrctlSetPdeathsig is prctl(PR_SET_PDEATHSIG): sig is sent to the caller's
// process when its parent thread exits. Errors: EINVAL for an invalid
// signal.
func (t *Task) PrctlSetPdeathsig(sig int) error {
	if !t.alive() {
		return unix.ESRCH
	}
	if sig != 0 && !validSignal(sig) {
		return unix.EINVAL
	}
	t.pdeathSignal.Store(int32(sig))
	return nil
}

// PrctlGetPdeathsig is prctl(PR_GET_PDEATHSIG).
func (t *Task) PrctlGetPdeathsig() int { return int(t.pdeathSignal.Load()) }
