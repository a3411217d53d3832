package kernel

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
)

// Sleeping calls cut short (signal_intr.go): by a signal (complete_signal's
// choice of thread, signal_wake_up, do_wait's -ERESTARTSYS and ipc/sem.c's
// -EINTR), by a stop, and by the wake-ups that set a thread's
// pending-signal flag without a signal for it to take
// (ptrace_signal_wake_up, do_signal_stop's signal_wake_up of the other
// threads, ptrace_trap_notify), which end an interruptible sleep as for a
// stop.

// TestSignalDuringWait: what a signal or a stop does to a wait4 (or
// waitid) for a child that has not exited yet. p waits for its child c;
// each case's events run while it sleeps; then the wait either ends with
// EINTR (do_wait's -ERESTARTSYS, not restarted) or reports c's exit.
func TestSignalDuringWait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		actions map[unix.Signal]SigAction // p's, before it waits
		waitid  bool                      // waitid(P_PID) instead of wait4
		// during runs while p sleeps in its wait.
		during func(e *env, p, c *Task, out <-chan callOut)
		eintr  bool // the wait ends with EINTR, not with c's exit
		code   int  // c's exit code
	}{
		{name: "C7 a handled signal ends it with EINTR, and it is no longer asleep once sent",
			actions: map[unix.Signal]SigAction{unix.SIGUSR1: {Handler: SigHandler}},
			during:  handledSignalDuringWait, eintr: true, code: 2},
		{name: "C7 a handled signal ends waitid too",
			actions: map[unix.Signal]SigAction{unix.SIGUSR1: {Handler: SigHandler}}, waitid: true,
			during: handledSignalDuringWait, eintr: true, code: 2},
		{name: "C7 with SA_RESTART the wait goes on; an ignored signal does not interrupt it",
			actions: map[unix.Signal]SigAction{unix.SIGUSR1: {Handler: SigHandler, Flags: SaRestart}, unix.SIGUSR2: {Handler: SigIgn}},
			during: func(e *env, p, c *Task, out <-chan callOut) {
				e.kill(e.init, p, unix.SIGUSR1)
				e.kill(e.init, p, unix.SIGUSR2)
				e.k.Quiesce()
				e.stillBlocked(out)
				e.untilSleeping(p, "restarted wait", out)
				e.exit(c, 5)
			}, code: 5},
		// do_wait rescans before it returns -ERESTARTSYS.
		{name: "C7 the SIGCHLD of the awaited exit, handled, does not hide it",
			actions: map[unix.Signal]SigAction{unix.SIGCHLD: {Handler: SigHandler}},
			during:  func(e *env, p, c *Task, out <-chan callOut) { e.exit(c, 7) }, code: 7},
		{name: "C10 a stop takes it out of the call until SIGCONT restarts it",
			during: func(e *env, p, c *Task, out <-chan callOut) {
				e.kill(e.init, p, unix.SIGSTOP)
				e.reap(e.init, p.Getpid(), unix.WUNTRACED, p.Getpid(), stopped(unix.SIGSTOP, 0))
				e.stillBlocked(out)
				e.kill(e.init, p, unix.SIGCONT)
				e.k.Quiesce()
				e.stillBlocked(out)
				e.exit(c, 4)
			}, code: 4},
		// handle_signal runs before the restart would rescan, so a child
		// ready by then is not reported.
		{name: "C10 a handled signal while stopped ends it with EINTR once continued",
			actions: map[unix.Signal]SigAction{unix.SIGUSR1: {Handler: SigHandler}},
			during: func(e *env, p, c *Task, out <-chan callOut) {
				e.kill(e.init, p, unix.SIGSTOP)
				e.reap(e.init, p.Getpid(), unix.WUNTRACED, p.Getpid(), stopped(unix.SIGSTOP, 0))
				e.kill(e.init, p, unix.SIGUSR1)
				e.exit(c, 1)
				e.stillBlocked(out)
				e.kill(e.init, p, unix.SIGCONT)
			}, eintr: true, code: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			p := e.fork(e.init)
			c := e.fork(p)
			for sig, act := range tc.actions {
				e.sigaction(p, sig, act.Handler, act.Flags)
			}
			var out <-chan callOut
			if tc.waitid {
				out = e.blocked(p, "waitid", func() (WaitResult, error) {
					return e.waitid(p, unix.P_PID, c.Getpid(), unix.WEXITED)
				})
			} else {
				out = e.blockedWait(p, c.Getpid(), 0)
			}
			tc.during(e, p, c, out)
			o := e.result(out)
			if tc.eintr {
				if !errors.Is(o.err, unix.EINTR) {
					t.Fatalf("wait = {pid %d status %#x}, %v; want EINTR", o.r.Pid, uint32(o.r.Status), o.err)
				}
				if !c.Exited() {
					e.exit(c, tc.code)
				}
				e.reap(p, c.Getpid(), 0, c.Getpid(), exited(tc.code))
			} else if o.err != nil || o.r.Pid != c.Getpid() || o.r.Status != exited(tc.code) {
				t.Fatalf("wait = {pid %d status %#x}, %v; want %d exited %d",
					o.r.Pid, uint32(o.r.Status), o.err, c.Getpid(), tc.code)
			}
			e.exitReaped(e.init, 0, p)
			e.settle()
		})
	}
}

// handledSignalDuringWait sends p the SIGUSR1 it handles: from then on it
// is not asleep.
func handledSignalDuringWait(e *env, p, c *Task, out <-chan callOut) {
	e.t.Helper()
	e.kill(e.init, p, unix.SIGUSR1)
	if p.Sleeping() {
		e.t.Fatal("Sleeping() after a handled signal: want false")
	}
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

func (e *env) semctl(p *Task, id, num, cmd int) int {
	e.t.Helper()
	v, err := p.Semctl(id, num, cmd, sem.Semun{})
	if err != nil {
		e.t.Fatalf("semctl(%d, %d, %d): %v", id, num, cmd, err)
	}
	return v
}

// semSet makes a set of nsems semaphores owned by init.
func (e *env) semSet(nsems int) int {
	e.t.Helper()
	id, err := e.init.Semget(unix.IPC_PRIVATE, nsems, 0o600)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// blockedSemop starts a semop that must sleep and returns once it does.
func (e *env) blockedSemop(p *Task, id int, ops ...sem.Sembuf) <-chan callOut {
	e.t.Helper()
	return e.blocked(p, "semop", func() (WaitResult, error) {
		ctx, cancel := e.ctx()
		defer cancel()
		return WaitResult{}, p.Semop(ctx, id, ops)
	})
}

// TestSemopSleepEndsWithEINTR_H10: what ends a semop sleep other than the
// operations becoming possible. A signal, with SA_RESTART too (a semop is
// never restarted), a stop, SIGKILL, and the wake-ups that set a thread's
// pending-signal flag without a signal for it to take
// (ptrace_signal_wake_up, do_signal_stop's signal_wake_up of the other
// threads, ptrace_trap_notify): the sleeper leaves the queue at once, and
// its call returns EINTR (ipc/sem.c's -EINTR) once it runs again, with
// none of its operations done.
func TestSemopSleepEndsWithEINTR_H10(t *testing.T) {
	for _, tc := range []struct {
		name   string
		thread bool // the sleeper is the process's second thread
		traced bool // init seizes the sleeper
		// setup runs before the sleep, interrupt during it; resume lets
		// the sleeper run again (nil: nothing holds it).
		setup, interrupt, resume func(e *env, id int, p, sleeper *Task)
		killed                   bool // interrupt kills the process
	}{
		{name: "H10 a handled signal",
			setup:     func(e *env, _ int, p, _ *Task) { e.sigaction(p, unix.SIGUSR1, SigHandler, 0) },
			interrupt: handledSignalDuringSemop},
		{name: "H10 a handled signal with SA_RESTART",
			setup:     func(e *env, _ int, p, _ *Task) { e.sigaction(p, unix.SIGUSR1, SigHandler, SaRestart) },
			interrupt: handledSignalDuringSemop},
		// The stop's report to the parent waits for the sleeper to take
		// the interrupt and leave the queue.
		{name: "H10 a stop, then SIGCONT",
			interrupt: func(e *env, id int, p, _ *Task) {
				e.kill(e.init, p, unix.SIGSTOP)
				e.reap(e.init, p.Getpid(), unix.WUNTRACED, p.Getpid(), stopped(unix.SIGSTOP, 0))
				if n := e.semctl(e.init, id, 0, sem.GETNCNT); n != 0 {
					e.t.Fatalf("GETNCNT as the stop is reported = %d, want 0", n)
				}
			},
			resume: func(e *env, _ int, p, _ *Task) { e.kill(e.init, p, unix.SIGCONT) }},
		{name: "H10 SIGKILL",
			interrupt: func(e *env, _ int, p, _ *Task) { e.kill(e.init, p, unix.SIGKILL) }, killed: true},
		// corpus d140
		{name: "D6 H10 PTRACE_INTERRUPT, then PTRACE_CONT", traced: true,
			interrupt: func(e *env, _ int, p, _ *Task) {
				e.ptrace(e.init, unix.PTRACE_INTERRUPT, p, 0)
				e.k.Quiesce()
				e.reap(e.init, p.Gettid(), unix.WNOHANG, p.Gettid(), stopped(unix.SIGTRAP, ptraceEventStop))
			},
			resume: func(e *env, _ int, p, _ *Task) { e.ptrace(e.init, unix.PTRACE_CONT, p, 0) }},
		// corpus h76
		{name: "H10 a group stop wakes a sibling, which fails once SIGCONT lets it run", thread: true,
			interrupt: func(e *env, _ int, p, _ *Task) { e.kill(e.init, p, unix.SIGSTOP) },
			resume:    func(e *env, _ int, p, _ *Task) { e.kill(e.init, p, unix.SIGCONT) }},
		// corpus h77
		{name: "D6 H10 SIGCONT makes a seized thread owe a notify trap", thread: true, traced: true,
			interrupt: func(e *env, _ int, p, _ *Task) { e.kill(e.init, p, unix.SIGCONT) },
			resume:    func(e *env, _ int, _, th *Task) { e.ptrace(e.init, unix.PTRACE_CONT, th, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			id := e.semSet(2)
			p := e.fork(e.init)
			sleeper := p
			if tc.thread {
				sleeper = e.thread(p)
			}
			if tc.traced {
				e.ptrace(e.init, unix.PTRACE_SEIZE, sleeper, 0)
			}
			if tc.setup != nil {
				tc.setup(e, id, p, sleeper)
			}
			out := e.blockedSemop(sleeper, id, sem.Sembuf{Num: 1, Op: 1}, sem.Sembuf{Num: 0, Op: -1})
			if n := e.semctl(e.init, id, 0, sem.GETNCNT); n != 1 {
				t.Fatalf("GETNCNT with a sleeper = %d, want 1", n)
			}
			tc.interrupt(e, id, p, sleeper)
			e.k.Quiesce()
			if n := e.semctl(e.init, id, 0, sem.GETNCNT); n != 0 {
				t.Fatalf("GETNCNT after the interrupt = %d, want 0: the sleeper is still queued", n)
			}
			if tc.resume != nil {
				e.stillBlocked(out)
				tc.resume(e, id, p, sleeper)
			}
			if o := e.result(out); !errors.Is(o.err, unix.EINTR) {
				t.Fatalf("interrupted semop = %v, want EINTR", o.err)
			}
			if v := e.semctl(e.init, id, 1, sem.GETVAL); v != 0 {
				t.Fatalf("semaphore 1 = %d after the interrupted call, want 0", v)
			}
			if !tc.killed {
				e.kill(e.init, p, unix.SIGKILL)
			}
			if tc.traced && tc.thread {
				e.reap(e.init, sleeper.Gettid(), unix.WALL, sleeper.Gettid(), killed(unix.SIGKILL))
			}
			e.reap(e.init, p.Getpid(), 0, p.Getpid(), killed(unix.SIGKILL))
			e.settle()
		})
	}
}

// handledSignalDuringSemop sends p the SIGUSR1 it handles: once the step
// is done it is not asleep.
func handledSignalDuringSemop(e *env, _ int, p, _ *Task) {
	e.t.Helper()
	e.kill(e.init, p, unix.SIGUSR1)
	e.k.Quiesce()
	if p.Sleeping() {
		e.t.Fatal("Sleeping() after a handled signal: want false")
	}
}

// TestGroupStopWaitsForSleepersToLeave_do_signal_stop: a group stop wakes
// every thread asleep in an interruptible call, not only the one that
// took the stop signal (do_signal_stop's signal_wake_up of each thread),
// and the parent hears of the stop only once each has left its call's
// queue: a parent that does not Quiesce and reads the semaphore's sleeper
// count as soon as its wait reports the stop sees none (s33).
func TestGroupStopWaitsForSleepersToLeave_do_signal_stop(t *testing.T) {
	e := newEnv(t, Config{})
	id := e.semSet(1)
	for i := range 100 {
		p := e.fork(e.init)
		sleepers := []*Task{p}
		if i%2 == 1 {
			sleepers = append(sleepers, e.thread(p)) // the leader takes the signal
		}
		var outs []<-chan callOut
		for _, s := range sleepers {
			outs = append(outs, e.blockedSemop(s, id, sem.Sembuf{Num: 0, Op: -1}))
		}
		e.kill(e.init, p, unix.SIGSTOP)
		e.reap(e.init, p.Getpid(), unix.WUNTRACED, p.Getpid(), stopped(unix.SIGSTOP, 0))
		if n := e.semctl(e.init, id, 0, sem.GETNCNT); n != 0 {
			t.Fatalf("iteration %d: GETNCNT as the stop is reported = %d, want 0", i, n)
		}
		e.kill(e.init, p, unix.SIGCONT)
		for _, out := range outs {
			if o := e.result(out); !errors.Is(o.err, unix.EINTR) {
				t.Fatalf("iteration %d: semop after the stop = %v, want EINTR", i, o.err)
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
			e.ptrace(e.init, unix.PTRACE_SEIZE, p, 0)
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
		e.killAndSettle(p)
	}
}

// A thread asleep killably inside a call (wait_for_vfork_done, de_thread)
// takes no ptrace stop until it leaves the call, as get_signal runs only
// on the way back to user space: after PTRACE_INTERRUPT it is in no stop,
// so PTRACE_CONT fails with ESRCH (D6; corpus d145, x18).
func TestNoTrapInsideKillableSleep_D6(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	e.ptrace(e.init, unix.PTRACE_SEIZE, p, 0)
	vfork := e.blocked(p, "vfork", func() (WaitResult, error) {
		return WaitResult{}, errOf(p.Clone(CloneArgs{Flags: unix.CLONE_VFORK | unix.CLONE_VM, ExitSignal: int(unix.SIGCHLD)}))
	})
	e.ptrace(e.init, unix.PTRACE_INTERRUPT, p, 0)
	e.k.Quiesce()
	errIs(t, "PTRACE_CONT of a vfork parent", e.init.Ptrace(unix.PTRACE_CONT, p.Gettid(), 0, 0), unix.ESRCH)
	e.kill(e.init, p, unix.SIGKILL)
	e.result(vfork)
	e.reap(e.init, p.Getpid(), unix.WALL, p.Getpid(), killed(unix.SIGKILL))
	e.check()
}

// A thread whose own exit waits at PTRACE_EVENT_EXIT is woken by a SIGKILL
// that starts a group exit, or by an exec's zap_other_threads: the fatal
// signal_wake_up ends any ptrace stop, and the exit goes on (D6; corpus
// d146, x19).
func TestFatalWakeEndsExitEventStop_D6(t *testing.T) {
	e := newEnv(t, Config{})
	for _, byExec := range []bool{false, true} {
		p := e.fork(e.init)
		th := e.thread(p)
		other := e.thread(p)
		e.ptrace(e.init, unix.PTRACE_SEIZE, th, unix.PTRACE_O_TRACEEXIT)
		e.exit(th, 6)
		e.check()
		exitStop := stopped(unix.SIGTRAP, unix.PTRACE_EVENT_EXIT)
		e.reap(e.init, th.Gettid(), unix.WALL|unix.WNOHANG, th.Gettid(), exitStop)
		if byExec {
			// The exec then waits for the traced thread's release: its
			// tracer reaps it, with the status of its own exit.
			exec := e.blockedExecve(other)
			e.reap(e.init, th.Gettid(), unix.WALL, th.Gettid(), exited(6))
			errIs(t, "exec", e.result(exec).err, nil)
			e.kill(e.init, other, unix.SIGKILL)
		} else {
			e.kill(e.init, p, unix.SIGKILL)
			e.check()
			e.reap(e.init, th.Gettid(), unix.WALL|unix.WNOHANG, th.Gettid(), killed(unix.SIGKILL))
		}
		e.reap(e.init, p.Getpid(), unix.WALL, p.Getpid(), killed(unix.SIGKILL))
	}
	e.settle()
}

// A wait killed in the step that makes its child a zombie reports and
// reaps the child before its task dies (C12, B13): here the child traces
// its parent with PTRACE_O_EXITKILL and exits, and the child's fatal exit
// signal does the same for a second parent, with WNOWAIT leaving the
// zombie to the reaper.
func TestKilledWaiterReapsFirst_C12(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	c := e.fork(p)
	out := e.blockedWait(p, -1, 0)
	e.ptrace(c, unix.PTRACE_SEIZE, p, unix.PTRACE_O_EXITKILL)
	e.exit(c, 5)
	if o := e.result(out); o.err != nil || o.r.Pid != c.Getpid() || o.r.Status != exited(5) {
		t.Fatalf("killed waiter's wait4 = %+v, %v; want the tracer reaped, exited 5", o.r, o.err)
	}
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), unix.WaitStatus(unix.SIGKILL))
	e.wantWait(e.init, -1, unix.WNOHANG, unix.ECHILD)

	q := e.fork(e.init)
	d := e.clone(q, 0, unix.SIGUSR1)
	out = e.blocked(q, "waitid", func() (WaitResult, error) {
		return q.Waitid(nil, unix.P_ALL, 0, unix.WEXITED|unix.WNOWAIT|unix.WALL)
	})
	e.exit(d, 6)
	if o := e.result(out); o.err != nil || o.r.Pid != d.Getpid() {
		t.Fatalf("killed waiter's waitid = %+v, %v; want d", o.r, o.err)
	}
	e.reap(e.init, q.Getpid(), 0, q.Getpid(), unix.WaitStatus(unix.SIGUSR1))
	e.reap(e.init, -1, unix.WALL, d.Getpid(), exited(6))
	e.check()
}
