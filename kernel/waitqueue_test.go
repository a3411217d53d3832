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
	e := newLCEnv(t, Config{})
	w := e.fork(e.init)
	noErr(t, "setpgid", w.Setpgid(0, 0))
	a := e.fork(w)
	b := e.fork(w)
	noErr(t, "setpgid", b.Setpgid(0, 0))
	out := e.blockedWait(w, 0, 0)
	noErr(t, "setpgid", a.Setpgid(0, 0))
	e.exit(a, 1)
	e.k.Quiesce()
	e.stillBlocked(out)
	noErr(t, "setpgid", b.Setpgid(0, w.Getpid()))
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
	e := newLCEnv(t, Config{})
	p := e.fork(e.init)
	th := e.thread(p)
	c := e.clone(p, 0, unix.SIGUSR1) // a __WCLONE child of p's leader
	d := e.fork(th)                  // a child of the other thread
	noErr(t, "setpgid", d.Setpgid(0, 0))
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
	noErr(t, "seize", th.Ptrace(unix.PTRACE_SEIZE, c.Gettid(), 0, 0))
	w := childWait{t: th, sel: waitSelector{all: true}, opts: unix.WNOTHREAD}
	if !w.shouldWake(c) {
		t.Error("__WNOTHREAD: news of a tracee does not wake its tracer thread")
	}
	e.check()
}
