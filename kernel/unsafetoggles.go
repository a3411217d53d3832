//go:build tasklist_unsafe

package kernel

import "tasklist/plan"

// The code paths of the unsafe plan toggles, which put back races the seed
// threads found (docs/seeds.md) so that the race checker can be shown to
// find them. They are built only with the tasklist_unsafe build tag;
// without it unsafetoggles_off.go stands in for this file, and plan.Parse
// refuses the toggles.

// walkPgrpUnlocked makes the PRIO_PGRP walk of the pgrp-walk-unlocked
// toggle, as in seed 002's first patch, when p has the toggle on, and
// reports whether it did.
func walkPgrpUnlocked(p *plan.Plan, g *ProcessGroup, f func(*Task)) bool {
	if !p.Has(plan.PgrpWalkUnlocked) {
		return false
	}
	g.eachThreadUnlocked(f)
	return true
}

// eachThreadUnlocked is eachThread without the group's lock: the walk
// follows member links that a concurrent setpgid rewrites, so it may stop
// early or run on into the moved member's new group.
func (g *ProcessGroup) eachThreadUnlocked(f func(*Task)) {
	for i := range g.members.shards {
		g.members.shards[i].eachUnlocked(f)
	}
}

// eachUnlocked is eachThreadUnlocked for one shard.
//
// +checklocksignore: it reads the shard without its lock on purpose.
func (s *pgrpShard) eachUnlocked(f func(*Task)) {
	for m := s.list.head.Load(); m != nil; m = m.pgrpLink.next.Load() {
		// The member's lock guards its thread list; it is taken even for
		// a single thread, which keeps the walk as slow as the race
		// checker's races were aimed at.
		m.mu.Lock()
		m.threads.each(threadLinkOf, func(th *Task) bool {
			f(th)
			return true
		})
		m.mu.Unlock()
	}
}

// tracemeTestsParentEarly is PTRACE_TRACEME's test of its parent under
// the zhang-v1 toggle (seed 000's first patch): made before the locks that
// order it against the parent's exit_ptrace, so that a parent already past
// exit_ptrace can be left with a tracee. It reports whether p has the
// toggle on, and then whether the parent was running.
func tracemeTestsParentEarly(p *plan.Plan, parent *Task) (tested, running bool) {
	if !p.Has(plan.ZhangV1) {
		return false, false
	}
	return true, parent.state.Load() == taskRunning
}
