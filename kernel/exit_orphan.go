package kernel

import (
	"golang.org/x/sys/unix"
)

// Orphaned process groups (kernel/exit.c will_become_orphaned_pgrp,
// kill_orphaned_pgrp): an exit or a reparenting that leaves a group with
// stopped members and no parent in another group of its session sends
// the group SIGHUP and SIGCONT.

// orphanedLocked is will_become_orphaned_pgrp: no member other than
// ignored (and no zombie whose threads are all gone) has a parent in
// another group of the same session, the root init aside.
//
// The members are exact, since the group's lock is held; their parents'
// groups are read without those groups' locks, so against a concurrent
// setpgid of a parent the answer may be either the one before or the one
// after it.
//
// Preconditions: g.mu is held for writing (forks and releases change the
// members under its read side).
//
// +checklocks:g.mu
func (g *ProcessGroup) orphanedLocked(ignored *ThreadGroup) bool {
	orphaned := true
	g.members.each(func(m *ThreadGroup) bool {
		if m == ignored || m.isEmptyZombie() {
			return true
		}
		p := m.parent.Load()
		if p == nil || p.tg == m.k.init.tg {
			return true
		}
		if pg := p.tg.pgrp.Load(); pg != g && pg.session == g.session {
			orphaned = false
		}
		return orphaned
	})
	return orphaned
}

// isEmptyZombie reports "p->exit_state && thread_group_empty(p)": the
// leader has exited and no other thread is left.
func (tg *ThreadGroup) isEmptyZombie() bool {
	// The process lock guards its thread list.
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.leader.Load().state.Load() >= taskZombie && tg.threads.len == 1
}

// hasStoppedLocked is has_stopped_jobs.
//
// Preconditions: g.mu is held for writing (forks and releases change the
// members under its read side).
//
// +checklocks:g.mu
func (g *ProcessGroup) hasStoppedLocked() bool {
	stopped := false
	g.members.each(func(m *ThreadGroup) bool {
		// The member's lock guards its job-control state.
		m.mu.Lock()
		stopped = m.stopped
		m.mu.Unlock()
		return !stopped
	})
	return stopped
}

// killOrphanedPgrp is kill_orphaned_pgrp (B10): when g, the group of tg,
// becomes orphaned because outside — tg's parent, which is leaving it as
// tg exits (ignored is then tg), or tg's old parent, which just handed tg
// to a reaper — was in another group of the same session, and a member of
// g is stopped, every member is sent SIGHUP and then SIGCONT. The exits
// that starts join q.
func killOrphanedPgrp(tg, outside, ignored *ThreadGroup, q *exitQueue) {
	if outside == nil {
		return
	}
	// An outside process in tg's own group leaves nothing orphaned: the
	// common exit, a child of a parent in its group, ends here without
	// the group's lock. tg's group is read on both sides of outside's, so
	// both were in it when outside's was read (as below, outside's group
	// is read without its lock).
	if g := tg.pgrp.Load(); outside.pgrp.Load() == g && tg.pgrp.Load() == g {
		return
	}
	var b exitBatch
	defer func() { q.push(b) }()
	// The group's lock: the walk below needs its members fixed.
	g := tg.lockPgrpOf()
	defer g.mu.Unlock()
	if op := outside.pgrp.Load(); op == g || op.session != g.session ||
		!g.orphanedLocked(ignored) || !g.hasStoppedLocked() {
		return
	}
	for _, sig := range []int{int(unix.SIGHUP), int(unix.SIGCONT)} {
		g.members.each(func(m *ThreadGroup) bool {
			// The member's lock orders the delivery against its exit;
			// the group's lock against moves and forks.
			m.mu.Lock()
			m.sendSignalLocked(sig, true, &b)
			m.mu.Unlock()
			return true
		})
	}
}
