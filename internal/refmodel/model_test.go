package refmodel

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

const threadFlags = unix.CLONE_THREAD | unix.CLONE_SIGHAND | unix.CLONE_VM

// B3, checked on the host: leader exits 3, threads exit 5 then 7; the
// parent sees the last thread's code.
func TestLastThreadCodeIsTheProcesss(t *testing.T) {
	m := New(Config{})
	p, _ := must2(m.Clone(1, 0, int(unix.SIGCHLD)))
	t1, _ := must2(m.Clone(p, threadFlags, 0))
	t2, _ := must2(m.Clone(p, threadFlags, 0))
	ok(t, m.Exit(p, 3))
	if r := must(m.Wait4(1, -1, unix.WNOHANG)); r.Pid != 0 {
		t.Fatalf("a leader with live threads was reaped: %+v", r)
	}
	ok(t, m.Exit(t1, 5))
	ok(t, m.Exit(t2, 7))
	if r := must(m.Wait4(1, -1, unix.WNOHANG)); r.Pid != p || r.Status != 7<<8 {
		t.Fatalf("got %+v, want pid %d status 0x700", r, p)
	}
}

// A7, checked on the host: a zombie still counts against RLIMIT_NPROC
// until it is reaped.
func TestNPROCCountsZombies(t *testing.T) {
	m := New(Config{})
	p, _ := must2(m.Clone(1, 0, int(unix.SIGCHLD)))
	ok(t, m.Setrlimit(p, unix.RLIMIT_NPROC, RLimit{2, 2}))
	ok(t, m.Setresuid(p, 1001, 1001, 1001))
	c, _ := must2(m.Clone(p, 0, int(unix.SIGCHLD)))
	ok(t, m.Exit(c, 0))
	if _, _, err := m.Clone(p, 0, int(unix.SIGCHLD)); !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("fork over the limit: %v, want EAGAIN", err)
	}
	must(m.Wait4(p, c, 0))
	must2(m.Clone(p, 0, int(unix.SIGCHLD)))
}

// A11: after the cursor passes 300, allocation wraps to 300, not 1.
func TestPIDWrapRestartsAt300(t *testing.T) {
	m := New(Config{PIDMax: 305})
	for i := 2; i < 305; i++ {
		c, _ := must2(m.Clone(1, 0, int(unix.SIGCHLD)))
		if c != i {
			t.Fatalf("pid %d, want %d", c, i)
		}
		ok(t, m.Exit(c, 0))
		must(m.Wait4(1, c, 0))
	}
	if c, _ := must2(m.Clone(1, 0, int(unix.SIGCHLD))); c != 300 {
		t.Fatalf("after the wrap got pid %d, want 300", c)
	}
}

// B11, A13: the namespace init's exit kills the namespace, its parent
// sees it only once the namespace is empty, and nothing can be forked
// into the dead namespace.
func TestNamespaceInitExitZapsNamespace(t *testing.T) {
	m := New(Config{})
	ni, seen := must2(m.Clone(1, unix.CLONE_NEWPID, int(unix.SIGCHLD)))
	if info, _ := m.Info(ni); info.Getpid != 1 || info.Getppid != 0 || seen != ni {
		t.Fatalf("namespace init %+v seen as %d", info, seen)
	}
	a, _ := must2(m.Clone(ni, 0, int(unix.SIGCHLD)))
	b, _ := must2(m.Clone(a, 0, int(unix.SIGCHLD)))
	th, _ := must2(m.Clone(ni, threadFlags, 0))
	ok(t, m.Exit(ni, 4)) // the leader: another thread becomes the reaper
	if m.ChildReaper(1) != th {
		t.Fatalf("child reaper %d, want %d", m.ChildReaper(1), th)
	}
	ok(t, m.Exit(th, 9))
	for _, tid := range []int{a, b, th} {
		if _, found := m.Info(tid); found {
			t.Fatalf("task %d survived its namespace", tid)
		}
	}
	if r := must(m.Wait4(1, ni, unix.WNOHANG)); r.Status != 9<<8 {
		t.Fatalf("init's status %+v", r)
	}
	if m.Allocated(1) != 0 {
		t.Fatalf("namespace still holds %d pids", m.Allocated(1))
	}
}

// B7: a child whose exit signal is fatal to its parent kills it; the
// child, reparented to init, is then reported there with SIGCHLD.
func TestExitSignalKillsParent(t *testing.T) {
	m := New(Config{})
	p, _ := must2(m.Clone(1, 0, int(unix.SIGCHLD)))
	c, _ := must2(m.Clone(p, 0, int(unix.SIGUSR1)))
	ok(t, m.Exit(c, 0))
	if r := must(m.Wait4(1, p, unix.WNOHANG)); r.Status != int(unix.SIGUSR1) {
		t.Fatalf("parent status %+v", r)
	}
	if r := must(m.Wait4(1, c, unix.WNOHANG)); r.Pid != c {
		t.Fatalf("reparented zombie %+v", r)
	}
}
