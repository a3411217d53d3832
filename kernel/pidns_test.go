package kernel

import (
	"errors"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Behaviours marked "host" were checked on Linux 6.18 with small C
// programs using unshare(CLONE_NEWPID), fork and waitpid.

// TestPIDNSInitDeathZaps_B11: when a namespace's init dies, every other
// task of the namespace is killed, its zombies are reaped, and the init's
// parent sees its exit once the namespace is empty.
func TestPIDNSInitDeathZaps_B11(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	i := e.clone(p, unix.CLONE_NEWPID, unix.SIGCHLD)
	ns := i.Namespace()
	d := e.fork(i)
	dd := e.fork(d)
	th := e.thread(dd)
	z := e.fork(i)
	e.exit(z, 6) // a zombie child of init, never reaped by it
	u := e.clone(i, 0, unix.SIGUSR1)
	if _, err := u.Sigaction(int(unix.SIGKILL), SigAction{Handler: SigIgn}); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("sigaction(SIGKILL): %v", err)
	}
	e.exit(i, 3)
	e.reap(p, -1, 0, e.rootPID(i), exited(3))
	for _, x := range []*Task{d, dd, th, u, z} {
		if !x.Exited() {
			t.Fatalf("task %d survived its namespace's init", e.rootPID(x))
		}
	}
	if ns.Allocated() != 0 || !ns.alloc.Disabled() {
		t.Fatalf("dead namespace holds %d pids", ns.Allocated())
	}
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestPIDNSOutsideParent_B11_A13 (host): after unshare(CLONE_NEWPID) the
// caller's second child lives in the namespace with a parent outside it.
// When the init dies that child is killed, and the init's exit waits until
// its parent has reaped it (WNOHANG on the init says 0 meanwhile); forks
// into the dead namespace fail with ENOMEM.
func TestPIDNSOutsideParent_B11_A13(t *testing.T) {
	e := newEnv(t, Config{})
	for _, exitedFirst := range []bool{false, true} {
		p := e.fork(e.init)
		mustOK(t, p.Unshare(unix.CLONE_NEWPID))
		i := e.fork(p)
		c := e.fork(p)
		if i.Getpid() != 1 || c.Getpid() != 2 || c.Getppid() != 0 || c.Parent() != p {
			t.Fatal("pids after unshare(CLONE_NEWPID)")
		}
		want := killed(unix.SIGKILL)
		if exitedFirst {
			e.exit(c, 8)
			want = exited(8)
		}
		e.exit(i, 3)
		e.k.Quiesce()
		if !c.Exited() {
			t.Fatal("the init's death must kill the child of the outside parent")
		}
		e.wantWait(p, e.rootPID(i), unix.WNOHANG, nil)
		_, err := p.Fork()
		errIs(t, "fork into a dead namespace", err, unix.ENOMEM)
		e.reap(p, e.rootPID(c), 0, e.rootPID(c), want)
		e.reap(p, e.rootPID(i), 0, e.rootPID(i), exited(3))
		_, err = p.Fork()
		errIs(t, "fork into a dead namespace after it emptied", err, unix.ENOMEM)
		errIs(t, "unshare(CLONE_NEWPID) again", p.Unshare(unix.CLONE_NEWPID), unix.EINVAL)
		e.exitReaped(e.init, 0, p)
	}
	e.settle()
}

// TestPIDNSNested_B11: an init in a nested namespace is killed from the
// ancestor namespace (SIGKILL overrides SIGNAL_UNKILLABLE from outside),
// and zaps its own namespace in turn.
func TestPIDNSNested_B11(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	i1 := e.clone(p, unix.CLONE_NEWPID, unix.SIGCHLD)
	a := e.fork(i1)
	i2 := e.clone(a, unix.CLONE_NEWPID, unix.SIGCHLD)
	b := e.fork(i2)
	e.fork(b)
	ns1, ns2 := i1.Namespace(), i2.Namespace()
	e.exit(i1, 1)
	e.reap(p, -1, 0, e.rootPID(i1), exited(1))
	if !i2.Exited() || ns1.Allocated() != 0 || ns2.Allocated() != 0 {
		t.Fatalf("nested namespaces hold %d, %d pids", ns1.Allocated(), ns2.Allocated())
	}
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestPIDNSInitThreads_B8_B11 (host): when a namespace init's leader exits
// with a thread alive, the thread becomes the child reaper and adopts
// orphans (getppid says 1); the init's parent sees nothing until the last
// thread's exit zaps the namespace, and then the last thread's code.
func TestPIDNSInitThreads_B8_B11(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	i := e.clone(p, unix.CLONE_NEWPID, unix.SIGCHLD)
	ns := i.Namespace()
	th := e.thread(i)
	b := e.fork(i)
	c := e.fork(b)
	e.exit(i, 0)
	if ns.ChildReaper() != th {
		t.Fatal("the init's live thread must become the child reaper")
	}
	e.exit(b, 0)
	if c.Parent() != th || c.Getppid() != 1 {
		t.Fatalf("orphan's parent %d, want 1", c.Getppid())
	}
	e.reap(th, b.Getpid(), 0, b.Getpid(), exited(0))
	e.wantWait(p, -1, unix.WNOHANG, nil)
	e.exit(th, 4)
	e.reap(p, -1, 0, e.rootPID(i), exited(4))
	if !c.Exited() || ns.Allocated() != 0 {
		t.Fatal("the last init thread's exit must zap the namespace")
	}
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestPIDNSForkRacingZap_B11_A13: forks into a namespace whose init is
// exiting either succeed (and the child is killed with the rest) or fail
// with ENOMEM; the namespace always empties.
func TestPIDNSForkRacingZap_B11_A13(t *testing.T) {
	s := newStress(t, 31, Config{})
	for range s.rounds(100) {
		p := s.fork(s.init)
		mustOK(t, p.Unshare(unix.CLONE_NEWPID))
		i := s.fork(p)
		ns := i.Namespace()
		inner := s.fork(i) // forks from inside too
		var made []*Task
		var mu sync.Mutex
		fork := func(from *Task) {
			for range 20 {
				c, err := from.Fork()
				if err != nil {
					if !errors.Is(err, unix.ENOMEM) && !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.ESRCH) {
						t.Errorf("fork racing the zap: %v", err)
					}
					return
				}
				mu.Lock()
				made = append(made, c)
				mu.Unlock()
			}
		}
		s.concurrently(func() { fork(p) }, func() { fork(inner) }, func() { expectOK(t, i.Exit(0)) })
		s.k.Quiesce()
		// p reaps everything it made in the namespace, then the init.
		for {
			r, err := s.wait4(p, -1, 0)
			if err != nil {
				t.Fatal(err)
			}
			if r.Task == i {
				break
			}
		}
		for _, c := range made {
			if !c.Exited() {
				t.Fatal("a task forked into the namespace survived its init")
			}
		}
		if ns.Allocated() != 0 {
			t.Fatalf("namespace holds %d pids after its init was reaped", ns.Allocated())
		}
		s.wantWait(p, -1, unix.WNOHANG, unix.ECHILD)
		s.exitReaped(s.init, 0, p)
	}
	s.end()
}

// TestPIDNSDepthLimit: namespaces nest 32 levels deep (MAX_PID_NS_LEVEL);
// the 33rd is ENOSPC. Killing the outermost init zaps them all.
func TestPIDNSDepthLimit(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	cur := p
	var outer *Task
	for level := 1; level <= 32; level++ {
		cur = e.clone(cur, unix.CLONE_NEWPID, unix.SIGCHLD)
		if cur.Namespace().Level() != level || cur.Getpid() != 1 {
			t.Fatalf("level %d", level)
		}
		if outer == nil {
			outer = cur
		}
	}
	_, err := cur.Clone(CloneArgs{Flags: unix.CLONE_NEWPID, ExitSignal: int(unix.SIGCHLD)})
	errIs(t, "33rd level", err, unix.ENOSPC)
	errIs(t, "unshare at level 32", cur.Unshare(unix.CLONE_NEWPID), unix.ENOSPC)
	e.exit(outer, 0)
	e.reap(p, -1, 0, e.rootPID(outer), exited(0))
	if !cur.Exited() {
		t.Fatal("the innermost init survived")
	}
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestPIDNSOwnPIDMax_A10_A11: each level has its own pid_max; a new
// namespace starts with its parent's.
func TestPIDNSOwnPIDMax_A10_A11(t *testing.T) {
	e := newEnv(t, Config{PIDMax: 1000})
	p := e.fork(e.init)
	i := e.clone(p, unix.CLONE_NEWPID, unix.SIGCHLD)
	ns := i.Namespace()
	if ns.PIDMax() != 1000 {
		t.Fatalf("new namespace's pid_max %d, want the parent's 1000", ns.PIDMax())
	}
	errIs(t, "pid_max 300", ns.SetPIDMax(300), unix.EINVAL)
	errIs(t, "pid_max above the limit", ns.SetPIDMax(4*1024*1024+1), unix.EINVAL)
	mustOK(t, ns.SetPIDMax(301))
	var kids []*Task
	for range 299 {
		kids = append(kids, e.fork(i))
	}
	_, err := i.Fork()
	errIs(t, "fork with the inner level full", err, unix.EAGAIN)
	if e.k.RootNamespace().PIDMax() != 1000 {
		t.Fatal("the root's pid_max changed")
	}
	c2 := e.fork(p) // the root level still has room
	e.exitReaped(p, 0, c2)
	e.exit(i, 0)
	e.reap(p, e.rootPID(i), 0, e.rootPID(i), exited(0))
	for _, c := range kids {
		if !c.Exited() {
			t.Fatal("zap missed a child")
		}
	}
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestInjectedKillOfOwnInitReturnsFirst_B11: a task inside a namespace
// that traces its init and passes it SIGKILL (get_signal acts on SIGKILL
// even for an init) gets 0 from the call: the init dies when it next runs,
// and only its zap_pid_ns_processes kills the caller, after the call has
// returned. (On Linux whether the caller's reply reaches user space first
// is a race, so no scenario records it.)
func TestInjectedKillOfOwnInitReturnsFirst_B11(t *testing.T) {
	e := newEnv(t, Config{})
	n := e.clone(e.init, unix.CLONE_NEWPID, unix.SIGCHLD)
	c := e.fork(n)
	if err := c.Ptrace(unix.PTRACE_ATTACH, 1, 0, 0); err != nil {
		t.Fatalf("attach to the namespace's init from inside: %v", err)
	}
	e.reap(c, 1, unix.WALL, 1, stopped(unix.SIGSTOP, 0))
	if err := c.Ptrace(unix.PTRACE_CONT, 1, 0, uint64(unix.SIGKILL)); err != nil {
		t.Fatalf("CONT with SIGKILL = %v, want 0", err)
	}
	e.reap(e.init, e.rootPID(n), 0, e.rootPID(n), killed(unix.SIGKILL))
	if !c.Exited() {
		t.Fatal("the caller outlived its namespace's init")
	}
	e.settle()
}

// A fork into a namespace whose init has died fails with ENOMEM, but only
// after alloc_pid has taken a number at every level: the cursors have
// moved, so the next pid handed out in the outer namespace skips the
// numbers the failed forks used (corpus a21).
func TestForkIntoDeadNamespaceUsesPIDs_A13(t *testing.T) {
	e := newEnv(t, Config{})
	outer := e.fork(e.init) // pid 2 of the root namespace
	ns := e.clone(outer, unix.CLONE_NEWPID, unix.SIGCHLD)
	a := e.fork(ns)
	mustOK(t, a.Unshare(unix.CLONE_NEWPID))
	n := e.fork(a)
	e.exit(n, 0)
	e.reap(a, n.PIDIn(a.Namespace()), 0, n.PIDIn(a.Namespace()), exited(0))
	before := e.fork(ns)
	for range 2 {
		_, err := a.Fork()
		errIs(t, "fork into a dead namespace", err, unix.ENOMEM)
	}
	after := e.fork(ns)
	if got, want := after.PIDIn(ns.Namespace()), before.PIDIn(ns.Namespace())+3; got != want {
		t.Errorf("pid after two failed forks: %d, want %d (each failed fork takes a number)", got, want)
	}
	if got, want := e.rootPID(after), e.rootPID(before)+3; got != want {
		t.Errorf("root-level pid after two failed forks: %d, want %d", got, want)
	}
	e.check()
}
