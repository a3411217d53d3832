package kernel

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Behaviours marked "host" were checked on Linux 6.18 with small C
// programs calling wait4(2) and waitid(2) directly.

// TestWait4Selectors_C1: -1 any child, < -1 a process group, 0 the
// caller's group as it is when the call starts, > 0 one pid; INT_MIN is
// ESRCH (host).
func TestWait4Selectors_C1(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	a, b := e.fork(p), e.fork(p)
	if _, err := b.Setsid(); err != nil { // b leads group b, outside p's group
		t.Fatal(err)
	}
	_, err := e.wait4(p, math.MinInt32, unix.WNOHANG)
	errIs(t, "wait4(INT_MIN)", err, unix.ESRCH)
	e.exit(a, 1)
	e.exit(b, 2)
	e.reap(p, -b.Getpid(), unix.WNOHANG, b.Getpid(), exited(2))
	e.wantWait(p, -b.Getpid(), unix.WNOHANG, unix.ECHILD) // the group is gone with b
	e.reap(p, 0, unix.WNOHANG, a.Getpid(), exited(1))     // a is in p's group

	// wait4(0) samples the caller's group when it starts: a wait that
	// began in init's group still waits for it after the caller moves.
	c := e.fork(p)
	out := e.blockedWait(p, 0, 0)
	th := e.thread(p)
	if _, err := th.Setsid(); err != nil {
		t.Fatal(err)
	}
	e.wantWait(p, 0, unix.WNOHANG, unix.ECHILD) // c is not in p's new group
	e.exit(c, 3)
	if o := e.result(out); o.err != nil || o.r.Pid != c.Getpid() || o.r.Status != exited(3) {
		t.Fatalf("wait4(0) begun before setsid: %+v %v", o.r, o.err)
	}
	e.exit(th, 0)
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestWaitOptionValidation_C2_C3 (host): wait4 takes no WNOWAIT, waitid
// needs WEXITED, WSTOPPED or WCONTINUED; bad ids and idtypes are EINVAL.
func TestWaitOptionValidation_C2_C3(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	ctx := t.Context()
	for _, opts := range []int{unix.WNOWAIT, unix.WEXITED << 4, 0x8000} {
		_, err := p.Wait4(ctx, -1, opts)
		errIs(t, "wait4 bad options", err, unix.EINVAL)
	}
	for _, opts := range []int{unix.WEXITED | unix.WUNTRACED | unix.WCONTINUED | unix.WNOHANG | unix.WNOTHREAD | unix.WCLONE | unix.WALL} {
		_, err := p.Wait4(ctx, -1, opts&^unix.WEXITED)
		errIs(t, "wait4 valid options, no children", err, unix.ECHILD)
	}
	for _, tc := range []struct {
		name        string
		idtype, id  int
		opts        int
		wantErrWith error
	}{
		{"no WEXITED/WSTOPPED/WCONTINUED", unix.P_ALL, 0, unix.WNOHANG, unix.EINVAL},
		{"unknown option", unix.P_ALL, 0, unix.WEXITED | 0x80, unix.EINVAL},
		{"P_PID 0", unix.P_PID, 0, unix.WEXITED, unix.EINVAL},
		{"P_PID -1", unix.P_PID, -1, unix.WEXITED, unix.EINVAL},
		{"P_PGID -1", unix.P_PGID, -1, unix.WEXITED, unix.EINVAL},
		{"idtype 7", 7, 0, unix.WEXITED, unix.EINVAL},
		{"P_PGID 0 is the caller's group", unix.P_PGID, 0, unix.WEXITED | unix.WNOHANG, unix.ECHILD},
		{"WSTOPPED alone is valid", unix.P_ALL, 0, unix.WSTOPPED | unix.WNOHANG, unix.ECHILD},
	} {
		_, err := p.Waitid(ctx, tc.idtype, tc.id, tc.opts)
		errIs(t, tc.name, err, tc.wantErrWith)
	}
	// P_PGID 0 finds a child in the caller's group.
	c := e.fork(p)
	e.exit(c, 1)
	if r, err := p.Waitid(ctx, unix.P_PGID, 0, unix.WEXITED); err != nil || r.Pid != c.Getpid() || r.Code != CLDExited {
		t.Fatalf("waitid(P_PGID, 0): %+v %v", r, err)
	}
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestWaitNoSuchTarget_C4 (host): a pid or group with no task fails at once
// with ECHILD, even without WNOHANG; so does one that is not a child.
func TestWaitNoSuchTarget_C4(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	c := e.fork(p) // keeps p's wait from failing for lack of children
	gone := e.fork(e.init)
	gonePID := gone.Getpid()
	e.exit(gone, 0)
	e.reap(e.init, gonePID, 0, gonePID, exited(0))
	e.wantWait(p, gonePID, 0, unix.ECHILD)
	e.wantWait(p, -gonePID, 0, unix.ECHILD)
	e.wantWait(p, 9999, 0, unix.ECHILD)
	e.wantWait(p, 1, 0, unix.ECHILD) // init exists but has no parent
	e.wantWait(p, p.Getpid(), 0, unix.ECHILD)
	if _, err := p.Waitid(t.Context(), unix.P_PID, 9999, unix.WEXITED); !errors.Is(err, unix.ECHILD) {
		t.Fatalf("waitid(P_PID, 9999): %v", err)
	}
	// A thread id of a child is not a child's pid.
	th := e.thread(c)
	e.wantWait(p, th.Gettid(), unix.WALL, unix.ECHILD)
	e.exit(th, 0)
	e.exitReaped(p, 0, c)
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestWaitClasses_C5 (host): by default only SIGCHLD children, with
// __WCLONE only the others, with __WALL all; the selectors by pid and by
// group apply the same rule.
func TestWaitClasses_C5(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	if _, err := p.Sigaction(int(unix.SIGUSR1), SigAction{Handler: SigIgn}); err != nil {
		t.Fatal(err)
	}
	f := e.fork(p)
	u := e.clone(p, 0, unix.SIGUSR1)
	e.exit(f, 1)
	e.exit(u, 2)
	e.wantWait(p, u.Getpid(), unix.WNOHANG, unix.ECHILD)
	e.wantWait(p, f.Getpid(), unix.WNOHANG|unix.WCLONE, unix.ECHILD)
	e.reap(p, -1, unix.WNOHANG|unix.WCLONE, u.Getpid(), exited(2))
	e.wantWait(p, -1, unix.WNOHANG|unix.WCLONE, unix.ECHILD)
	e.reap(p, 0, unix.WNOHANG|unix.WALL, f.Getpid(), exited(1))

	// Not ready: a default wait with only a __WCLONE child alive is ECHILD;
	// with __WALL it is "nothing yet".
	u = e.clone(p, 0, unix.SIGUSR1)
	e.wantWait(p, -1, unix.WNOHANG, unix.ECHILD)
	e.wantWait(p, -1, unix.WNOHANG|unix.WALL, nil)
	e.wantWait(p, -1, unix.WNOHANG|unix.WCLONE|unix.WALL, nil)
	e.exit(u, 0)
	e.reap(p, u.Getpid(), unix.WALL, u.Getpid(), exited(0))
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestWaitChildrenOfAllThreads_C6 (host): children of every thread are
// waited for; __WNOTHREAD limits the wait to the caller's own children, and
// gives ECHILD when it has none.
func TestWaitChildrenOfAllThreads_C6(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	th := e.thread(p)
	c := e.fork(th)
	e.wantWait(p, -1, unix.WNOHANG|unix.WNOTHREAD, unix.ECHILD)
	e.wantWait(p, c.Getpid(), unix.WNOHANG|unix.WNOTHREAD, unix.ECHILD)
	e.wantWait(th, -1, unix.WNOHANG|unix.WNOTHREAD, nil)
	e.exit(c, 4)
	e.wantWait(p, -1, unix.WNOHANG|unix.WNOTHREAD, unix.ECHILD)
	e.reap(p, -1, unix.WNOHANG, c.Getpid(), exited(4))

	c = e.fork(th)
	e.exit(c, 5)
	e.reap(th, -1, unix.WNOTHREAD, c.Getpid(), exited(5))
	e.exit(th, 0)
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestWaitResult_C7: the pid is the one in the caller's namespace; WNOHANG
// says 0 while something is eligible, ECHILD when nothing is; a blocking
// wait ends with EINTR when cancelled or when the waiter is killed.
func TestWaitResult_C7(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	i := e.clone(p, unix.CLONE_NEWPID, unix.SIGCHLD)
	c := e.fork(i)
	e.exit(c, 1)
	e.reap(i, -1, 0, 2, exited(1)) // pid 2 in the new namespace
	e.exit(i, 2)
	e.reap(p, -1, 0, i.PIDIn(e.k.RootNamespace()), exited(2))

	c = e.fork(p)
	e.wantWait(p, -1, unix.WNOHANG, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { _, err := p.Wait4(ctx, -1, 0); done <- err }()
	for !p.Sleeping() {
	}
	cancel()
	if err := <-done; !errors.Is(err, unix.EINTR) {
		t.Fatalf("cancelled wait: %v, want EINTR", err)
	}
	// The waiter's process is killed while it sleeps.
	mustOK(t, p.PrctlSetPdeathsig(int(unix.SIGKILL)))
	q := e.fork(e.init)
	w := e.fork(q) // a child of q, waiting for its own child
	wc := e.fork(w)
	mustOK(t, w.PrctlSetPdeathsig(int(unix.SIGKILL)))
	out := e.blockedWait(w, -1, 0)
	e.exit(q, 0)
	if o := e.result(out); !errors.Is(o.err, unix.EINTR) {
		t.Fatalf("killed waiter got %+v %v, want EINTR", o.r, o.err)
	}
	e.exit(c, 0)
	e.reap(p, -1, 0, c.Getpid(), exited(0))
	e.exit(p, 0)
	e.exit(wc, 0)
	e.k.Quiesce()
	for range 4 { // p, q, w (killed) and wc, all init's now
		if _, err := e.wait4(e.init, -1, 0); err != nil {
			t.Fatal(err)
		}
	}
	e.settle()
}

// TestWaitClaimExactlyOnce_C9 (host): several threads wait for one child;
// one gets it and the others, with nothing else eligible, ECHILD.
func TestWaitClaimExactlyOnce_C9(t *testing.T) {
	e := newEnv(t, Config{})
	for range 100 {
		p := e.fork(e.init)
		waiters := []*Task{p, e.thread(p), e.thread(p), e.thread(p)}
		c := e.fork(p)
		outs := make([]<-chan callOut, len(waiters))
		for i, w := range waiters {
			outs[i] = e.blockedWait(w, -1, 0)
		}
		e.exit(c, 8)
		got := 0
		for _, out := range outs {
			o := e.result(out)
			switch {
			case o.err == nil && o.r.Pid == c.Getpid() && o.r.Status == exited(8):
				got++
			case errors.Is(o.err, unix.ECHILD):
			default:
				t.Fatalf("waiter got %+v %v", o.r, o.err)
			}
		}
		if got != 1 {
			t.Fatalf("%d waiters reaped the child, want exactly 1", got)
		}
		e.exitGroup(p, 0)
		e.reap(e.init, -1, 0, p.Getpid(), exited(0))
	}
	e.settle()
}

// TestWaitConcurrentWaitersOneZombieEach_C9: concurrent non-blocking and
// blocking waits on many zombies; each is reported exactly once.
func TestWaitConcurrentWaitersOneZombieEach_C9(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	waiters := []*Task{p, e.thread(p), e.thread(p)}
	const n = 200
	seen := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, w := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r, err := e.wait4(w, -1, 0)
				mu.Lock()
				if err == nil {
					seen[r.Pid]++
				}
				total := len(seen)
				mu.Unlock()
				if total == n {
					return
				}
				if err != nil && !errors.Is(err, unix.ECHILD) {
					t.Errorf("wait: %v", err)
					return
				}
			}
		}()
	}
	for range n {
		c := e.fork(p)
		e.exit(c, 0)
	}
	e.eventually("every zombie reaped", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == n })
	// Waiters still looping on ECHILD see the count and stop.
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d children reported, want %d", len(seen), n)
	}
	for pid, k := range seen {
		if k != 1 {
			t.Fatalf("child %d reported %d times", pid, k)
		}
	}
	e.exitGroup(p, 0)
	e.reap(e.init, -1, 0, p.Getpid(), exited(0))
	e.settle()
}

// TestWaitNoWait_C9 (host): waitid with WNOWAIT reports a zombie without
// reaping it; a later wait reaps it.
func TestWaitNoWait_C9(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	c := e.fork(p)
	e.exit(c, 9)
	for range 2 {
		r, err := p.Waitid(t.Context(), unix.P_PID, c.Getpid(), unix.WEXITED|unix.WNOWAIT)
		if err != nil || r.Pid != c.Getpid() || r.Status.ExitStatus() != 9 || r.Code != CLDExited {
			t.Fatalf("waitid WNOWAIT: %+v %v", r, err)
		}
	}
	r, err := p.Waitid(t.Context(), unix.P_ALL, 0, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG)
	if err != nil || r.Pid != c.Getpid() {
		t.Fatalf("waitid P_ALL WNOWAIT: %+v %v", r, err)
	}
	if e.k.RootNamespace().Lookup(c.Getpid()) != c {
		t.Fatal("WNOWAIT released the zombie")
	}
	e.reap(p, c.Getpid(), 0, c.Getpid(), exited(9))
	e.wantWait(p, -1, unix.WNOHANG, unix.ECHILD)
	// Without WEXITED a zombie is not waited for at all: with no other
	// child the wait fails with ECHILD, even with WNOHANG (checked on
	// Linux 6.18).
	c = e.fork(p)
	e.exit(c, 1)
	if r, err := p.Waitid(t.Context(), unix.P_ALL, 0, unix.WSTOPPED|unix.WNOWAIT|unix.WNOHANG); !errors.Is(err, unix.ECHILD) {
		t.Fatalf("waitid WSTOPPED on a zombie: %+v %v, want ECHILD", r, err)
	}
	e.reap(p, -1, 0, c.Getpid(), exited(1))
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestWaitStatusGroupExit_C8: a group exit reports group_exit_code even
// when the leader exited earlier with another code.
func TestWaitStatusGroupExit_C8(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	t1, t2 := e.thread(p), e.thread(p)
	e.exit(p, 1)
	e.exitGroup(t1, 6)
	if !t2.Exited() {
		t.Fatal("exit_group left a thread running")
	}
	r := e.reap(e.init, -1, 0, p.Getpid(), exited(6))
	if r.Status.ExitStatus() != 6 || !r.Status.Exited() {
		t.Fatalf("status %#x", uint32(r.Status))
	}
	e.settle()
}

// TestWaitReportsInChildrenListOrder_C6_C7: with several zombies ready,
// wait reports the first on the calling thread's children list, then on
// the other threads' lists in thread order, whatever order they died in;
// a child adopted from an exiting thread goes to the end of the adopter's
// list (checked on Linux 6.18).
func TestWaitReportsInChildrenListOrder_C6_C7(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	a, b := e.fork(p), e.fork(p)
	e.exit(b, 2)
	e.exit(a, 1)
	e.reap(p, -1, 0, a.Getpid(), exited(1))
	e.reap(p, -1, 0, b.Getpid(), exited(2))

	// Children of two threads: the caller's own come first.
	th := e.thread(p)
	fromThread := e.fork(th)
	fromLeader := e.fork(p)
	e.exit(fromLeader, 4)
	e.exit(fromThread, 3)
	e.reap(th, -1, 0, fromThread.Getpid(), exited(3))
	fromThread = e.fork(th)
	e.exit(fromThread, 3)
	e.reap(p, -1, 0, fromLeader.Getpid(), exited(4))
	e.reap(p, -1, 0, fromThread.Getpid(), exited(3))

	// The thread's children move to the leader's list behind its own.
	early := e.fork(th)
	mine := e.fork(p)
	e.exit(th, 0)
	e.exit(early, 5)
	e.exit(mine, 6)
	e.reap(p, -1, 0, mine.Getpid(), exited(6))
	e.reap(p, -1, 0, early.Getpid(), exited(5))

	e.exitReaped(e.init, 0, p)
	e.settle()
}
