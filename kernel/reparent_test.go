package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

// Behaviours marked "host" were checked on Linux 6.18 with small C
// programs (PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, getppid after the
// parent's exit, unshare(CLONE_NEWPID)).

// TestReparentToOwnThread_B8 (host): an exiting thread's children go to a
// live thread of its own process; their parent-death signal fires (a
// SIGKILL one kills them) and their exit signal is kept.
func TestReparentToOwnThread_B8_B9(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	th := e.thread(p)
	keep := e.clone(p, 0, unix.SIGUSR2)
	doomed := e.fork(p)
	mustOK(t, doomed.PrctlSetPdeathsig(int(unix.SIGKILL)))
	e.exit(p, 0)
	e.k.Quiesce()
	if keep.Parent() != th || keep.Getppid() != p.Getpid() || keep.tg.exitSignal != int32(unix.SIGUSR2) {
		t.Fatal("children of an exiting thread go to a live thread of the process, exit signal kept")
	}
	e.reap(th, doomed.Getpid(), 0, doomed.Getpid(), killed(unix.SIGKILL))
	if _, err := th.Sigaction(int(unix.SIGUSR2), SigAction{Handler: SigIgn}); err != nil {
		t.Fatal(err)
	}
	e.exit(keep, 1)
	e.reap(th, -1, unix.WCLONE, keep.Getpid(), exited(1))
	e.exit(th, 0)
	e.reap(e.init, -1, 0, p.Getpid(), exited(0))
	e.settle()
}

// TestReparentSubreaperChain_B8 (host): an orphan goes to the nearest
// subreaper ancestor; when that one dies too, to the next one up.
func TestReparentSubreaperChain_B8(t *testing.T) {
	e := newEnv(t, Config{})
	g := e.fork(e.init)
	mustOK(t, g.PrctlSetChildSubreaper(true))
	a := e.fork(g)
	mustOK(t, a.PrctlSetChildSubreaper(true))
	b := e.fork(a)
	m := e.fork(b) // not a subreaper: skipped
	c := e.fork(m)
	e.exit(m, 0)
	if c.Getppid() != a.Getpid() {
		t.Fatalf("orphan's parent %d, want the nearest subreaper %d", c.Getppid(), a.Getpid())
	}
	e.exit(b, 0)
	e.exit(a, 0) // a's zombie child b and live child c go to g
	if c.Getppid() != g.Getpid() || b.Parent() != g {
		t.Fatalf("orphan's parent %d, want the next subreaper %d", c.Getppid(), g.Getpid())
	}
	e.reap(g, a.Getpid(), 0, a.Getpid(), exited(0))
	e.reap(g, b.Getpid(), 0, b.Getpid(), exited(0)) // re-notified (B9)
	// m was notified to b, its parent then; b did not reap it, so b's
	// exit handed the zombie to a and a's to g.
	e.reap(g, m.Getpid(), 0, m.Getpid(), exited(0))
	e.exit(c, 0)
	e.reap(g, -1, 0, c.Getpid(), exited(0))
	e.exitReaped(e.init, 0, g)
	e.settle()
}

// TestReparentSubreaperWithZombieLeader_B8 (host): a subreaper whose leader
// has exited adopts through a live thread.
func TestReparentSubreaperWithZombieLeader_B8(t *testing.T) {
	e := newEnv(t, Config{})
	a := e.fork(e.init)
	mustOK(t, a.PrctlSetChildSubreaper(true))
	th := e.thread(a)
	b := e.fork(a)
	c := e.fork(b)
	e.exit(a, 0)
	if b.Parent() != th {
		t.Fatal("a's child goes to its live thread")
	}
	e.exit(b, 0)
	if c.Parent() != th || c.Getppid() != a.Getpid() {
		t.Fatalf("orphan's parent %d, want subreaper %d", c.Getppid(), a.Getpid())
	}
	e.reap(th, b.Getpid(), 0, b.Getpid(), exited(0))
	e.exitReaped(th, 0, c)
	e.exit(th, 0)
	e.reap(e.init, -1, 0, a.Getpid(), exited(0))
	e.settle()
}

// TestReparentSubreaperOutsideNamespace_B8 (host): a subreaper in an
// ancestor namespace does not adopt: the namespace's init does.
func TestReparentSubreaperOutsideNamespace_B8(t *testing.T) {
	e := newEnv(t, Config{})
	a := e.fork(e.init)
	mustOK(t, a.PrctlSetChildSubreaper(true))
	mustOK(t, a.Unshare(unix.CLONE_NEWPID))
	i := e.fork(a)
	b := e.fork(i)
	c := e.fork(b)
	// A child of a, the subreaper, inside the namespace: its orphan also
	// goes to the namespace's init, not to a.
	d := e.fork(a)
	f := e.fork(d)
	e.exit(b, 0)
	e.exit(d, 0)
	if c.Getppid() != 1 || c.Parent() != i || f.Parent() != i {
		t.Fatalf("orphans' parent %d, want the namespace init (1)", c.Getppid())
	}
	dp := d.PIDIn(e.k.RootNamespace()) // a waits from the root namespace
	e.reap(a, dp, 0, dp, exited(0))
	e.reap(i, b.Getpid(), 0, b.Getpid(), exited(0))
	e.exit(i, 0) // zaps c and f
	e.reap(a, i.PIDIn(e.k.RootNamespace()), 0, i.PIDIn(e.k.RootNamespace()), exited(0))
	e.exitReaped(e.init, 0, a)
	e.settle()
}

// TestReparentZombieRenotified_B9 (host): a zombie handed to a reaper in
// another process is notified again, with SIGCHLD as its exit signal, and
// so is a live child with another exit signal when it dies later; a reaper
// that ignores SIGCHLD releases the zombie at once.
func TestReparentZombieRenotified_B9(t *testing.T) {
	e := newEnv(t, Config{})
	g := e.fork(e.init)
	mustOK(t, g.PrctlSetChildSubreaper(true))
	a := e.fork(g)
	if _, err := a.Sigaction(int(unix.SIGUSR1), SigAction{Handler: SigIgn}); err != nil {
		t.Fatal(err)
	}
	z := e.fork(a)
	zu := e.clone(a, 0, unix.SIGUSR1)
	u := e.clone(a, 0, unix.SIGUSR1)
	e.exit(z, 5)
	e.exit(zu, 7)
	e.exitReaped(g, 0, a)
	e.reap(g, z.Getpid(), unix.WNOHANG, z.Getpid(), exited(5))
	e.reap(g, zu.Getpid(), unix.WNOHANG, zu.Getpid(), exited(7)) // no __WCLONE needed now
	if u.tg.exitSignal != int32(unix.SIGCHLD) {
		t.Fatal("an adopted child's exit signal becomes SIGCHLD")
	}
	e.exit(u, 6)
	e.reap(g, -1, 0, u.Getpid(), exited(6))

	// The same with a reaper that ignores SIGCHLD: the zombie is released
	// while it is reparented, and a waiter left with nothing gets ECHILD.
	if _, err := g.Sigaction(int(unix.SIGCHLD), SigAction{Handler: SigIgn}); err != nil {
		t.Fatal(err)
	}
	a = e.fork(g)
	z = e.fork(a)
	e.exit(z, 5)
	e.exit(a, 0)
	if e.k.RootNamespace().Lookup(z.Getpid()) != nil {
		t.Fatal("the reaper ignores SIGCHLD: the zombie must be released")
	}
	e.wantWait(g, -1, unix.WNOHANG, unix.ECHILD)
	e.exitReaped(e.init, 0, g)
	e.settle()
}

// TestReparentToInit_B8_B9: without subreapers orphans go to init, which
// reaps them; zombies are re-notified to it.
func TestReparentToInit_B8_B9(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	c := e.fork(p)
	z := e.fork(p)
	e.exit(z, 3)
	e.exit(p, 0)
	if c.Parent() != e.init || c.Getppid() != 1 {
		t.Fatal("orphan must go to init")
	}
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), exited(0))
	e.reap(e.init, z.Getpid(), 0, z.Getpid(), exited(3))
	e.exitReaped(e.init, 0, c)
	e.settle()
}

// TestReparentPdeathSignal_B9: the parent-death signal is per thread, sent
// when the thread that is the parent exits, not inherited by children,
// ignored when the child ignores it, and fatal when its action is default.
func TestReparentPdeathSignal_B9(t *testing.T) {
	e := newEnv(t, Config{})
	mustOK(t, e.init.PrctlSetChildSubreaper(true))
	p := e.fork(e.init)
	ign := e.fork(p)
	if _, err := ign.Sigaction(int(unix.SIGTERM), SigAction{Handler: SigIgn}); err != nil {
		t.Fatal(err)
	}
	term := e.fork(p)
	ignTh := e.thread(ign)
	for _, x := range []*Task{ign, term} {
		if err := x.PrctlSetPdeathsig(int(unix.SIGTERM)); err != nil || x.PrctlGetPdeathsig() != int(unix.SIGTERM) {
			t.Fatal(err)
		}
	}
	gc := e.fork(term)
	if gc.PrctlGetPdeathsig() != 0 {
		t.Fatal("a child must not inherit the parent-death signal")
	}
	e.exit(p, 0)
	e.k.Quiesce()
	if ign.Exited() || ignTh.Exited() {
		t.Fatal("an ignored parent-death signal killed the child")
	}
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), exited(0))
	e.reap(e.init, term.Getpid(), 0, term.Getpid(), killed(unix.SIGTERM))
	// gc lost its parent too but has no parent-death signal.
	if gc.Exited() || gc.Parent() != e.init {
		t.Fatal("grandchild")
	}
	e.exit(gc, 0)
	e.reap(e.init, -1, 0, gc.Getpid(), exited(0))
	e.exitGroup(ign, 0)
	e.reap(e.init, -1, 0, ign.Getpid(), exited(0))
	e.settle()
}

// TestReparentConcurrentExits_B8: a chain of subreapers and their
// descendants all exit at once; every orphan ends up with a live adopter
// and is reaped, and no pid leaks.
func TestReparentConcurrentExits_B8(t *testing.T) {
	s := newStress(t, 30, Config{})
	for round := range s.rounds(50) {
		top := s.fork(s.init)
		mustOK(t, top.PrctlSetChildSubreaper(true))
		chain := []*Task{top}
		var leaves []*Task
		for i := range 6 {
			c := s.fork(chain[len(chain)-1])
			if i%2 == round%2 {
				mustOK(t, c.PrctlSetChildSubreaper(true))
			}
			leaves = append(leaves, s.fork(c))
			chain = append(chain, c)
		}
		var exits []func()
		for _, c := range chain[1:] {
			exits = append(exits, func() { expectOK(t, c.Exit(0)) })
		}
		s.concurrently(exits...)
		s.check()
		for _, l := range leaves {
			if l.Parent() != top {
				t.Fatalf("leaf %d ended with parent %d, want the last live subreaper %d",
					l.Getpid(), l.Getppid(), top.Getpid())
			}
			s.exit(l, 0)
		}
		// top reaps the 6 chain members (re-notified zombies) and the 6 leaves.
		for range 12 {
			if _, err := s.wait4(top, -1, 0); err != nil {
				t.Fatal(err)
			}
		}
		s.wantWait(top, -1, unix.WNOHANG, unix.ECHILD)
		s.exitReaped(s.init, 0, top)
	}
	s.end()
}

// A process's exit hands its zombie child to the process's own parent and
// makes the process a zombie in one step, as exit_notify does under
// tasklist_lock: the parent's waiter (a subreaper, so also the reaper), woken by the adopted zombie, must
// find the exiting process ready too and report it first, since it comes
// first on the children list (corpus c20; racy before the fix).
func TestAdoptionAndZombieAtomic_B9_C7(t *testing.T) {
	e := newEnv(t, Config{})
	for range 300 {
		s := e.fork(e.init)
		mustOK(t, s.PrctlSetChildSubreaper(true))
		p := e.fork(s)
		a := e.fork(p)
		e.exit(a, 5)
		out := e.blockedWait(s, -1, 0)
		e.exit(p, 0)
		if o := e.result(out); o.err != nil || o.r.Task != p {
			t.Fatalf("woken wait reported %+v, %v; want the exiting parent first", o.r, o.err)
		}
		e.reap(s, -1, 0, a.PIDIn(s.Namespace()), exited(5))
		e.exit(s, 0)
		e.reap(e.init, -1, 0, s.PIDIn(e.init.Namespace()), exited(0))
	}
	e.settle()
}
