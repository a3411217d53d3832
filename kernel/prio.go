package kernel

import (
	"golang.org/x/sys/unix"

	"tasklist/plan"
)

// Nice values (MIN_NICE, MAX_NICE).
const (
	minNice = -20
	maxNice = 19
)

// niceToRlimit is nice_to_rlimit: 20 - nice, in 1..40.
func niceToRlimit(nice int32) int { return int(maxNice - nice + 1) }

// Nice returns the thread's nice value. Unlike Getpriority it is an
// accessor: it answers for an exited thread too, with its last value.
func (t *Task) Nice() int { return int(t.nice.Load()) }

// Getpriority is getpriority(2) (kernel/sys.c): the largest 20 - nice
// (1..40, as the system call returns it; the C library's value is 20
// minus this) over the matching threads. PRIO_PROCESS names one thread by
// tid (0: the caller); PRIO_PGRP every thread of every process of a group
// (0: the caller's); PRIO_USER every thread visible in the caller's
// namespace whose real uid is who (0: the caller's real uid). Zombies not
// yet released still match. Errors: ESRCH if the caller has exited;
// EINVAL for which; ESRCH when nothing matches (F1–F4, F6).
//
// No walk takes a lock shared with other walks: PRIO_PGRP reads the
// group's member list and PRIO_USER the user's shard lists as each was
// at one moment, without their locks (seqList), taking only the lock of
// each member with more than one thread; it costs O(members) and never
// visits a process of another group. PRIO_USER costs O(threads of that
// user). A walk that keeps meeting membership changes takes the group's
// or the user's locks for reading instead.
func (t *Task) Getpriority(which, who int) (int, error) {
	if !t.alive() {
		return 0, unix.ESRCH
	}
	if which < unix.PRIO_PROCESS || which > unix.PRIO_USER {
		return 0, unix.EINVAL
	}
	best := -1
	visit := func(p *Task) {
		best = max(best, niceToRlimit(p.nice.Load()))
	}
	// A plan's table lock, read, where the plan's getpriority takes it.
	site := prioSite(which)
	t.k.plan.Lock(site)
	switch which {
	case unix.PRIO_PROCESS:
		if p := t.prioTask(who); p != nil {
			visit(p)
		}
	case unix.PRIO_PGRP:
		if g := t.prioGroup(who); g != nil {
			best = g.bestPrio(t.k.plan)
		}
	case unix.PRIO_USER:
		if u := t.prioUser(who); u != nil {
			best = u.bestPrio(t.tg.ns)
		}
	}
	t.k.plan.Unlock(site)
	if best < 0 {
		return 0, unix.ESRCH
	}
	return best, nil
}

// Setpriority is setpriority(2) (kernel/sys.c): nice, clamped to
// [-20, 19], is set on every matching thread, chosen as Getpriority
// chooses them. The result starts as ESRCH; a thread the caller may not
// change (its euid is neither the thread's uid nor euid, without
// CAP_SYS_NICE) makes it EPERM, a lowering of nice beyond the thread's
// RLIMIT_NICE without CAP_SYS_NICE makes it EACCES, a thread with
// permitted capabilities the caller lacks makes it EPERM unless the caller
// has CAP_SYS_NICE (cap_task_setnice), and a change made clears ESRCH
// only: the last failure wins and nothing is rolled back
// (F5). Threads are visited in Linux's order: a group's members from the
// one that joined last, a user's threads in creation order, each
// process's threads in creation order. A caller that has exited gets
// ESRCH without a visit.
func (t *Task) Setpriority(which, who, nice int) error {
	if !t.alive() {
		return unix.ESRCH
	}
	if which < unix.PRIO_PROCESS || which > unix.PRIO_USER {
		return unix.EINVAL
	}
	n := int32(min(max(nice, minNice), maxNice))
	var err error = unix.ESRCH
	set := func(p *Task) { err = t.setOnePrio(p, n, err) }
	// As in Getpriority.
	site := prioSite(which)
	t.k.plan.Lock(site)
	switch which {
	case unix.PRIO_PROCESS:
		if p := t.prioTask(who); p != nil {
			set(p)
		}
	case unix.PRIO_PGRP:
		if g := t.prioGroup(who); g != nil {
			g.eachThread(t.k.plan, set)
		}
	case unix.PRIO_USER:
		if u := t.prioUser(who); u != nil {
			err = u.setPrio(t, n)
		}
	}
	t.k.plan.Unlock(site)
	return err
}

// prioSite is where a plan may take its table lock for which, a valid
// PRIO_* value.
func prioSite(which int) plan.Site {
	return plan.PrioProcess + plan.Site(which-unix.PRIO_PROCESS)
}

// prioTask resolves PRIO_PROCESS's who: a tid in the caller's namespace,
// 0 the calling thread.
func (t *Task) prioTask(who int) *Task {
	if who == 0 {
		return t
	}
	return t.tg.ns.Lookup(who)
}

// prioGroup resolves PRIO_PGRP's who: a group id in the caller's
// namespace, 0 the caller's group.
func (t *Task) prioGroup(who int) *ProcessGroup {
	if who == 0 {
		return t.tg.pgrp.Load()
	}
	id := t.tg.ns.alloc.Load(who)
	if id == nil {
		return nil
	}
	return id.pgrp.Load()
}

// prioUser resolves PRIO_USER's who: a uid (0 the caller's real uid);
// nil when no task has it (find_user).
func (t *Task) prioUser(who int) *User {
	if who == 0 {
		return t.user.Load()
	}
	return t.k.findUser(uint32(who))
}

// setOnePrio is set_one_prio: it returns the call's result so far after
// trying p. The change is a compare-and-swap, so the EACCES test and the
// store see the same old value without a lock. Last comes the LSM hook,
// cap_task_setnice: a thread with permitted capabilities the caller lacks
// may be changed only with CAP_SYS_NICE (EPERM).
func (t *Task) setOnePrio(p *Task, nice int32, err error) error {
	c, pc := t.creds.Load(), p.creds.Load()
	if pc.UID != c.EUID && pc.EUID != c.EUID && !c.HasCap(unix.CAP_SYS_NICE) {
		return unix.EPERM
	}
	for {
		old := p.nice.Load()
		if nice < old && uint64(niceToRlimit(nice)) > p.tg.rlimits.Load()[unix.RLIMIT_NICE].Cur &&
			!c.HasCap(unix.CAP_SYS_NICE) {
			return unix.EACCES // can_nice
		}
		if pc.CapPermitted&^c.CapPermitted != 0 && !c.HasCap(unix.CAP_SYS_NICE) {
			return unix.EPERM // cap_safe_nice
		}
		if p.nice.CompareAndSwap(old, nice) {
			break
		}
	}
	if err == unix.ESRCH {
		return nil
	}
	return err
}

// eachThread calls f for every thread of every member, in Linux's order
// (do_each_pid_thread), holding the group's lock and the member's. Under
// a plan with the unsafe pgrp-walk-unlocked toggle the group's lock is not
// taken, as in seed 002's first patch (docs/seeds.md; unsafetoggles.go).
func (g *ProcessGroup) eachThread(p *plan.Plan, f func(*Task)) {
	if walkPgrpUnlocked(p, g, f) {
		return
	}
	// The group's lock fixes its members: a process that setpgid moves
	// is visited in exactly one of its groups (seed 002), and no fork
	// joins meanwhile.
	g.mu.Lock()
	defer g.mu.Unlock()
	g.members.each(func(m *ThreadGroup) bool {
		m.eachThread(f)
		return true
	})
}

// bestPrio is getpriority's answer for the group: the largest 20 - nice
// over its members' threads, -1 for none.
func (g *ProcessGroup) bestPrio(p *plan.Plan) int {
	best := -1
	visit := func(th *Task) { best = max(best, niceToRlimit(th.nice.Load())) }
	if walkPgrpUnlocked(p, g, visit) || lockless(func() bool {
		best = -1
		return g.eachThreadLockless(visit)
	}) {
		return best
	}
	best = -1
	g.eachThread(p, visit)
	return best
}

// eachThreadLockless is eachThread without the group's lock: it reports
// whether the walk saw the member list as it was at one moment; when it
// did not, what f saw must be dropped.
func (g *ProcessGroup) eachThreadLockless(f func(*Task)) bool {
	return g.members.eachLockless(func(m *ThreadGroup) { m.eachThread(f) })
}

// eachThread calls f for every thread of the process: a single-threaded
// one's without its lock, which its list then needs no more than Linux's
// RCU walk does (the thread's nice is read atomically either way).
func (tg *ThreadGroup) eachThread(f func(*Task)) {
	if th := tg.soleThread.Load(); th != nil {
		f(th)
		return
	}
	// The process's lock guards its thread list.
	tg.mu.Lock()
	tg.threads.each(threadLinkOf, func(th *Task) bool {
		f(th)
		return true
	})
	tg.mu.Unlock()
}

// bestPrio is getpriority's answer for the user: the largest 20 - nice
// over its threads visible in ns, -1 for none.
func (u *User) bestPrio(ns *PIDNamespace) int {
	best := -1
	visit := func(th *Task) { best = max(best, niceToRlimit(th.nice.Load())) }
	if lockless(func() bool {
		best = -1
		return u.eachVisibleLockless(ns, visit)
	}) {
		return best
	}
	best = -1
	u.eachVisible(ns, visit)
	return best
}

// visibleIn reports whether th, a member of a user, is one a PRIO_USER
// walk from ns visits: published and with a pid there.
func visibleIn(th *Task, ns *PIDNamespace) bool {
	return th.state.Load() >= taskRunning && th.pid.Load().nrIn(ns) != 0
}

// eachVisible calls f for every published thread of the user that is
// visible in ns, shard by shard, holding every shard's lock for reading.
func (u *User) eachVisible(ns *PIDNamespace, f func(*Task)) {
	// The user's locks fix its members: setuid moves a thread under
	// both users' locks, for writing. Walks only read the lists (a nice
	// value changes by its own atomic update).
	u.rlockAll()
	defer u.runlockAll()
	u.eachMemberLocked(func(th *Task) bool {
		if visibleIn(th, ns) {
			f(th)
		}
		return true
	})
}

// eachVisibleLockless is eachVisible without the shards' locks: it
// reports whether the walk saw every shard as it was at one moment; when
// it did not, what f saw must be dropped.
//
// +checklocksignore: it reads the shards' lists without their locks, as
// seqList allows.
func (u *User) eachVisibleLockless(ns *PIDNamespace, f func(*Task)) bool {
	var lists [userShards]*seqList[Task]
	for i := range u.shards {
		lists[i] = &u.shards[i].members
	}
	return readEachOf(lists[:], userLinkOf, func(th *Task) {
		if visibleIn(th, ns) {
			f(th)
		}
	})
}

// setPrio is PRIO_USER's loop of set_one_prio. Linux visits the threads
// in creation order (for_each_process_thread); the user's list is in
// joining order, so the result is computed as that order would give it:
// the error of the failure latest in creation order, else 0 once a thread
// was changed, else ESRCH.
func (u *User) setPrio(caller *Task, nice int32) error {
	var last *Task
	var lastErr error
	changed := false
	u.eachVisible(caller.tg.ns, func(th *Task) {
		switch err := caller.setOnePrio(th, nice, unix.ESRCH); err {
		case nil:
			changed = true
		default:
			if last == nil || taskListAfter(th, last) {
				last, lastErr = th, err
			}
		}
	})
	switch {
	case last != nil:
		return lastErr
	case changed:
		return nil
	}
	return unix.ESRCH
}

// taskListAfter reports whether a comes after b in Linux's task list:
// processes in creation order, each one's threads in creation order.
func taskListAfter(a, b *Task) bool {
	if a.tg != b.tg {
		return a.tg.serial > b.tg.serial
	}
	return a.serial > b.serial
}
