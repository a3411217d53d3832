package kernel

import (
	"fmt"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Behaviours marked "host" below were checked on Linux 6.18 with small C
// programs (raw clone(2), unshare(2), waitpid(2)); the rest follow
// copy_process and alloc_pid.

// TestCloneFlagValidation_A1_A2_A4 checks copy_process's flag checks, made
// before anything is allocated (host: every combination → EINVAL).
func TestCloneFlagValidation_A1_A2_A4(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	before := e.k.RootNamespace().Allocated()
	for _, tc := range []struct {
		name  string
		flags uint64
	}{
		{"A1 NEWNS|FS", unix.CLONE_NEWNS | unix.CLONE_FS},
		{"A1 NEWUSER|FS", unix.CLONE_NEWUSER | unix.CLONE_FS},
		{"A2 THREAD", unix.CLONE_THREAD},
		{"A2 THREAD|VM", unix.CLONE_THREAD | unix.CLONE_VM},
		{"A2 SIGHAND", unix.CLONE_SIGHAND},
		{"A2 THREAD|SIGHAND", unix.CLONE_THREAD | unix.CLONE_SIGHAND},
		{"A4 thread|NEWPID", threadFlags | unix.CLONE_NEWPID},
		{"A4 thread|NEWUSER", threadFlags | unix.CLONE_NEWUSER},
	} {
		_, err := p.Clone(CloneArgs{Flags: tc.flags, ExitSignal: int(unix.SIGCHLD)})
		errIs(t, tc.name, err, unix.EINVAL)
		if got := e.k.RootNamespace().Allocated(); got != before {
			t.Fatalf("%s: %d pids allocated, %d before: the check must come first", tc.name, got, before)
		}
	}
	// A thread needs exactly THREAD|SIGHAND|VM; SIGHAND|VM alone is a
	// process sharing the handler table.
	e.thread(p)
	c := e.clone(p, unix.CLONE_SIGHAND|unix.CLONE_VM, unix.SIGCHLD)
	if c.tg == p.tg || c.tg.sighand.Load() != p.tg.sighand.Load() {
		t.Fatal("CLONE_SIGHAND|CLONE_VM must make a process that shares the handler table")
	}
	e.exit(c, 0)
	e.reap(p, -1, 0, c.Getpid(), exited(0))
	e.exitGroup(p, 0)
	e.reap(e.init, -1, 0, p.Getpid(), exited(0))
	e.settle()
}

// TestCloneThreadAfterUnshareNewPID_A4: once unshare(CLONE_NEWPID) has
// run, threads can no longer be made (host: EINVAL), and a second
// unshare(CLONE_NEWPID) fails too (host: EINVAL, also after the new
// namespace's init died).
func TestCloneThreadAfterUnshareNewPID_A4(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	mustOK(t, p.Unshare(unix.CLONE_NEWPID))
	_, err := p.Clone(CloneArgs{Flags: threadFlags})
	errIs(t, "thread after unshare(CLONE_NEWPID)", err, unix.EINVAL)
	errIs(t, "second unshare(CLONE_NEWPID)", p.Unshare(unix.CLONE_NEWPID), unix.EINVAL)
	// Unsharing CLONE_THREAD|CLONE_VM is refused once there are threads.
	q := e.fork(e.init)
	th := e.thread(q)
	errIs(t, "unshare(CLONE_VM) with threads", q.Unshare(unix.CLONE_VM), unix.EINVAL)
	errIs(t, "unshare(unknown flag)", q.Unshare(1<<63), unix.EINVAL)
	errIs(t, "unshare(CLONE_NEWUSER)", q.Unshare(unix.CLONE_NEWUSER), unix.EINVAL)
	e.exit(th, 0)
	if err := q.Unshare(unix.CLONE_VM); err != nil {
		t.Fatalf("unshare(CLONE_VM) single-threaded: %v", err)
	}
	// Without CAP_SYS_ADMIN: EPERM.
	mustOK(t, q.Setuid(1000))
	errIs(t, "unshare(CLONE_NEWPID) unprivileged", q.Unshare(unix.CLONE_NEWPID), unix.EPERM)
	_, err = q.Clone(CloneArgs{Flags: unix.CLONE_NEWPID, ExitSignal: int(unix.SIGCHLD)})
	errIs(t, "clone(CLONE_NEWPID) unprivileged", err, unix.EPERM)
	e.exit(q, 0)
	e.exitReaped(e.init, 0, p)
	e.reap(e.init, q.Getpid(), 0, q.Getpid(), exited(0))
	e.settle()
}

// TestCloneParentFromInit_A3: neither the global init nor a namespace init
// may make a sibling (host, for a namespace init: EINVAL).
func TestCloneParentFromInit_A3(t *testing.T) {
	e := newEnv(t, Config{})
	_, err := e.init.Clone(CloneArgs{Flags: unix.CLONE_PARENT, ExitSignal: int(unix.SIGCHLD)})
	errIs(t, "CLONE_PARENT from global init", err, unix.EINVAL)
	p := e.fork(e.init)
	nsInit := e.clone(p, unix.CLONE_NEWPID, unix.SIGCHLD)
	_, err = nsInit.Clone(CloneArgs{Flags: unix.CLONE_PARENT, ExitSignal: int(unix.SIGCHLD)})
	errIs(t, "CLONE_PARENT from a namespace init", err, unix.EINVAL)
	// A thread of an init is in an unkillable process too.
	th := e.thread(nsInit)
	_, err = th.Clone(CloneArgs{Flags: unix.CLONE_PARENT, ExitSignal: int(unix.SIGCHLD)})
	errIs(t, "CLONE_PARENT from an init's thread", err, unix.EINVAL)
	e.exit(th, 0)
	e.exit(nsInit, 0)
	e.reap(p, -1, 0, nsInit.PIDIn(e.k.RootNamespace()), exited(0))
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestCloneThreadLimit_A8: max_threads counts every task not yet released,
// threads and zombies included.
func TestCloneThreadLimit_A8(t *testing.T) {
	e := newEnv(t, Config{ThreadLimit: 3})
	p := e.fork(e.init)
	th := e.thread(p)
	_, err := p.Fork()
	errIs(t, "fork at the thread limit", err, unix.EAGAIN)
	_, err = e.init.Clone(CloneArgs{Flags: threadFlags})
	errIs(t, "thread at the thread limit", err, unix.EAGAIN)
	e.exit(th, 0) // a thread is released at once
	c := e.fork(p)
	e.exit(c, 0)
	_, err = p.Fork()
	errIs(t, "fork with a zombie unreaped", err, unix.EAGAIN)
	e.reap(p, -1, 0, c.Getpid(), exited(0))
	c = e.fork(p)
	e.exit(c, 0)
	e.reap(p, -1, 0, c.Getpid(), exited(0))
	e.exit(p, 0)
	e.reap(e.init, -1, 0, p.Getpid(), exited(0))
	if n := e.k.nrThreads.Load(); n != 1 {
		t.Fatalf("nr_threads %d after everything exited, want 1 (init)", n)
	}
	e.settle()
}

// TestClonePIDPerLevel_A10: a process has one pid per namespace level, each
// from that level's allocator; it is invisible (0) outside its ancestry.
func TestClonePIDPerLevel_A10(t *testing.T) {
	e := newEnv(t, Config{})
	root := e.k.RootNamespace()
	p := e.fork(e.init)
	i1 := e.clone(p, unix.CLONE_NEWPID, unix.SIGCHLD)
	ns1 := i1.Namespace()
	a := e.fork(i1)
	i2 := e.clone(a, unix.CLONE_NEWPID, unix.SIGCHLD)
	ns2 := i2.Namespace()
	b := e.fork(i2)
	if ns1.Level() != 1 || ns2.Level() != 2 || ns2.Parent() != ns1 || ns1.Parent() != root {
		t.Fatal("namespace levels")
	}
	for _, tc := range []struct {
		task       *Task
		ns         *PIDNamespace
		want       int
		lookupSelf bool
	}{
		{i1, ns1, 1, true}, {a, ns1, 2, true}, {i2, ns2, 1, true}, {i2, ns1, 3, true}, {b, ns2, 2, true},
		{b, ns1, 4, true}, {p, ns1, 0, false}, {a, ns2, 0, false},
	} {
		if got := tc.task.PIDIn(tc.ns); got != tc.want {
			t.Errorf("pid of root-%d in level %d = %d, want %d", tc.task.PIDIn(root), tc.ns.Level(), got, tc.want)
		}
		if tc.lookupSelf && tc.ns.Lookup(tc.want) != tc.task {
			t.Errorf("level %d: lookup(%d) is not the task", tc.ns.Level(), tc.want)
		}
	}
	if root.Lookup(b.PIDIn(root)) != b || b.Getpid() != 2 || b.Getppid() != 1 || i2.Getppid() != 0 || i1.Getppid() != 0 {
		t.Fatal("getpid/getppid across levels")
	}
	if b.PIDIn(root) == b.PIDIn(ns1) && b.PIDIn(root) == b.PIDIn(ns2) {
		t.Fatal("all levels gave the same number")
	}
	if ns1.Allocated() != 4 || ns2.Allocated() != 2 {
		t.Fatalf("level counts %d, %d; want 4, 2", ns1.Allocated(), ns2.Allocated())
	}
	e.exit(i1, 0) // zaps both namespaces (B11)
	e.reap(p, -1, 0, i1.PIDIn(root), exited(0))
	if ns1.Allocated() != 0 || ns2.Allocated() != 0 {
		t.Fatalf("namespaces hold %d and %d pids after their inits died", ns1.Allocated(), ns2.Allocated())
	}
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestClonePIDCyclic_A11 checks cyclic allocation with the smallest
// pid_max (host, in a pid namespace with pid_max 301: 2..300, then 300
// again and again since the restart point is RESERVED_PIDS; with pid 300
// in use the range is full → EAGAIN though 2..299 are free).
func TestClonePIDCyclic_A11(t *testing.T) {
	e := newEnv(t, Config{PIDMax: 301})
	p := e.init
	for want := 2; want <= 300; want++ {
		c := e.fork(p)
		if c.Getpid() != want {
			t.Fatalf("fork %d got pid %d", want, c.Getpid())
		}
		e.exit(c, 0)
		e.reap(p, want, 0, want, exited(0))
	}
	c := e.fork(p)
	if c.Getpid() != 300 {
		t.Fatalf("after the wrap got pid %d, want 300", c.Getpid())
	}
	_, err := p.Fork()
	errIs(t, "fork with the range [300, 301) full", err, unix.EAGAIN)
	e.exit(c, 0)
	e.reap(p, -1, 0, 300, exited(0))
	e.settle()
}

// TestCloneFirstPIDResetOnFailure_A12: when a namespace's first allocation
// fails (an outer level is full), its cursor is reset, so the next fork
// still makes pid 1, the namespace's init.
func TestCloneFirstPIDResetOnFailure_A12(t *testing.T) {
	e := newEnv(t, Config{PIDMax: 301})
	p := e.fork(e.init) // pid 2
	var kids []*Task
	for range 298 { // pids 3..300: the root level is full
		kids = append(kids, e.fork(p))
	}
	mustOK(t, p.Unshare(unix.CLONE_NEWPID))
	ns := p.nsForChildren.Load()
	_, err := p.Fork()
	errIs(t, "fork with the root level full", err, unix.EAGAIN)
	if ns.Allocated() != 0 {
		t.Fatalf("failed fork left %d pids in the new namespace", ns.Allocated())
	}
	// The cursor has passed RESERVED_PIDS, so only pid 300 can be had
	// again (host: freeing a lower pid leaves the range full).
	low := kids[0]
	e.exitReaped(p, 0, low)
	_, err = p.Fork()
	errIs(t, "fork with only a pid below RESERVED_PIDS free", err, unix.EAGAIN)
	last := kids[len(kids)-1]
	e.exit(last, 0)
	e.reap(p, 300, 0, 300, exited(0))
	kids = kids[1 : len(kids)-1]
	i := e.fork(p)
	if i.PIDIn(ns) != 1 || ns.ChildReaper() != i || !i.tg.unkillable {
		t.Fatalf("first successful fork got pid %d in the new namespace, want its init (1)", i.PIDIn(ns))
	}
	e.exit(i, 0)
	e.reap(p, i.PIDIn(e.k.RootNamespace()), 0, i.PIDIn(e.k.RootNamespace()), exited(0))
	for _, c := range kids {
		e.exit(c, 0)
	}
	for range kids {
		if _, err := e.wait4(p, -1, 0); err != nil {
			t.Fatal(err)
		}
	}
	e.exit(p, 0)
	e.reap(e.init, -1, 0, 2, exited(0))
	e.settle()
}

// TestCloneLookupNeverSeesEmbryo_A15: a task is findable by pid only once
// clone has finished building it.
func TestCloneLookupNeverSeesEmbryo_A15(t *testing.T) {
	e := newEnv(t, Config{})
	root := e.k.RootNamespace()
	p := e.fork(e.init)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var bad string
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for nr := 3; nr < 300; nr++ {
				c := root.Lookup(nr)
				if c == nil {
					continue
				}
				if c.tg == nil || c.tg.pgrp.Load() == nil || c.Parent() == nil || c.state.Load() < taskRunning {
					bad = fmt.Sprintf("lookup(%d) returned a half-built task: tg %v pgrp %v parent %v state %d", nr, c.tg != nil, c.tg != nil && c.tg.pgrp.Load() != nil, c.tg != nil && c.Parent() != nil, c.state.Load())
					return
				}
			}
		}
	}()
	for range 200 {
		c := e.fork(p)
		th := e.thread(c)
		e.exit(th, 0)
		e.exit(c, 0)
		e.reap(p, -1, 0, c.Getpid(), exited(0))
	}
	close(stop)
	wg.Wait()
	if bad != "" {
		t.Fatal(bad)
	}
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestCloneThread_A16: a thread shares tgid and leader, has no exit signal,
// has the caller's parent, and is on no children list.
func TestCloneThread_A16(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	th := e.thread(p)
	if th.Getpid() != p.Getpid() || th.Gettid() == p.Gettid() || th.tg.Leader() != p {
		t.Fatal("thread ids")
	}
	if th.Getppid() != 1 || th.Parent() != e.init {
		t.Fatalf("thread's parent is %d, want the caller's (1)", th.Getppid())
	}
	e.init.tg.mu.Lock()
	n := e.init.tg.nrChildren[classSIGCHLD] + e.init.tg.nrChildren[classClone]
	e.init.tg.mu.Unlock()
	if n != 1 {
		t.Fatalf("init has %d children, want 1: a thread is on no children list", n)
	}
	// A thread of a thread is still a thread of the same process.
	th2 := e.thread(th)
	if th2.Getpid() != p.Getpid() {
		t.Fatal("thread of a thread")
	}
	e.exit(th, 0)
	e.exit(th2, 0)
	e.wantWait(e.init, -1, unix.WNOHANG|unix.WALL, nil) // threads are not waitable
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestCloneParentSibling_A17 (host): the sibling's parent is the caller's
// parent; its exit signal is the caller's leader's whatever the clone
// asked for; the caller's wait for it fails with ECHILD; the common parent
// reaps it.
func TestCloneParentSibling_A17(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	c := e.fork(p)
	s := e.clone(c, unix.CLONE_PARENT, unix.SIGUSR2)
	if s.Getppid() != p.Getpid() || s.Parent() != p {
		t.Fatalf("sibling's parent %d, want %d", s.Getppid(), p.Getpid())
	}
	if s.tg.exitSignal != int32(unix.SIGCHLD) {
		t.Fatalf("sibling's exit signal %d, want the caller's leader's (SIGCHLD)", s.tg.exitSignal)
	}
	e.wantWait(c, s.Getpid(), unix.WALL, unix.ECHILD)
	e.wantWait(c, -1, unix.WALL, unix.ECHILD)
	e.exit(s, 7)
	e.reap(p, -1, 0, s.Getpid(), exited(7))

	// From a caller whose exit signal is SIGUSR1 the sibling inherits it,
	// so only __WCLONE finds it. The parent handles SIGUSR1, which would
	// otherwise kill it (B7).
	if _, err := p.Sigaction(int(unix.SIGUSR1), SigAction{Handler: SigHandler}); err != nil {
		t.Fatal(err)
	}
	c2 := e.clone(p, 0, unix.SIGUSR1)
	s2 := e.clone(c2, unix.CLONE_PARENT, unix.SIGCHLD)
	e.exit(s2, 3)
	e.wantWait(p, s2.Getpid(), 0, unix.ECHILD)
	e.reap(p, s2.Getpid(), unix.WCLONE, s2.Getpid(), exited(3))

	// A thread's CLONE_PARENT child is the process's parent's child too.
	th := e.thread(c)
	s3 := e.clone(th, unix.CLONE_PARENT, unix.SIGCHLD)
	if s3.Parent() != p {
		t.Fatal("CLONE_PARENT from a thread")
	}
	for _, x := range []*Task{s3, th, c, c2} {
		e.exit(x, 0)
	}
	e.reap(p, s3.Getpid(), 0, s3.Getpid(), exited(0))
	e.reap(p, c.Getpid(), 0, c.Getpid(), exited(0))
	e.reap(p, c2.Getpid(), unix.WALL, c2.Getpid(), exited(0))
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestCloneParentOfOrphanedCaller_A17: CLONE_PARENT by a process whose
// parent has exited makes a child of its new parent.
func TestCloneParentOfOrphanedCaller_A17(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	c := e.fork(p)
	e.exitReaped(e.init, 0, p)
	s := e.clone(c, unix.CLONE_PARENT, unix.SIGCHLD)
	if s.Parent() != e.init || c.Parent() != e.init {
		t.Fatal("sibling of a reparented caller must be the reaper's child")
	}
	e.exitReaped(e.init, 0, s, c)
	e.settle()
}

// TestCloneChild_A18: the caller is the parent and the exit signal is the
// one clone was given.
func TestCloneChild_A18(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	th := e.thread(p)
	c := e.clone(th, 0, unix.SIGUSR2)
	if c.Parent() != th || c.Getppid() != p.Getpid() {
		t.Fatal("the calling thread must be the parent")
	}
	if c.tg.exitSignal != int32(unix.SIGUSR2) {
		t.Fatalf("exit signal %d", c.tg.exitSignal)
	}
	// Only the low byte of the exit signal counts (CSIGNAL).
	c2 := e.clone(p, 0, unix.Signal(0x100|int(unix.SIGCHLD)))
	if c2.tg.exitSignal != int32(unix.SIGCHLD) {
		t.Fatalf("exit signal %d, want SIGCHLD", c2.tg.exitSignal)
	}
	if _, err := p.Sigaction(int(unix.SIGUSR2), SigAction{Handler: SigIgn}); err != nil {
		t.Fatal(err)
	}
	e.exit(c, 0)
	e.exit(c2, 0)
	e.reap(p, -1, unix.WCLONE, c.Getpid(), exited(0))
	e.reap(p, -1, 0, c2.Getpid(), exited(0))
	e.exit(th, 0)
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestCloneInherits_A19: process group and session are inherited, and
// has_child_subreaper is the parent's has_child_subreaper ||
// is_child_subreaper.
func TestCloneInherits_A19(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	if _, err := p.Setsid(); err != nil {
		t.Fatal(err)
	}
	c := e.fork(p)
	if pg, _ := c.Getpgid(0); pg != p.Getpid() {
		t.Fatalf("child's pgid %d, want %d", pg, p.Getpid())
	}
	if sid, _ := c.Getsid(0); sid != p.Getpid() {
		t.Fatalf("child's sid %d, want %d", sid, p.Getpid())
	}
	if c.tg.hasChildSubreaper.Load() {
		t.Fatal("no subreaper above, but has_child_subreaper")
	}
	if err := p.PrctlSetChildSubreaper(true); err != nil || !p.PrctlGetChildSubreaper() {
		t.Fatal("PR_SET_CHILD_SUBREAPER")
	}
	// Existing descendants are marked (walk_process_tree) ...
	if !c.tg.hasChildSubreaper.Load() {
		t.Fatal("existing child not marked")
	}
	// ... and new ones inherit it, through generations.
	g := e.fork(c)
	if !g.tg.hasChildSubreaper.Load() || g.tg.isChildSubreaper.Load() {
		t.Fatal("grandchild must have has_child_subreaper and not is_child_subreaper")
	}
	e.exit(g, 0)
	e.reap(c, -1, 0, g.Getpid(), exited(0))
	e.exit(c, 0)
	e.reap(p, -1, 0, c.Getpid(), exited(0))
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestCloneNewPIDNamespaceInit_A20: pid 1 of a new namespace is its child
// reaper and SIGNAL_UNKILLABLE (host: a namespace init ignores a
// default-action SIGUSR1 parent-death signal; SIGKILL from its parent in
// the ancestor namespace kills it).
func TestCloneNewPIDNamespaceInit_A20(t *testing.T) {
	e := newEnv(t, Config{})
	for _, tc := range []struct {
		sig  unix.Signal
		want unix.WaitStatus
	}{{unix.SIGUSR1, exited(42)}, {unix.SIGKILL, killed(unix.SIGKILL)}} {
		mustOK(t, e.init.PrctlSetChildSubreaper(true))
		p := e.fork(e.init)
		i := e.clone(p, unix.CLONE_NEWPID, unix.SIGCHLD)
		if i.Namespace().ChildReaper() != i || !i.tg.unkillable || i.Getpid() != 1 {
			t.Fatal("pid 1 of a new namespace must be its unkillable child reaper")
		}
		mustOK(t, i.PrctlSetPdeathsig(int(tc.sig)))
		e.exitReaped(e.init, 0, p)
		e.k.Quiesce()
		if tc.sig == unix.SIGUSR1 {
			if i.Exited() {
				t.Fatal("namespace init died of a default-action SIGUSR1")
			}
			e.exit(i, 42)
		}
		e.reap(e.init, -1, 0, i.PIDIn(e.k.RootNamespace()), tc.want)
	}
	e.settle()
}
