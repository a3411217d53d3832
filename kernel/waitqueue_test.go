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

// eligible_child tests the wait class before wait_consider_task looks at
// the tracing: a traced child of the other class is passed over by the
// children scan and found by the tracee scan after it, so a plain wait
// reports a SIGCHLD child's exit first (C5, C11; corpus c42).
func TestOtherClassTraceeFoundAfterChildren_C5(t *testing.T) {
	e := newEnv(t, Config{})
	p1 := e.clone(e.init, 0, unix.SIGURG)
	p2 := e.fork(e.init)
	e.ptrace(e.init, unix.PTRACE_SEIZE, p1, 0)
	e.exit(p1, 1)
	e.exit(p2, 2)
	e.check()
	e.reap(e.init, -1, unix.WNOHANG, p2.Getpid(), exited(2))
	e.reap(e.init, -1, unix.WNOHANG, p1.Getpid(), exited(1))

	p3 := e.clone(e.init, 0, unix.SIGURG)
	p4 := e.fork(e.init)
	e.ptrace(e.init, unix.PTRACE_SEIZE, p3, 0)
	e.ptrace(e.init, unix.PTRACE_INTERRUPT, p3, 0)
	e.exit(p4, 4)
	e.check()
	e.reap(e.init, -1, unix.WNOHANG, p4.Getpid(), exited(4))
	trap := stopped(unix.SIGTRAP, ptraceEventStop)
	e.reap(e.init, -1, unix.WNOHANG, p3.Getpid(), trap)
	e.kill(e.init, p3, unix.SIGKILL)
	e.reap(e.init, -1, unix.WALL, p3.Getpid(), killed(unix.SIGKILL))
	e.settle()
}

// A tracee killed in a ptrace stop its tracer has not collected leaves
// the stop: task_stopped_code reports only a task in TASK_TRACED, so a
// wait for stops alone sees nothing, and as the zombie counts only for
// WEXITED it fails with ECHILD (C10; corpus d142).
func TestKilledTraceeStopNotReported_C10(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	e.ptrace(e.init, unix.PTRACE_ATTACH, p, 0)
	e.check()
	e.kill(e.init, p, unix.SIGKILL)
	e.check()
	ctx, cancel := e.ctx()
	defer cancel()
	_, err := e.init.Waitid(ctx, unix.P_ALL, 0, unix.WNOHANG|unix.WSTOPPED|unix.WALL)
	errIs(t, "waitid for stops of a killed tracee", err, unix.ECHILD)
	e.reap(e.init, -1, unix.WNOHANG|unix.WALL, p.Getpid(), killed(unix.SIGKILL))
	e.settle()
}

// reparent_leader does not notify a traced zombie, but once its tracer's
// process is its real parent it is no longer ptrace_reparented: the
// tracer's children scan reports it in children-list order, before a
// zombie child forked after the adoption (B9, C11; corpus c43).
func TestTracedZombieAdoptedByTracer_C11(t *testing.T) {
	e := newEnv(t, Config{})
	p1 := e.fork(e.init)
	p3 := e.fork(p1)
	e.ptrace(e.init, unix.PTRACE_SEIZE, p3, 0)
	e.kill(e.init, p3, unix.SIGKILL)
	e.exit(p1, 0)
	p4 := e.fork(e.init)
	e.exit(p4, 5)
	e.check()
	e.reap(e.init, -1, unix.WNOHANG|unix.WALL, p1.Getpid(), exited(0))
	e.reap(e.init, -1, unix.WNOHANG|unix.WALL, p3.Getpid(), killed(unix.SIGKILL))
	e.reap(e.init, -1, unix.WNOHANG|unix.WALL, p4.Getpid(), exited(5))
	e.settle()
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
		s.exitReaped(s.init, p, 0)
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
