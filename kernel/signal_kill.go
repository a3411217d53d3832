package kernel

import (
	"math"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"tasklist/plan"
)

// Kill is kill(2) (kill_something_info, kernel/signal.c). pid > 0 names a
// process by any of its threads' ids; 0 is the caller's process group,
// < -1 the group -pid, and -1 every process the caller can see except its
// namespace's init and its own process. Signal 0 only probes. Errors:
// ESRCH when nothing matches (and for INT_MIN); EINVAL for an invalid
// signal, once a target is found; EPERM when the caller may not signal
// any target (G1–G7).
//
// Both multi-process forms are atomic against fork: a process forked
// concurrently by a process the kill signals is either signalled too or
// created after its parent was signalled (for a fatal signal: never
// created, its fork fails with EINTR). A walk over a process group holds
// the group's lock while it signals each member, and clone links a child
// into its group under the same lock (G3). kill(-1) walks the namespace's
// pid table with no lock over it and hands its signal to the children
// forked behind its back instead, as Linux's copy_process does with the
// multi-process signals it collects on signal->multiprocess (killAll).
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
	signalFromTask(t, p, sig, b)
	return nil
}

// killPgrp is __kill_pgrp_info: 0 once any member was signalled, else the
// last error, ESRCH for an empty group.
func (t *Task) killPgrp(g *ProcessGroup, sig int) error {
	var ret error = unix.ESRCH
	var b exitBatch
	defer b.run(t.k)
	// A plan's table lock, read: kill_pgrp walks the group under it.
	t.k.plan.Lock(plan.KillGroup)
	defer t.k.plan.Unlock(plan.KillGroup)
	// The group's lock, for writing, keeps its member list fixed while
	// every member is signalled: no member is moved away, forked in or
	// released meanwhile.
	g.mu.Lock()
	defer g.mu.Unlock()
	g.members.each(func(m *ThreadGroup) bool {
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
//
// The walk over the pid table skips a child whose clone is unfinished, so
// a child could be published after the walk passed its pid and before
// the walk reached its parent. To rule that out the walk registers itself
// on its namespace before it starts (killAllWalk). A fork, once it has
// published its child under the forking process's lock, looks for walks
// registered at each level the child is visible at and, if a walk has not
// signalled the forking process yet, records the child with it. Once its
// pass is over the walk signals each recorded child whose forking process
// it has signalled since, and the children of those in turn. A fork that
// finds no walk registered published its child before the walk began,
// so the walk sees the child. The fork's cost without a kill(-1) in
// progress is one load per namespace level of a pointer only kill(-1)
// writes.
func (t *Task) killAll(sig int) error {
	ns := t.tg.ns
	var w *killAllWalk
	if validSignal(sig) {
		w = &killAllWalk{}
		ns.addKillAll(w)
	}
	count := 0
	var ret error
	var b exitBatch
	defer b.run(t.k)
	// A plan's table lock, read: kill(-1) walks every process under it.
	t.k.plan.Lock(plan.KillGroup)
	defer t.k.plan.Unlock(plan.KillGroup)
	ns.alloc.Range(func(nr int, id *PID) bool {
		p := id.publishedTask()
		if nr <= 1 || p == nil || p.tg.leader.Load() != p || p.tg == t.tg {
			return true
		}
		count++
		err := t.checkKillPermission(p, sig)
		if err == nil && w != nil {
			w.signal(t, p.tg, sig, &b)
		}
		if err != unix.EPERM {
			ret = err
		}
		return true
	})
	if w != nil {
		w.finish(t, sig, &b)
		ns.removeKillAll(w)
	}
	if count == 0 {
		return unix.ESRCH
	}
	return ret
}

// killAllWalk is one kill(-1) in progress.
type killAllWalk struct {
	// signalled holds the processes the walk has signalled (as keys).
	// Each is stored in the critical section, under the process's lock,
	// that delivers the signal, so a fork, which reads it under the
	// forking process's lock, knows whether its child comes before or
	// after the signal.
	signalled sync.Map
	// born is a lock-free stack of the children forked during the walk
	// by processes it had not signalled yet; bornClosed once the walk
	// has stopped taking them.
	born atomic.Pointer[bornChild]
}

// bornChild is a process forked while a kill(-1) walk was in progress.
type bornChild struct {
	forker, child *ThreadGroup
	next          *bornChild
}

// bornClosed ends a walk's stack of children.
var bornClosed = &bornChild{}

// signal delivers the walk's signal to tg.
func (w *killAllWalk) signal(sender *Task, tg *ThreadGroup, sig int, b *exitBatch) {
	// The process lock orders the delivery against its exit and its
	// forks, which read the mark set here under the same lock.
	tg.mu.Lock()
	tg.sendSignalLocked(sig, sender.forcesOn(tg), b)
	w.signalled.Store(tg, struct{}{})
	tg.mu.Unlock()
}

// signalledHas reports whether the walk has signalled tg.
func (w *killAllWalk) signalledHas(tg *ThreadGroup) bool {
	_, ok := w.signalled.Load(tg)
	return ok
}

// recordForkLocked records child, just published by forker, unless the
// walk has signalled forker already (the child comes after the signal) or
// the walk is over.
//
// Preconditions: forker.mu is held, so that the walk's mark on forker
// cannot change meanwhile.
//
// +checklocks:forker.mu
func (w *killAllWalk) recordForkLocked(forker, child *ThreadGroup) {
	if w.signalledHas(forker) {
		return
	}
	e := &bornChild{forker: forker, child: child}
	for {
		head := w.born.Load()
		if head == bornClosed {
			return
		}
		e.next = head
		if w.born.CompareAndSwap(head, e) {
			return
		}
	}
}

// finish signals the children recorded during the pass whose forking
// process the walk has signalled, unless the pass reached them, until a
// round signals nobody: the set of signalled processes is final then, so
// no child recorded later can need the signal, and the stack is closed.
// Delayed signals skip the permission check, as in Linux: the child has
// its parent's credentials.
func (w *killAllWalk) finish(sender *Task, sig int, b *exitBatch) {
	var pending []*bornChild
	for {
		for e := w.born.Swap(nil); e != nil; e = e.next {
			pending = append(pending, e)
		}
		progress := false
		for again := true; again; {
			again = false
			kept := pending[:0]
			for _, e := range pending {
				switch {
				case w.signalledHas(e.child):
				case w.signalledHas(e.forker):
					w.signal(sender, e.child, sig, b)
					again, progress = true, true
				default:
					kept = append(kept, e) // its forker may be signalled later
				}
			}
			pending = kept
		}
		if !progress {
			w.born.Store(bornClosed)
			return
		}
	}
}

// noteForkLocked tells the kill(-1) walks in progress at any level ctg is
// visible at that tg has forked ctg.
//
// Preconditions: tg.mu is held; ctg is published.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) noteForkLocked(ctg *ThreadGroup) {
	for ns := ctg.ns; ns != nil; ns = ns.parent {
		if walks := ns.killAlls.Load(); walks != nil {
			for _, w := range *walks {
				w.recordForkLocked(tg, ctg)
			}
		}
	}
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
	return t.sendSpecific(p, sig)
}

// sendSpecific is do_send_specific's delivery of sig to thread p, once p
// is found: EINVAL for an invalid signal, EPERM, or 0 (signal 0 only
// probes).
func (t *Task) sendSpecific(p *Task, sig int) error {
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
