package kernel

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
)

// Signals that interrupt a sleeping call (sigintr.go): complete_signal's
// choice of thread, signal_wake_up, do_wait's -ERESTARTSYS and ipc/sem.c's
// -EINTR.

// TestHandledSignalInterruptsWait_C7: a handled signal without SA_RESTART
// ends a blocked wait4 or waitid with EINTR, and the call is no longer
// reported asleep once the signal is sent; the child is left to reap.
func TestHandledSignalInterruptsWait_C7(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	c := e.fork(p)
	e.sigaction(p, unix.SIGUSR1, SigHandler, 0)

	out := e.blockedWait(p, c.Getpid(), 0)
	e.kill(e.init, p, unix.SIGUSR1)
	if p.Sleeping() {
		t.Fatal("Sleeping() after a handled signal: want false")
	}
	if o := e.result(out); !errors.Is(o.err, unix.EINTR) {
		t.Fatalf("interrupted wait4 = %+v, %v; want EINTR", o.r, o.err)
	}

	wout := make(chan callOut, 1)
	go func() {
		ctx, cancel := e.ctx()
		defer cancel()
		r, err := p.Waitid(ctx, unix.P_PID, c.Getpid(), unix.WEXITED)
		wout <- callOut{r, err}
	}()
	e.untilSleeping(p, "wait", wout)
	e.kill(e.init, p, unix.SIGUSR1)
	if o := e.result(wout); !errors.Is(o.err, unix.EINTR) {
		t.Fatalf("interrupted waitid = %+v, %v; want EINTR", o.r, o.err)
	}

	e.exit(c, 2)
	e.reap(p, c.Getpid(), 0, c.Getpid(), exited(2))
	e.exit(p, 0)
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), exited(0))
	e.settle()
}

// TestSaRestartWaitGoesOn_C7: with SA_RESTART the wait is restarted and
// later reports the child; an ignored signal does not interrupt at all.
func TestSaRestartWaitGoesOn_C7(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	c := e.fork(p)
	e.sigaction(p, unix.SIGUSR1, SigHandler, SaRestart)
	e.sigaction(p, unix.SIGUSR2, SigIgn, 0)

	out := e.blockedWait(p, c.Getpid(), 0)
	e.kill(e.init, p, unix.SIGUSR1)
	e.kill(e.init, p, unix.SIGUSR2)
	e.k.Quiesce()
	e.stillBlocked(out)
	e.untilSleeping(p, "wait", out)
	e.exit(c, 5)
	if o := e.result(out); o.err != nil || o.r.Pid != c.Getpid() || o.r.Status != exited(5) {
		t.Fatalf("restarted wait4 = %+v, %v; want %d exited 5", o.r, o.err, c.Getpid())
	}
	e.exit(p, 0)
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), exited(0))
	e.settle()
}

// TestSigchldHandlerReportsExit_C7: the SIGCHLD of the exit a wait is for
// interrupts it, but do_wait rescans before it returns -ERESTARTSYS, so
// the exit is reported.
func TestSigchldHandlerReportsExit_C7(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	c := e.fork(p)
	e.sigaction(p, unix.SIGCHLD, SigHandler, 0)
	out := e.blockedWait(p, c.Getpid(), 0)
	e.exit(c, 7)
	if o := e.result(out); o.err != nil || o.r.Pid != c.Getpid() || o.r.Status != exited(7) {
		t.Fatalf("wait4 woken by its child's SIGCHLD = %+v, %v; want %d exited 7", o.r, o.err, c.Getpid())
	}
	e.exit(p, 0)
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), exited(0))
	e.settle()
}

// TestStopContinueRestartsWait_C10: a stop takes a blocked wait out of
// the call until SIGCONT, which restarts it.
func TestStopContinueRestartsWait_C10(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	c := e.fork(p)
	out := e.blockedWait(p, c.Getpid(), 0)
	e.kill(e.init, p, unix.SIGSTOP)
	e.reap(e.init, p.Getpid(), unix.WUNTRACED, p.Getpid(), stopped(unix.SIGSTOP, 0))
	e.stillBlocked(out)
	e.kill(e.init, p, unix.SIGCONT)
	e.k.Quiesce()
	e.stillBlocked(out)
	e.exit(c, 4)
	if o := e.result(out); o.err != nil || o.r.Pid != c.Getpid() || o.r.Status != exited(4) {
		t.Fatalf("wait4 after stop and continue = %+v, %v; want %d exited 4", o.r, o.err, c.Getpid())
	}
	e.exit(p, 0)
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), exited(0))
	e.settle()
}

// TestHandledSignalWhileStoppedEndsWait_C10: a handled signal that
// arrives while the waiter is stopped ends the wait with EINTR once it is
// continued, even with a child ready by then (handle_signal runs before
// the restart would rescan).
func TestHandledSignalWhileStoppedEndsWait_C10(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	c := e.fork(p)
	e.sigaction(p, unix.SIGUSR1, SigHandler, 0)
	out := e.blockedWait(p, c.Getpid(), 0)
	e.kill(e.init, p, unix.SIGSTOP)
	e.reap(e.init, p.Getpid(), unix.WUNTRACED, p.Getpid(), stopped(unix.SIGSTOP, 0))
	e.kill(e.init, p, unix.SIGUSR1)
	e.exit(c, 1)
	e.stillBlocked(out)
	e.kill(e.init, p, unix.SIGCONT)
	if o := e.result(out); !errors.Is(o.err, unix.EINTR) {
		t.Fatalf("wait4 = %+v, %v; want EINTR", o.r, o.err)
	}
	e.reap(p, c.Getpid(), 0, c.Getpid(), exited(1))
	e.exit(p, 0)
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), exited(0))
	e.settle()
}

// TestSignalTakenByOneThread_G1: a process-directed signal interrupts
// the leader's sleep, not another thread's; tgkill the named thread's;
// once the leader has exited, the first running thread takes it.
func TestSignalTakenByOneThread_G1(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	c := e.fork(p)
	th := e.thread(p)
	e.sigaction(p, unix.SIGUSR1, SigHandler, 0)

	tout := e.blockedWait(th, c.Getpid(), 0)
	lout := e.blockedWait(p, c.Getpid(), 0)
	e.kill(e.init, p, unix.SIGUSR1)
	if o := e.result(lout); !errors.Is(o.err, unix.EINTR) {
		t.Fatalf("leader's wait4 = %+v, %v; want EINTR", o.r, o.err)
	}
	e.stillBlocked(tout)
	e.tgkill(e.init, th, unix.SIGUSR1)
	if o := e.result(tout); !errors.Is(o.err, unix.EINTR) {
		t.Fatalf("thread's wait4 = %+v, %v; want EINTR", o.r, o.err)
	}

	e.exit(p, 0) // the leader only: th goes on
	tout = e.blockedWait(th, c.Getpid(), 0)
	e.kill(e.init, p, unix.SIGUSR1)
	if o := e.result(tout); !errors.Is(o.err, unix.EINTR) {
		t.Fatalf("wait4 of the only running thread = %+v, %v; want EINTR", o.r, o.err)
	}

	// A signal to a thread not asleep in a call leaves no interrupt
	// behind for its next call.
	e.kill(e.init, p, unix.SIGUSR1)
	tout = e.blockedWait(th, c.Getpid(), 0)
	e.stillBlocked(tout)
	e.exit(c, 3)
	if o := e.result(tout); o.err != nil || o.r.Pid != c.Getpid() {
		t.Fatalf("wait4 after a signal sent while running = %+v, %v; want %d", o.r, o.err, c.Getpid())
	}
	e.exit(th, 0)
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), exited(0))
	e.settle()
}

type semOut struct{ err error }

// blockedSemop starts a semop that must sleep and returns once it does.
func (e *env) blockedSemop(p *Task, id int, ops ...sem.Sembuf) <-chan semOut {
	e.t.Helper()
	out := make(chan semOut, 1)
	go func() {
		ctx, cancel := e.ctx()
		defer cancel()
		out <- semOut{p.Semop(ctx, id, ops)}
	}()
	deadline := time.Now().Add(callTimeout)
	for !p.Sleeping() {
		select {
		case o := <-out:
			e.t.Fatalf("semop by %d returned %v; want it to block", p.Gettid(), o.err)
		default:
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("semop by %d never slept", p.Gettid())
		}
		time.Sleep(100 * time.Microsecond)
	}
	return out
}

func (e *env) semResult(out <-chan semOut) error {
	e.t.Helper()
	select {
	case o := <-out:
		return o.err
	case <-time.After(callTimeout):
		e.t.Fatal("blocked semop never returned")
		return nil
	}
}

func (e *env) semctl(p *Task, id, num, cmd int) int {
	e.t.Helper()
	v, err := p.Semctl(id, num, cmd, sem.Semun{})
	if err != nil {
		e.t.Fatalf("semctl(%d, %d, %d): %v", id, num, cmd, err)
	}
	return v
}

// TestSemopInterruptedBySignal_H10: a handled signal ends a semop sleep
// with EINTR, with or without SA_RESTART; the sleeper has left the queue
// by the time the sender's step is done, and the set is unchanged.
func TestSemopInterruptedBySignal_H10(t *testing.T) {
	e := newEnv(t, Config{})
	id, err := e.init.Semget(unix.IPC_PRIVATE, 2, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	p := e.fork(e.init)
	for _, flags := range []uint64{0, SaRestart} {
		e.sigaction(p, unix.SIGUSR1, SigHandler, flags)
		out := e.blockedSemop(p, id, sem.Sembuf{Num: 1, Op: 1}, sem.Sembuf{Num: 0, Op: -1})
		if n := e.semctl(e.init, id, 0, sem.GETNCNT); n != 1 {
			t.Fatalf("GETNCNT with a sleeper = %d, want 1", n)
		}
		e.kill(e.init, p, unix.SIGUSR1)
		e.k.Quiesce()
		if p.Sleeping() {
			t.Fatal("Sleeping() after a handled signal: want false")
		}
		if n := e.semctl(e.init, id, 0, sem.GETNCNT); n != 0 {
			t.Fatalf("flags %#x: GETNCNT after the interrupt = %d, want 0", flags, n)
		}
		if err := e.semResult(out); !errors.Is(err, unix.EINTR) {
			t.Fatalf("flags %#x: interrupted semop = %v, want EINTR", flags, err)
		}
		if v := e.semctl(e.init, id, 1, sem.GETVAL); v != 0 {
			t.Fatalf("semaphore 1 = %d after the interrupted call, want 0", v)
		}
	}
	e.exit(p, 0)
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), exited(0))
	e.settle()
}

// TestSemopStopThenContinue_H10: a stop ends a semop sleep, which returns
// EINTR only once the process is continued; SIGKILL still ends one.
func TestSemopStopThenContinue_H10(t *testing.T) {
	e := newEnv(t, Config{})
	id, err := e.init.Semget(unix.IPC_PRIVATE, 1, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	p := e.fork(e.init)
	out := e.blockedSemop(p, id, sem.Sembuf{Num: 0, Op: -1})
	e.kill(e.init, p, unix.SIGSTOP)
	// The stop's report to the parent waits for the sleeper to take the
	// interrupt and leave the queue.
	e.reap(e.init, p.Getpid(), unix.WUNTRACED, p.Getpid(), stopped(unix.SIGSTOP, 0))
	if n := e.semctl(e.init, id, 0, sem.GETNCNT); n != 0 {
		t.Fatalf("GETNCNT of a stopped sleeper = %d, want 0", n)
	}
	select {
	case o := <-out:
		t.Fatalf("semop of a stopped process returned %v before SIGCONT", o.err)
	case <-time.After(5 * time.Millisecond):
	}
	e.kill(e.init, p, unix.SIGCONT)
	if err := e.semResult(out); !errors.Is(err, unix.EINTR) {
		t.Fatalf("semop after stop and continue = %v, want EINTR", err)
	}

	out = e.blockedSemop(p, id, sem.Sembuf{Num: 0, Op: -1})
	e.kill(e.init, p, unix.SIGKILL)
	if err := e.semResult(out); !errors.Is(err, unix.EINTR) {
		t.Fatalf("killed semop = %v, want EINTR", err)
	}
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), killed(unix.SIGKILL))
	e.settle()
}

// TestGroupStopWaitsForSleepersToLeave_do_signal_stop: a group stop wakes
// every thread asleep in an interruptible call, not only the one that
// took the stop signal (do_signal_stop's signal_wake_up of each thread),
// and the parent hears of the stop only once each has left its call's
// queue: a parent that does not Quiesce and reads the semaphore's sleeper
// count as soon as its wait reports the stop sees none (s33).
func TestGroupStopWaitsForSleepersToLeave_do_signal_stop(t *testing.T) {
	e := newEnv(t, Config{})
	id, err := e.init.Semget(unix.IPC_PRIVATE, 1, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		p := e.fork(e.init)
		sleepers := []*Task{p}
		if i%2 == 1 {
			sleepers = append(sleepers, e.thread(p)) // the leader takes the signal
		}
		var outs []<-chan semOut
		for _, s := range sleepers {
			outs = append(outs, e.blockedSemop(s, id, sem.Sembuf{Num: 0, Op: -1}))
		}
		if err := e.init.Kill(p.Getpid(), int(unix.SIGSTOP)); err != nil {
			t.Fatal(err)
		}
		e.reap(e.init, p.Getpid(), unix.WUNTRACED, p.Getpid(), stopped(unix.SIGSTOP, 0))
		if n := e.semctl(e.init, id, 0, sem.GETNCNT); n != 0 {
			t.Fatalf("iteration %d: GETNCNT as the stop is reported = %d, want 0", i, n)
		}
		e.kill(e.init, p, unix.SIGCONT)
		for _, out := range outs {
			if err := e.semResult(out); !errors.Is(err, unix.EINTR) {
				t.Fatalf("iteration %d: semop after the stop = %v, want EINTR", i, err)
			}
		}
		e.exitGroup(p, 0)
		e.reap(e.init, p.Getpid(), 0, p.Getpid(), exited(0))
	}
	e.settle()
}

// A wait whose task has been killed is not asleep any more, even before
// its goroutine has noticed: runners must not call it blocked (corpus b62,
// where a join printed EDEADLK instead of done).
func TestKilledWaiterIsNotSleeping_B2(t *testing.T) {
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

// do_wait scans again whenever its sleep ends and returns -ERESTARTSYS
// only when the scan finds nothing: a child whose exit signal stops the
// waiting parent (here SIGSTOP; for a tracee, any signal) is reaped
// before the parent stops (corpus c45, d150).
func TestWaitReapsBeforeStopping_C7(t *testing.T) {
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
