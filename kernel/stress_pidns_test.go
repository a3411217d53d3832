package kernel

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStressForkIntoDyingNamespace races forks into a pid namespace
// against the exit of its init, from inside (a task of the namespace) and
// from outside (the process that unshared it). A fork either fails with
// ENOMEM (or the caller, being killed, gets EINTR or ESRCH) or its child is
// killed with the namespace: nothing survives, and once the init is gone a
// fork into the namespace fails with ENOMEM (A13).
func TestStressForkIntoDyingNamespace(t *testing.T) {
	s := newStress(t, 6, Config{})
	for i := range s.rounds(300) {
		inside := i%2 == 0
		u := s.fork(s.init)
		var n, forker *Task
		if inside {
			n = s.clone(u, unix.CLONE_NEWPID, unix.SIGCHLD)
			forker = s.fork(n)
		} else {
			mustOK(t, u.Unshare(unix.CLONE_NEWPID))
			n = s.fork(u)
			forker = u
		}
		ns := n.Namespace()
		if n.Getpid() != 1 || ns.Level() != 1 {
			t.Fatalf("iteration %d: namespace init has pid %d at level %d", i, n.Getpid(), ns.Level())
		}
		npid := n.PIDIn(s.k.RootNamespace())

		var kids []*Task
		var ferr, xerr error
		s.concurrently(
			func() { xerr = n.Exit(0) },
			func() {
				for range 3 {
					x, err := forker.Fork()
					if err != nil {
						ferr = err
						return
					}
					kids = append(kids, x)
				}
			})
		mustOK(t, xerr)
		allowed := []error{unix.ENOMEM}
		if inside {
			allowed = append(allowed, unix.EINTR, unix.ESRCH)
		}
		if ferr != nil && !isOneOf(ferr, allowed...) {
			t.Fatalf("iteration %d (inside %v): fork into a dying namespace: %v", i, inside, ferr)
		}
		s.count("%d forked, then %v", len(kids), ferr)
		waitOrDump(t, "Quiesce", s.k.Quiesce)
		for _, x := range kids {
			if !x.Exited() {
				t.Fatalf("iteration %d (inside %v): pid %d forked into the namespace survived its init",
					i, inside, x.PIDIn(s.k.RootNamespace()))
			}
		}
		if inside && !forker.Exited() {
			t.Fatalf("iteration %d: a task of the namespace survived its init", i)
		}
		if !inside {
			if _, err := u.Fork(); !errors.Is(err, unix.ENOMEM) {
				t.Fatalf("iteration %d: fork into a namespace whose init died: %v, want ENOMEM", i, err)
			}
		}
		// The namespace's init finishes exiting only once u has reaped
		// what it forked into it.
		reaped := s.reapAll(u)
		if st, ok := reaped[npid]; !ok || st != 0 {
			t.Fatalf("iteration %d: namespace init (pid %d) reaped %v, status %#x; all: %v", i, npid, ok, uint32(st), reaped)
		}
		wantReaped := 1
		if !inside {
			wantReaped += len(kids)
			for _, x := range kids {
				st := reaped[x.PIDIn(s.k.RootNamespace())]
				if !st.Signaled() || st.Signal() != unix.SIGKILL {
					t.Fatalf("iteration %d: child in the dying namespace has status %#x, want SIGKILL", i, uint32(st))
				}
			}
		}
		if len(reaped) != wantReaped {
			t.Fatalf("iteration %d: reaped %v, want %d", i, reaped, wantReaped)
		}
		if got := ns.Allocated(); got != 0 {
			t.Fatalf("iteration %d: dead namespace still has %d pids", i, got)
		}
		s.exitReaped(s.init, 0, u)
	}
	s.end()
}

// TestStressNamespaceInitThreadsExit makes the last two threads of a pid
// namespace's init exit at once while a task of the namespace forks. The
// namespace is zapped once: nothing in it survives, and the init's parent
// is notified exactly once, after the namespace drained, with the status of
// one of the two exits.
func TestStressNamespaceInitThreadsExit(t *testing.T) {
	s := newStress(t, 7, Config{})
	root := s.k.RootNamespace()
	for i := range s.rounds(300) {
		u := s.fork(s.init)
		n := s.clone(u, unix.CLONE_NEWPID, unix.SIGCHLD)
		nt := s.thread(n)
		a := s.fork(n)
		b := s.fork(a)
		ns, npid := n.Namespace(), n.PIDIn(root)

		var errs [2]error
		var kids []*Task
		s.concurrently(
			func() { errs[0] = n.Exit(1) },
			func() { errs[1] = nt.Exit(2) },
			func() {
				for range 3 {
					x, err := a.Fork()
					if err != nil {
						return
					}
					kids = append(kids, x)
				}
			})
		mustOK(t, errors.Join(errs[:]...))
		waitOrDump(t, "Quiesce", s.k.Quiesce)
		for _, x := range append(kids, a, b) {
			if !x.Exited() {
				t.Fatalf("iteration %d: pid %d of the namespace survived its init", i, x.PIDIn(root))
			}
		}
		// The namespace is dead but its zombie init is not reaped yet.
		s.check()
		r := s.waitOne(u, npid, 0)
		if !r.Status.Exited() || r.Status.ExitStatus() != 1 && r.Status.ExitStatus() != 2 {
			t.Fatalf("iteration %d: namespace init's status %#x, want exit 1 or 2", i, uint32(r.Status))
		}
		s.wantWait(u, -1, unix.WNOHANG|unix.WALL, unix.ECHILD)
		if got := ns.Allocated(); got != 0 {
			t.Fatalf("iteration %d: dead namespace still has %d pids", i, got)
		}
		s.exitReaped(s.init, 0, u)
	}
	s.end()
}

// TestStressWaitByPidVsClone races wait4 and waitid for one pid against
// the clone that is about to allocate that number, and waits for pid 1. The
// waiter has no children, so every wait must fail with ECHILD: a task that
// clone has not published does not exist for wait, and init is nobody's
// child here.
func TestStressWaitByPidVsClone(t *testing.T) {
	s := newStress(t, 8, Config{})
	forker, waiter := s.fork(s.init), s.fork(s.init)
	var next atomic.Int64
	next.Store(int64(waiter.Getpid() + 1))
	fork := func() {
		for range iterations(4000) {
			c, err := forker.Fork()
			if err != nil {
				t.Errorf("fork: %v", err)
				return
			}
			next.Store(int64(c.Getpid() + 1))
			if err := c.Exit(0); err != nil {
				t.Errorf("exit: %v", err)
				return
			}
			if _, err := forker.Wait4(context.Background(), c.Getpid(), 0); err != nil {
				t.Errorf("wait4: %v", err)
				return
			}
		}
	}
	waitByPid := func() error {
		pid := int(next.Load())
		for _, p := range []int{pid, pid + 1, 1} {
			if r, err := waiter.Wait4(context.Background(), p, unix.WNOHANG|unix.WALL); !errors.Is(err, unix.ECHILD) {
				return fmt.Errorf("wait4(%d) by a process without children: %+v, %v", p, r, err)
			}
			if r, err := waiter.Waitid(context.Background(), unix.P_PID, p, unix.WNOHANG|unix.WEXITED); !errors.Is(err, unix.ECHILD) {
				return fmt.Errorf("waitid(P_PID, %d) by a process without children: %+v, %v", p, r, err)
			}
		}
		return nil
	}
	s.whileMoving([]func(){fork}, []func() error{waitByPid})
	s.end()
}
