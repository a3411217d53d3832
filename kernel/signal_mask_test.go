package kernel

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func (e *env) sigprocmask(t *Task, how int, sigs ...unix.Signal) SigSet {
	e.t.Helper()
	set := sigSetOfSignals(sigs...)
	old, err := t.Sigprocmask(how, &set)
	if err != nil {
		e.t.Fatalf("sigprocmask(%d, %v): %v", how, sigs, err)
	}
	e.k.Quiesce()
	return old
}

func (e *env) wantPending(t *Task, sigs ...unix.Signal) {
	e.t.Helper()
	got, err := t.Sigpending()
	if err != nil || got != sigSetOfSignals(sigs...) {
		e.t.Fatalf("sigpending = %#x, %v; want %#x", got, err, sigSetOfSignals(sigs...))
	}
}

func sigSetOfSignals(sigs ...unix.Signal) SigSet {
	var s SigSet
	for _, sig := range sigs {
		s |= SigSetOf(int(sig))
	}
	return s
}

// A blocked fatal signal waits; unblocking it kills the process then.
func TestBlockedFatalSignalWaitsForUnblock_J2(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	if old := e.sigprocmask(p, unix.SIG_BLOCK, unix.SIGTERM, unix.SIGKILL); old != 0 {
		t.Fatalf("old mask %#x, want empty", old)
	}
	e.kill(e.init, p, unix.SIGTERM)
	e.k.Quiesce()
	if p.Exited() {
		t.Fatal("a blocked SIGTERM killed the process")
	}
	e.wantPending(p, unix.SIGTERM)
	// SIGKILL was never blocked: the mask holds SIGTERM alone.
	if old := e.sigprocmask(p, unix.SIG_UNBLOCK, unix.SIGTERM); old != sigSetOfSignals(unix.SIGTERM) {
		t.Fatalf("mask %#x, want SIGTERM only", old)
	}
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), unix.WaitStatus(unix.SIGTERM))
}

// A blocked signal interrupts no sleep; a blocked ignored one is still
// queued and dropped once unblocked.
func TestBlockedSignalInterruptsNothing_J2(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	c := e.fork(p)
	e.sigaction(p, unix.SIGUSR1, SigHandler, 0)
	e.sigaction(p, unix.SIGUSR2, SigIgn, 0)
	e.sigprocmask(p, unix.SIG_SETMASK, unix.SIGUSR1, unix.SIGUSR2)
	out := e.blockedWait(p, -1, 0)
	e.kill(e.init, p, unix.SIGUSR1)
	e.kill(e.init, p, unix.SIGUSR2)
	e.k.Quiesce()
	e.stillBlocked(out)
	e.exit(c, 3)
	if o := e.result(out); o.err != nil || o.r.Pid != c.Getpid() {
		t.Fatalf("wait4 = %+v, %v; want the child", o.r, o.err)
	}
	e.wantPending(p, unix.SIGUSR1, unix.SIGUSR2)
	e.sigprocmask(p, unix.SIG_SETMASK)
	e.wantPending(p)
	if p.Exited() {
		t.Fatal("an ignored or handled signal killed the process")
	}
	e.exitReaped(e.init, 0, p)
}

// A process-directed signal goes to a thread that does not block it; one
// every thread blocks waits on the process's queue for the first that
// unblocks it.
func TestSharedSignalFindsUnblockingThread_J2(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	th := e.thread(p)
	e.sigaction(p, unix.SIGUSR1, SigHandler, 0)
	e.sigprocmask(p, unix.SIG_BLOCK, unix.SIGUSR1)
	c := e.fork(p)
	out := e.blockedWait(th, -1, 0)
	e.kill(e.init, p, unix.SIGUSR1) // th takes it: its wait ends with EINTR
	if o := e.result(out); !errors.Is(o.err, unix.EINTR) {
		t.Fatalf("thread's wait4 = %v, want EINTR", o.err)
	}
	e.sigprocmask(th, unix.SIG_BLOCK, unix.SIGUSR1)
	e.kill(e.init, p, unix.SIGUSR1)
	e.k.Quiesce()
	e.wantPending(p, unix.SIGUSR1)
	e.wantPending(th, unix.SIGUSR1)
	e.sigprocmask(th, unix.SIG_UNBLOCK, unix.SIGUSR1)
	e.wantPending(p)
	e.exit(c, 0)
	e.exitGroup(p, 0)
	e.reapAll(e.init)
}

// Real-time signals queue once per send; standard ones once.
func TestRealtimeSignalsQueue_J2(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	rt := unix.Signal(40)
	e.sigprocmask(p, unix.SIG_BLOCK, rt, unix.SIGUSR1)
	for range 2 {
		e.kill(e.init, p, rt)
		e.kill(e.init, p, unix.SIGUSR1)
	}
	set := sigSetOfSignals(rt, unix.SIGUSR1)
	var got []int
	for {
		sig, err := p.Sigtimedwait(nil, set, 0)
		if errors.Is(err, unix.EAGAIN) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, sig)
	}
	want := []int{int(unix.SIGUSR1), int(rt), int(rt)}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("sigtimedwait took %v, want %v", got, want)
	}
	e.exitReaped(e.init, 0, p)
}

// sigtimedwait takes a signal of its set that arrives while it sleeps,
// even a fatal one the caller had blocked; another handled signal ends it
// with EINTR, and a timeout with EAGAIN.
func TestSigtimedwait_J2(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	e.sigprocmask(p, unix.SIG_BLOCK, unix.SIGTERM)
	out := e.blocked(p, "sigtimedwait", func() (WaitResult, error) {
		sig, err := p.Sigtimedwait(nil, sigSetOfSignals(unix.SIGTERM), -1)
		return WaitResult{Pid: sig}, err
	})
	e.kill(e.init, p, unix.SIGTERM)
	if o := e.result(out); o.err != nil || o.r.Pid != int(unix.SIGTERM) {
		t.Fatalf("sigtimedwait = %d, %v; want SIGTERM", o.r.Pid, o.err)
	}
	if p.Exited() {
		t.Fatal("the waited-for SIGTERM killed the process")
	}
	e.sigaction(p, unix.SIGUSR1, SigHandler, 0)
	out = e.blocked(p, "sigtimedwait", func() (WaitResult, error) {
		sig, err := p.Sigtimedwait(nil, sigSetOfSignals(unix.SIGTERM), -1)
		return WaitResult{Pid: sig}, err
	})
	e.kill(e.init, p, unix.SIGUSR1)
	if o := e.result(out); !errors.Is(o.err, unix.EINTR) {
		t.Fatalf("sigtimedwait with a handled signal = %v, want EINTR", o.err)
	}
	if _, err := p.Sigtimedwait(nil, sigSetOfSignals(unix.SIGTERM), time.Millisecond); !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("sigtimedwait past its timeout = %v, want EAGAIN", err)
	}
	e.exitReaped(e.init, 0, p)
}

// sigsuspend ends with EINTR once a handled signal comes, including one
// pending that its mask unblocks, and restores the mask.
func TestSigsuspend_J2(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	e.sigaction(p, unix.SIGCHLD, SigHandler, 0)
	e.sigprocmask(p, unix.SIG_BLOCK, unix.SIGCHLD)
	c := e.fork(p)
	e.exit(c, 0) // SIGCHLD waits, blocked
	if err := p.Sigsuspend(nil, 0); !errors.Is(err, unix.EINTR) {
		t.Fatalf("sigsuspend with SIGCHLD pending = %v, want EINTR", err)
	}
	e.wantPending(p)
	if old := e.sigprocmask(p, unix.SIG_BLOCK); old != sigSetOfSignals(unix.SIGCHLD) {
		t.Fatalf("mask after sigsuspend %#x, want SIGCHLD", old)
	}
	c = e.fork(p)
	out := e.blocked(p, "sigsuspend", func() (WaitResult, error) { return WaitResult{}, p.Sigsuspend(nil, 0) })
	e.exit(c, 0)
	if o := e.result(out); !errors.Is(o.err, unix.EINTR) {
		t.Fatalf("sigsuspend = %v, want EINTR", o.err)
	}
	e.reapAll(p)
	e.exitReaped(e.init, 0, p)
}

// The mask is inherited by clone and kept across execve; pending
// signals stay with their thread.
func TestMaskInheritedAndKeptAcrossExec_J2(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	e.sigprocmask(p, unix.SIG_BLOCK, unix.SIGUSR1)
	c := e.fork(p)
	th := e.thread(p)
	for _, tk := range []*Task{c, th} {
		if m, _ := tk.Sigprocmask(0, nil); m != sigSetOfSignals(unix.SIGUSR1) {
			t.Fatalf("inherited mask %#x, want SIGUSR1", m)
		}
	}
	e.wantPending(c)
	e.kill(e.init, c, unix.SIGUSR1)
	mustOK(t, c.Execve())
	e.wantPending(c, unix.SIGUSR1)
	// The handler exec reset makes the pending SIGUSR1 fatal once
	// unblocked.
	e.sigprocmask(c, unix.SIG_UNBLOCK, unix.SIGUSR1)
	e.reap(p, c.Getpid(), 0, c.Getpid(), unix.WaitStatus(unix.SIGUSR1))
	e.exitGroup(p, 0)
	e.reapAll(e.init)
}
