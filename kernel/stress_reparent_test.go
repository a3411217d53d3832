package kernel

import (
	"context"
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStressReparentVsCloneParent races a CLONE_PARENT clone against the
// exit of the caller's parent: the new sibling must end up with the same
// parent as the caller, the reaper (init, or a subreaper above the dying
// parent), and never with the dead parent.
func TestStressReparentVsCloneParent(t *testing.T) {
	s := newStress(t, 2, Config{})
	for i := range s.rounds(400) {
		top := s.init
		if i%2 == 1 {
			top = s.fork(s.init)
			mustOK(t, top.PrctlSetChildSubreaper(true))
		}
		p := s.fork(top)
		var pt *Task
		if i%4 >= 2 {
			pt = s.thread(p)
		}
		c := s.fork(p)
		var sib *Task
		var serr error
		var xerrs [2]error
		fs := []func(){
			func() {
				sib, serr = c.Clone(CloneArgs{Flags: unix.CLONE_PARENT, ExitSignal: int(unix.SIGCHLD)})
			},
			func() { xerrs[0] = p.Exit(0) },
		}
		if pt != nil {
			fs = append(fs, func() { xerrs[1] = pt.Exit(0) })
		}
		s.concurrently(fs...)
		mustOK(t, errors.Join(xerrs[:]...))
		if serr != nil {
			t.Fatalf("iteration %d: CLONE_PARENT by a live child: %v", i, serr)
		}
		if c.Parent() != top || sib.Parent() != top {
			t.Fatalf("iteration %d: after the parent's exit the child's parent is pid %d and the sibling's %d, want %d",
				i, c.Getppid(), sib.Getppid(), top.Getpid())
		}
		if r := s.waitOne(top, p.Getpid(), 0); r.Status != 0 {
			t.Fatalf("iteration %d: parent's status %#x, want 0", i, uint32(r.Status))
		}
		s.exit(c, 0)
		s.exit(sib, 0)
		if got := s.reapAll(top); len(got) != 2 || got[c.Getpid()] != 0 || got[sib.Getpid()] != 0 {
			t.Fatalf("iteration %d: reaped %v, want pids %d and %d with status 0", i, got, c.Getpid(), sib.Getpid())
		}
		if top != s.init {
			s.exitReaped(s.init, 0, top)
		}
	}
	s.end()
}

// TestStressReparentToExitingSubreaper races the exit of a process against
// the exit of the subreaper that would adopt its child, in a chain
// init → g1 → g2 → p → c where g1 and g2 are subreapers. The child must
// skip the dying g2 (and its threads) and end up with g1, or with init
// when g1 is dying too; the zombies of p and g2 must reach a reaper that
// collects each exactly once.
func TestStressReparentToExitingSubreaper(t *testing.T) {
	s := newStress(t, 3, Config{})
	for i := range s.rounds(300) {
		g1 := s.fork(s.init)
		mustOK(t, g1.PrctlSetChildSubreaper(true))
		g2 := s.fork(g1)
		mustOK(t, g2.PrctlSetChildSubreaper(true))
		var g2t *Task
		if i%2 == 1 {
			g2t = s.thread(g2)
		}
		p := s.fork(g2)
		c := s.fork(p)
		g1Dies := i%4 == 3
		pids := map[string]int{"g1": g1.Getpid(), "g2": g2.Getpid(), "p": p.Getpid(), "c": c.Getpid()}

		var errs [4]error
		fs := []func(){
			func() { errs[0] = p.Exit(0) },
			func() { errs[1] = g2.Exit(0) },
		}
		if g2t != nil {
			fs = append(fs, func() { errs[2] = g2t.Exit(0) })
		}
		if g1Dies {
			fs = append(fs, func() { errs[3] = g1.Exit(0) })
		}
		s.concurrently(fs...)
		mustOK(t, errors.Join(errs[:]...))

		want := g1
		if g1Dies {
			want = s.init
		}
		if c.Parent() != want {
			t.Fatalf("iteration %d (%v): orphan's parent is pid %d, want %d", i, pids, c.Getppid(), want.Getpid())
		}
		s.exit(c, 0)
		reaped := s.reapAll(want)
		if want == g1 {
			s.exit(g1, 0)
			for pid, st := range s.reapAll(s.init) {
				reaped[pid] = st
			}
		}
		if len(reaped) != 4 {
			t.Fatalf("iteration %d (%v): reaped %v, want all four once", i, pids, reaped)
		}
		for name, pid := range pids {
			if st, ok := reaped[pid]; !ok || st != 0 {
				t.Fatalf("iteration %d: %s (pid %d) reaped %v with status %#x", i, name, pid, ok, uint32(st))
			}
		}
	}
	s.end()
}

// TestStressWaitVsReparent races a wait for a zombie against the
// reparenting of that zombie: exactly one waiter may claim it, with its
// exit status.
//
//   - across: a thread of the zombie's parent waits for it while another
//     thread runs exit_group, and the new parent (init, or a subreaper)
//     waits at the same time;
//   - within: the zombie's parent thread exits, moving it to another
//     thread of the process, which is blocked waiting for it and must get
//     it.
func TestStressWaitVsReparent(t *testing.T) {
	s := newStress(t, 4, Config{})
	for i := range s.rounds(400) {
		mode := i % 3
		reaper := s.init
		if mode == 2 {
			reaper = s.fork(s.init)
			mustOK(t, reaper.PrctlSetChildSubreaper(true))
		}
		pl := s.fork(reaper)
		pt := s.thread(pl)
		forker := pl
		if mode == 1 {
			forker = pt
		}
		c := s.fork(forker)
		cpid, ppid := c.Getpid(), pl.Getpid()
		s.exit(c, 5)

		if mode == 1 {
			var r WaitResult
			var werr, xerr error
			ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
			s.concurrently(
				func() { r, werr = pl.Wait4(ctx, cpid, 0) },
				func() { xerr = pt.Exit(0) })
			cancel()
			mustOK(t, xerr)
			if werr != nil || r.Pid != cpid || r.Status != 5<<8 {
				t.Fatalf("iteration %d: wait for a zombie moved between threads: %+v, %v", i, r, werr)
			}
			s.count("claimed by the thread of the old parent")
			s.exit(pl, 0)
			s.waitOne(s.init, ppid, 0)
		} else {
			var r WaitResult
			var werr, xerr error
			var byReaper map[int]unix.WaitStatus
			ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
			s.concurrently(
				func() {
					if i%2 == 0 {
						r, werr = pl.Wait4(ctx, cpid, 0)
					} else {
						r, werr = pl.Wait4(ctx, -1, unix.WNOHANG)
					}
				},
				func() { xerr = pt.ExitGroup(0) },
				func() { byReaper = s.reapAll(reaper) })
			cancel()
			mustOK(t, xerr)
			if t.Failed() {
				t.FailNow()
			}
			claims := 0
			if werr == nil && r.Pid == cpid {
				claims++
				s.count("claimed by the old parent")
				if r.Status != 5<<8 {
					t.Fatalf("iteration %d: old parent got status %#x, want 5<<8", i, uint32(r.Status))
				}
			} else if werr != nil && !isOneOf(werr, unix.EINTR, unix.ECHILD, unix.ESRCH) || werr == nil && r.Pid != 0 {
				// A waiter killed in the call gets EINTR, one killed
				// before it ESRCH, or ECHILD when the zombie was already
				// reaped by the new parent.
				t.Fatalf("iteration %d: old parent's wait: %+v, %v", i, r, werr)
			}
			if st, ok := byReaper[cpid]; ok {
				claims++
				s.count("claimed by the new parent")
				if st != 5<<8 {
					t.Fatalf("iteration %d: new parent got status %#x, want 5<<8", i, uint32(st))
				}
			}
			if claims != 1 {
				t.Fatalf("iteration %d: zombie %d claimed %d times (old parent %+v %v; new parent %v)",
					i, cpid, claims, r, werr, byReaper)
			}
			if st, ok := byReaper[ppid]; !ok || st != 0 {
				t.Fatalf("iteration %d: parent %d not reaped with status 0: %v", i, ppid, byReaper)
			}
			if reaper != s.init {
				s.exitReaped(s.init, 0, reaper)
			}
		}
	}
	s.end()
}
