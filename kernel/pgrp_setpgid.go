package kernel

import (
	"slices"

	"golang.org/x/sys/unix"

	"tasklist/plan"
)

// Setpgid is setpgid(2) (kernel/sys.c): it moves process pid (0: the
// caller's) into process group pgid (0: pid), creating the group when
// pgid is pid and no such group exists. Errors, in Linux's order: EINVAL
// for pgid < 0; ESRCH when pid names no task; EINVAL when it names a
// thread that is not its process's leader; EPERM for a child in another
// session; EACCES for a child that has exec'd; ESRCH for a process that is
// neither the caller's child nor the caller's own; EPERM for a session
// leader; EPERM when pgid names no group of the caller's session.
//
// The moved process's old group, its new group and the caller's group are
// locked together, and the caller's process while the checks run (its
// lock keeps a child a child); a walk over either group, which holds that
// group's lock, sees the process in exactly one of them (seed 002, docs/seeds.md).
func (t *Task) Setpgid(pid, pgid int) error {
	if !t.alive() {
		return unix.ESRCH
	}
	ns := t.tg.ns
	if pid == 0 {
		pid = t.tg.leader.Load().pid.Load().nrIn(ns)
	}
	if pgid == 0 {
		pgid = pid
	}
	if pgid < 0 {
		return unix.EINVAL
	}
	needSession := false
	for {
		p := ns.Lookup(pid)
		if p == nil {
			return unix.ESRCH
		}
		if p.tg.leader.Load() != p {
			return unix.EINVAL
		}
		sp := setpgidOp{caller: t, p: p, old: p.tg.pgrp.Load(), mine: t.tg.pgrp.Load()}
		sp.id = p.pid.Load()
		if pgid != pid {
			sp.id = ns.alloc.Load(pgid)
		}
		if sp.id != nil {
			sp.target = sp.id.pgrp.Load()
		}
		if needSession {
			sp.session = sp.old.session
		}
		sp.lock()
		if !sp.valid() {
			sp.unlock()
			continue
		}
		if pgid == pid && sp.creates() && sp.session == nil {
			// A group must be made, which needs its session's lock, and
			// that comes before every group lock: start over with it.
			sp.unlock()
			needSession = true
			continue
		}
		err := sp.checkLocked(pgid != pid)
		sp.unlockCaller()
		if err == nil {
			sp.moveLocked()
		}
		sp.unlockGroups()
		if sp.emptied != nil {
			sp.emptied.release()
		}
		return err
	}
}

// setpgidOp is one attempt of setpgid with what it read before locking.
type setpgidOp struct {
	caller *Task
	p      *Task
	// old is p's group, mine the caller's, target the group named by
	// id (nil if none) and session, when set, the session whose group
	// list a new group joins.
	old, mine, target *ProcessGroup
	id                *PID
	session           *Session
	groups            []*ProcessGroup
	// emptied is the old group when the move left it empty.
	emptied *ProcessGroup
}

// lock takes the session's lock if needed, the groups' locks in
// increasing serial, and the caller's process lock.
//
// +checklocksignore: the set of locks is chosen at run time; lockstat
// checks their order.
func (sp *setpgidOp) lock() {
	sp.groups = []*ProcessGroup{sp.old, sp.mine}
	if sp.target != nil {
		sp.groups = append(sp.groups, sp.target)
	}
	slices.SortFunc(sp.groups, func(a, b *ProcessGroup) int { return int(a.serial) - int(b.serial) })
	sp.groups = slices.Compact(sp.groups)
	// A plan's table lock comes first: setpgid is a writer of the
	// process-group links (change_pid under tasklist_lock).
	sp.caller.k.plan.Lock(plan.SetPgid)
	// The session's group list takes a new group.
	if sp.session != nil {
		sp.session.mu.Lock()
	}
	// Every group the move reads or changes, so that it is atomic
	// against walks over them and against other moves.
	for _, g := range sp.groups {
		g.mu.Lock()
	}
	// The caller's lock guards its children's parent pointers, which
	// the child check reads.
	sp.caller.tg.mu.Lock()
}

// unlock releases what lock took.
func (sp *setpgidOp) unlock() {
	sp.unlockCaller()
	sp.unlockGroups()
}

// unlockCaller releases the caller's process lock, once the checks that
// need it are made.
//
// +checklocksignore: as for lock.
func (sp *setpgidOp) unlockCaller() { sp.caller.tg.mu.Unlock() }

// unlockGroups releases the group and session locks.
//
// +checklocksignore: as for lock.
func (sp *setpgidOp) unlockGroups() {
	for i := len(sp.groups) - 1; i >= 0; i-- {
		sp.groups[i].mu.Unlock()
	}
	if sp.session != nil {
		sp.session.mu.Unlock()
	}
	sp.caller.k.plan.Unlock(plan.SetPgid)
}

// valid reports whether what the attempt read still holds now that the
// locks are held.
//
// +checklocksignore: called between lock and unlock.
func (sp *setpgidOp) valid() bool {
	return sp.p.tg.pgrp.Load() == sp.old && sp.caller.tg.pgrp.Load() == sp.mine &&
		(sp.id == nil || sp.id.pgrp.Load() == sp.target)
}

// creates reports whether joining the group named by id means making it.
//
// +checklocksignore: called between lock and unlock, with target locked.
func (sp *setpgidOp) creates() bool { return sp.target == nil || sp.target.dead.Load() }

// checkLocked makes the checks of setpgid (kernel/sys.c) in Linux's
// order. named is set when pgid differs from pid: the group must exist
// already.
//
// +checklocksignore: called between lock and unlock, which hold every
// lock it reads under; checklocks cannot follow the slice of groups.
func (sp *setpgidOp) checkLocked(named bool) error {
	p, ptg := sp.p, sp.p.tg
	if p.state.Load() == taskDead {
		return unix.ESRCH // released after the lookup
	}
	if ptg.isChildOf(sp.caller.tg) {
		if sp.old.session != sp.mine.session {
			return unix.EPERM
		}
		if ptg.execed.Load() {
			return unix.EACCES // PF_FORKNOEXEC cleared by exec
		}
	} else if ptg != sp.caller.tg {
		return unix.ESRCH
	}
	if p.pid.Load().session.Load() != nil {
		return unix.EPERM // a session leader
	}
	if named && (sp.creates() || sp.target.session != sp.mine.session) {
		return unix.EPERM
	}
	return nil
}

// moveLocked moves p into the target group, making it if needed
// (change_pid(PIDTYPE_PGID)).
//
// +checklocksignore: as for checkLocked; the groups' locks are held.
func (sp *setpgidOp) moveLocked() {
	ptg := sp.p.tg
	to := sp.target
	if to == sp.old {
		return
	}
	if sp.creates() {
		// The new group is the newest: its lock comes last.
		to = newProcessGroup(sp.p.pid.Load(), sp.session)
		to.mu.Lock()
		defer to.mu.Unlock()
	}
	sp.old.members.moveTo(ptg, &to.members, to.mu.epochLocked())
	ptg.pgrp.Store(to)
	if sp.old.members.empty() {
		sp.old.dead.Store(true)
		sp.emptied = sp.old
	}
}
