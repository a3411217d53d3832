package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

// child_wait_callback: a sleeping waiter wakes only for news of a task
// its selector names, so a child that left the waited-for process group
// and exits neither wakes it nor ends its wait with ECHILD; the wait goes
// on until a child of the group has news (C1, C7; corpus c40).
func TestWaitWokenOnlyByMatchingChild_C7(t *testing.T) {
	e := newEnv(t, Config{})
	w := e.fork(e.init)
	errIs(t, "setpgid", w.Setpgid(0, 0), nil)
	a := e.fork(w)
	b := e.fork(w)
	errIs(t, "setpgid", b.Setpgid(0, 0), nil)
	out := e.blockedWait(w, 0, 0)
	errIs(t, "setpgid", a.Setpgid(0, 0), nil)
	e.exit(a, 1)
	e.k.Quiesce()
	e.stillBlocked(out)
	errIs(t, "setpgid", b.Setpgid(0, w.Getpid()), nil)
	e.stillBlocked(out)
	e.exit(b, 2)
	if o := e.result(out); o.err != nil || o.r.Pid != b.Getpid() || o.r.Status != exited(2) {
		t.Fatalf("wait4(0) = {pid %d status %#x}, %v; want %d exited 2", o.r.Pid, uint32(o.r.Status), o.err, b.Getpid())
	}
	e.reap(w, -1, unix.WNOHANG, a.Getpid(), exited(1))
	e.check()
}

// pid_child_should_wake: eligible_pid (any task, the task with the pid,
// a task of the process group) and, with __WNOTHREAD, the key's parent
// (its tracer if traced) being the waiting thread. The wait class plays
// no part.
func TestPidChildShouldWake(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	th := e.thread(p)
	c := e.clone(p, 0, unix.SIGUSR1) // a __WCLONE child of p's leader
	d := e.fork(th)                  // a child of the other thread
	errIs(t, "setpgid", d.Setpgid(0, 0), nil)
	ns := p.Namespace()
	pidOf := func(x *Task) *PID { return ns.alloc.Load(x.Gettid()) }
	for _, tc := range []struct {
		name string
		w    childWait
		key  *Task
		want bool
	}{
		{"any child", childWait{t: p, sel: waitSelector{all: true}}, d, true},
		{"any child, other class", childWait{t: p, sel: waitSelector{all: true}}, c, true},
		{"by pid, that child", childWait{t: p, sel: waitSelector{pid: pidOf(c)}}, c, true},
		{"by pid, another child", childWait{t: p, sel: waitSelector{pid: pidOf(c)}}, d, false},
		{"by group, a member", childWait{t: p, sel: waitSelector{pid: pidOf(d), pgrp: true}}, d, true},
		{"by group, not a member", childWait{t: p, sel: waitSelector{pid: pidOf(d), pgrp: true}}, c, false},
		{"__WNOTHREAD, own child", childWait{t: th, sel: waitSelector{all: true}, opts: unix.WNOTHREAD}, d, true},
		{"__WNOTHREAD, sibling's child", childWait{t: p, sel: waitSelector{all: true}, opts: unix.WNOTHREAD}, d, false},
	} {
		if got := tc.w.shouldWake(tc.key); got != tc.want {
			t.Errorf("%s: shouldWake = %v, want %v", tc.name, got, tc.want)
		}
	}
	e.ptrace(th, unix.PTRACE_SEIZE, c, 0)
	w := childWait{t: th, sel: waitSelector{all: true}, opts: unix.WNOTHREAD}
	if !w.shouldWake(c) {
		t.Error("__WNOTHREAD: news of a tracee does not wake its tracer thread")
	}
	e.check()
}

// Hard case for the waiter queue: threads of one process each sleep in a
// wait for their own child, by pid or by the child's own process group,
// while the children exit concurrently and in any order. Every wait-up is
// filtered by its selector, so none may be lost: each wait reports its own
// child.
func TestStressSelectiveWakeups(t *testing.T) {
	atEachGOMAXPROCS(t, func(t *testing.T) {
		s := newStress(t, 11, Config{})
		p := s.fork(s.init)
		const n = 8
		for round := range 20 {
			var waiters, children [n]*Task
			outs := make([]<-chan callOut, n)
			for i := range n {
				waiters[i] = p
				if i > 0 {
					waiters[i] = s.thread(p)
				}
				children[i] = s.fork(waiters[i])
				if i%2 == 1 {
					errIs(t, "setpgid", children[i].Setpgid(0, 0), nil)
				}
			}
			for i := range n {
				sel := children[i].Getpid()
				if i%2 == 1 {
					sel = -sel
				}
				outs[i] = s.blockedWait(waiters[i], sel, 0)
			}
			var exits []func()
			for i, c := range children {
				exits = append(exits, func() { s.exit(c, i) })
			}
			s.concurrently(exits...)
			for i := range n {
				if o := s.result(outs[i]); o.err != nil || o.r.Pid != children[i].Getpid() || o.r.Status != exited(i) {
					t.Fatalf("round %d: wait %d = {pid %d status %#x}, %v; want %d exited %d",
						round, i, o.r.Pid, uint32(o.r.Status), o.err, children[i].Getpid(), i)
				}
			}
			for i := 1; i < n; i++ {
				s.exit(waiters[i], 0)
			}
		}
		s.exitReaped(s.init, 0, p)
		s.settle()
		s.end()
	})
}

// __ptrace_detach wakes no waiter: a wait whose only eligible child was a
// tracee of its process's other thread sleeps on after the detach, until
// the child's exit wakes it to find nothing left to wait for (C7, D7;
// corpus c44).
func TestDetachWakesNoWaiter_C7(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	tracer := e.thread(p)
	c := e.clone(p, 0, 0)
	e.ptrace(tracer, unix.PTRACE_SEIZE, c, 0)
	e.ptrace(tracer, unix.PTRACE_INTERRUPT, c, 0)
	e.check()
	trap := stopped(unix.SIGTRAP, ptraceEventStop)
	e.reap(tracer, c.Gettid(), unix.WALL, c.Gettid(), trap)
	out := e.blockedWait(p, c.Getpid(), 0)
	e.ptrace(tracer, unix.PTRACE_DETACH, c, 0)
	e.check()
	e.stillBlocked(out)
	e.exit(c, 1)
	if o := e.result(out); o.err != unix.ECHILD {
		t.Fatalf("wait after the child's exit = {pid %d}, %v; want ECHILD", o.r.Pid, o.err)
	}
	e.reap(p, c.Getpid(), unix.WCLONE, c.Getpid(), exited(1))
	e.check()
}
