package kernel

import (
	"math"

	"golang.org/x/sys/unix"
)

// Kill is kill(2) (kill_something_info, kernel/signal.c). pid > 0 names a
// process by any of its threads' ids; 0 is the caller's process group,
// < -1 the group -pid, and -1 every process the caller can see except its
// namespace's init and its own process. Signal 0 only probes. Errors:
// ESRCH when nothing matches (and for INT_MIN); EINVAL for an invalid
// signal, once a target is found; EPERM when the caller may not signal
// any target (G1–G7).
//
// A walk over a process group holds the group's lock while it signals
// each member, and clone links a child into its group under the same
// lock, so a child forked concurrently is either signalled or created
// after the walk (G3). kill(-1) walks the namespace's pid table and has no
// such guarantee against a concurrent fork.
func (t *Task) Kill(pid, sig int) error {
	if !t.alive() {
		return unix.ESRCH
	}
	ns := t.tg.ns
	switch {
	case pid > 0:
		p := ns.Lookup(pid)
		if p == nil {
			return unix.ESRCH
		}
		return t.groupSendSig(p, sig, nil)
	case pid == math.MinInt32:
		return unix.ESRCH
	case pid == -1:
		return t.killAll(sig)
	}
	g := t.tg.pgrp.Load()
	if pid != 0 {
		id := ns.alloc.Load(-pid)
		if id == nil {
			return unix.ESRCH
		}
		if g = id.pgrp.Load(); g == nil {
			return unix.ESRCH
		}
	}
	return t.killPgrp(g, sig)
}

// checkKillPermission is check_kill_permission: EINVAL for an invalid
// signal (0 is valid), EPERM when the caller may not signal target.
func (t *Task) checkKillPermission(target *Task, sig int) error {
	if sig < 0 || sig > nSig {
		return unix.EINVAL
	}
	if !killPermitted(t, target, sig) {
		return unix.EPERM
	}
	return nil
}

// groupSendSig is group_send_sig_info: sig goes to p's whole process.
func (t *Task) groupSendSig(p *Task, sig int, b *exitBatch) error {
	if err := t.checkKillPermission(p, sig); err != nil || sig == 0 {
		return err
	}
	signalFromTask(t, p.tg, sig, b)
	return nil
}

// killPgrp is __kill_pgrp_info: 0 once any member was signalled, else the
// last error, ESRCH for an empty group.
func (t *Task) killPgrp(g *ProcessGroup, sig int) error {
	var ret error = unix.ESRCH
	var b exitBatch
	defer b.run(t.k)
	// The group's lock keeps its member list fixed while every member
	// is signalled: no member is moved away or forked in meanwhile.
	g.mu.Lock()
	defer g.mu.Unlock()
	g.members.each(pgrpLinkOf, func(m *ThreadGroup) bool {
		err := t.checkKillPermission(m.leader.Load(), sig)
		if err == nil && sig != 0 {
			// The member's lock orders the delivery against its exit
			// and its clones.
			m.mu.Lock()
			m.sendSignalLocked(sig, t.forcesOn(m), &b)
			m.mu.Unlock()
		}
		if ret != nil {
			ret = err
		}
		return true
	})
	return ret
}

// killAll is kill(-1): every process visible in the caller's namespace
// with a pid above 1, other than the caller's own. ESRCH if there is none;
// otherwise the last error other than EPERM, or 0.
func (t *Task) killAll(sig int) error {
	ns := t.tg.ns
	count := 0
	var ret error
	var b exitBatch
	defer b.run(t.k)
	ns.alloc.Range(func(nr int, id *PID) bool {
		p := id.publishedTask()
		if nr <= 1 || p == nil || p.tg.leader.Load() != p || p.tg == t.tg {
			return true
		}
		count++
		if err := t.groupSendSig(p, sig, &b); err != unix.EPERM {
			ret = err
		}
		return true
	})
	if count == 0 {
		return unix.ESRCH
	}
	return ret
}

// Tgkill is tgkill(2) (do_send_specific): sig goes to thread tid, which
// must belong to process tgid. A thread that is already exiting never
// acts on it. Errors: EINVAL for tgid or tid <= 0 or an invalid signal;
// ESRCH when no such thread is found; EPERM.
func (t *Task) Tgkill(tgid, tid, sig int) error {
	if !t.alive() {
		return unix.ESRCH
	}
	if tgid <= 0 || tid <= 0 {
		return unix.EINVAL
	}
	ns := t.tg.ns
	p := ns.Lookup(tid)
	if p == nil || p.TGIDIn(ns) != tgid {
		return unix.ESRCH
	}
	if err := t.checkKillPermission(p, sig); err != nil || sig == 0 {
		return err
	}
	tg := p.tg
	// As in signalFromTask.
	tg.mu.Lock()
	tg.sendThreadSignalLocked(p, sig, t.forcesOn(tg))
	tg.mu.Unlock()
	return nil
}
