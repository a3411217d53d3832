package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

// Tests for model bugs the scenario corpus (testdata/scenarios) found by
// differing from Linux.

// A fork into a namespace whose init has died fails with ENOMEM, but only
// after alloc_pid has taken a number at every level: the cursors have
// moved, so the next pid handed out in the outer namespace skips the
// numbers the failed forks used (corpus a21).
func TestCorpusForkIntoDeadNamespaceUsesPIDs_A13(t *testing.T) {
	e := newEnv(t, Config{})
	outer := e.fork(e.init) // pid 2 of the root namespace
	ns := e.clone(outer, unix.CLONE_NEWPID, unix.SIGCHLD)
	a := e.fork(ns)
	if err := a.Unshare(unix.CLONE_NEWPID); err != nil {
		t.Fatal(err)
	}
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

// A wait whose task has been killed is not asleep any more, even before
// its goroutine has noticed: runners must not call it blocked (corpus b62,
// where a join printed EDEADLK instead of done).
func TestCorpusKilledWaiterIsNotSleeping_B2(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	th := e.thread(p)
	e.fork(p)
	out := e.blockedWait(th, -1, 0)
	// The group exit kills the waiting thread and finishes its exit; its
	// wait4 has not necessarily returned yet, but it is no longer asleep.
	e.exitGroup(p, 2)
	if th.Sleeping() {
		t.Error("a killed waiter reports Sleeping")
	}
	if o := e.result(out); o.err != unix.EINTR {
		t.Errorf("killed wait: %v, want EINTR", o.err)
	}
	e.check()
}

// A process's exit hands its zombie child to the process's own parent and
// makes the process a zombie in one step, as exit_notify does under
// tasklist_lock: the parent's waiter (a subreaper, so also the reaper), woken by the adopted zombie, must
// find the exiting process ready too and report it first, since it comes
// first on the children list (corpus c20; racy before the fix).
func TestCorpusAdoptionAndZombieAtomic_B9_C7(t *testing.T) {
	e := newEnv(t, Config{})
	for range 300 {
		s := e.fork(e.init)
		if err := s.PrctlSetChildSubreaper(true); err != nil {
			t.Fatal(err)
		}
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

// complete_signal and prepare_signal judge a signal sent to a process by
// the task it was sent to, not by the thread that takes it: with the
// untraced leader gone, a fatal SIGTERM kills the process through its
// traced thread, a SIGQUIT (which dumps core) stops that thread for its
// tracer, and an ignored SIGCHLD is dropped (corpus g41, g42, g43).
func TestCorpusSignalJudgedByAddressee_G1_D6(t *testing.T) {
	for _, c := range []struct {
		sig  unix.Signal
		want unix.WaitStatus // the traced thread's report; 0: none
	}{
		{unix.SIGTERM, killed(unix.SIGTERM)},
		{unix.SIGQUIT, stopped(unix.SIGQUIT, 0)},
		{unix.SIGCHLD, 0},
	} {
		e := newEnv(t, Config{})
		p := e.fork(e.init)
		th := e.thread(p)
		if err := e.init.Ptrace(unix.PTRACE_SEIZE, th.Gettid(), 0, 0); err != nil {
			t.Fatal(err)
		}
		e.exit(p, 0)
		if err := e.init.Kill(p.Gettid(), int(c.sig)); err != nil {
			t.Fatal(err)
		}
		e.check()
		if c.want == 0 {
			e.wantWait(e.init, -1, unix.WNOHANG|unix.WALL, nil)
		} else {
			e.reap(e.init, -1, unix.WNOHANG|unix.WALL, th.Gettid(), c.want)
		}
		if c.sig == unix.SIGTERM {
			e.reap(e.init, -1, unix.WNOHANG|unix.WALL, p.Gettid(), killed(unix.SIGTERM))
		}
		_ = e.init.Kill(p.Gettid(), int(unix.SIGKILL)) // ESRCH once reaped
		e.check()
		e.reapAll(e.init)
		e.settle()
	}
}

// A stopped thread dequeues nothing: a signal a tracee kept for its tracer
// stays queued when the tracer's exit detaches it and the SIGSTOP of its
// attach stop stops its process, and a new tracer that seizes and resumes
// it sees the signal as a signal-delivery stop (corpus d149).
func TestCorpusStoppedTraceeKeepsSignal_D9(t *testing.T) {
	e := newEnv(t, Config{})
	tracer := e.fork(e.init)
	p := e.fork(tracer)
	if err := tracer.Ptrace(unix.PTRACE_ATTACH, p.Gettid(), 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.init.Tgkill(p.Gettid(), p.Gettid(), int(unix.SIGTSTP)); err != nil {
		t.Fatal(err)
	}
	e.exit(tracer, 0)
	e.reap(e.init, tracer.Gettid(), 0, tracer.Gettid(), exited(0))
	e.check()
	if err := e.init.Ptrace(unix.PTRACE_SEIZE, p.Gettid(), 0, 0); err != nil {
		t.Fatal(err)
	}
	e.check()
	// The seize's PTRACE_EVENT_STOP trap of the stopped process.
	e.reap(e.init, p.Gettid(), unix.WNOHANG|unix.WALL, p.Gettid(), stopped(unix.SIGSTOP, ptraceEventStop))
	if err := e.init.Ptrace(unix.PTRACE_CONT, p.Gettid(), 0, 0); err != nil {
		t.Fatal(err)
	}
	e.check()
	e.reap(e.init, p.Gettid(), unix.WNOHANG|unix.WALL, p.Gettid(), stopped(unix.SIGTSTP, 0))
	if err := e.init.Kill(p.Gettid(), int(unix.SIGKILL)); err != nil {
		t.Fatal(err)
	}
	e.reap(e.init, p.Gettid(), unix.WALL, p.Gettid(), killed(unix.SIGKILL))
	e.settle()
}

// do_wait scans again whenever its sleep ends and returns -ERESTARTSYS
// only when the scan finds nothing: a child whose exit signal stops the
// waiting parent (here SIGSTOP; for a tracee, any signal) is reaped
// before the parent stops (corpus c45, d150).
func TestCorpusWaitReapsBeforeStopping_C7(t *testing.T) {
	for _, traced := range []bool{false, true} {
		e := newEnv(t, Config{})
		p := e.fork(e.init)
		sig := unix.SIGSTOP
		if traced {
			if err := e.init.Ptrace(unix.PTRACE_SEIZE, p.Gettid(), 0, 0); err != nil {
				t.Fatal(err)
			}
			sig = unix.SIGCHLD
		}
		c := e.clone(p, 0, sig)
		cpid := c.Gettid()
		out := e.blockedWait(p, -1, unix.WALL)
		e.exit(c, 3)
		// The call has its answer; the model's caller sees it return
		// while the thread is stopped, where Linux's stops on its way
		// back to user space.
		if o := e.result(out); o.err != nil || o.r.Pid != cpid || o.r.Status != exited(3) {
			t.Fatalf("traced %v: wait = {pid %d status %#x}, %v; want {pid %d status %#x}",
				traced, o.r.Pid, uint32(o.r.Status), o.err, cpid, uint32(exited(3)))
		}
		e.check()
		if !p.Stopped() {
			t.Fatalf("traced %v: the parent did not stop", traced)
		}
		errIs(t, "kill(0) of the child while its parent is stopped", e.init.Kill(cpid, 0), unix.ESRCH)
		if err := e.init.Kill(p.Gettid(), int(unix.SIGKILL)); err != nil {
			t.Fatal(err)
		}
		e.reapAll(e.init)
		e.settle()
	}
}

// A thread an exec kills out of a signal-delivery stop requeues a signal
// its tracer has not collected (ptrace_signal); from the process's queue
// the exec'ing thread takes it after the exec, with the new image's
// default action (corpus x20).
func TestCorpusExecTakesKilledTraceeSignal_D6(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	pid := p.Gettid()
	if err := e.init.Ptrace(unix.PTRACE_SEIZE, pid, 0, 0); err != nil {
		t.Fatal(err)
	}
	th := e.thread(p)
	if err := e.init.Kill(pid, int(unix.SIGUSR1)); err != nil {
		t.Fatal(err)
	}
	e.check()
	if err := th.Execve(); err != nil {
		t.Fatalf("execve: %v", err)
	}
	e.check()
	e.reap(e.init, -1, unix.WNOHANG|unix.WALL, pid, killed(unix.SIGUSR1))
	e.settle()
}

// An exec that waits for a tracer to reap a killed sibling has let the
// exits its other killed siblings started run: a tracee of one of them,
// seized with PTRACE_O_EXITKILL, is dead while the exec still waits
// (corpus x21).
func TestCorpusExecWaitLetsSiblingExitsRun_D9(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	tracer := e.thread(p)
	victim := e.fork(e.init)
	held := e.thread(p)
	if err := tracer.Ptrace(unix.PTRACE_SEIZE, victim.Gettid(), 0, unix.PTRACE_O_EXITKILL); err != nil {
		t.Fatal(err)
	}
	if err := e.init.Ptrace(unix.PTRACE_SEIZE, held.Gettid(), 0, 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Execve() }()
	e.eventually("the exec waits for the tracer", func() bool { return p.Sleeping() && e.k.Quiescent() })
	e.reap(e.init, victim.Gettid(), unix.WNOHANG|unix.WALL, victim.Gettid(), killed(unix.SIGKILL))
	e.reap(e.init, held.Gettid(), unix.WALL, held.Gettid(), exited(0))
	if err := <-done; err != nil {
		t.Fatalf("execve: %v", err)
	}
	if err := e.init.Kill(p.Gettid(), int(unix.SIGKILL)); err != nil {
		t.Fatal(err)
	}
	e.reapAll(e.init)
	e.settle()
}

// wait_consider_task reports a child's ptrace stop before its continue:
// a continued child its parent then attaches is reported stopped first,
// by a wait for its pid and by one for any child (corpus c46).
func TestCorpusTracedChildStopBeforeContinue_C10(t *testing.T) {
	for _, anyChild := range []bool{false, true} {
		e := newEnv(t, Config{})
		c := e.fork(e.init)
		pid := c.Gettid()
		for _, sig := range []unix.Signal{unix.SIGSTOP, unix.SIGCONT} {
			if err := e.init.Kill(pid, int(sig)); err != nil {
				t.Fatal(err)
			}
			e.check()
		}
		if err := e.init.Ptrace(unix.PTRACE_ATTACH, pid, 0, 0); err != nil {
			t.Fatal(err)
		}
		e.check()
		sel := pid
		if anyChild {
			sel = -1
		}
		e.reap(e.init, sel, unix.WNOHANG|unix.WCONTINUED, pid, stopped(unix.SIGSTOP, 0))
		e.reap(e.init, sel, unix.WNOHANG|unix.WCONTINUED, pid, 0xffff)
		if err := e.init.Kill(pid, int(unix.SIGKILL)); err != nil {
			t.Fatal(err)
		}
		e.reapAll(e.init)
		e.settle()
	}
}
