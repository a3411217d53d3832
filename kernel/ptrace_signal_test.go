package kernel

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// Signals and traced threads: which thread takes a signal sent to its
// process (complete_signal, wants_signal), which signal a tracee takes
// first, and what becomes of one its tracer has not collected. Signals
// the kernel sends a process on behalf of one of its threads go through
// that thread, which takes them if it wants them: a traced one stops for
// them (d140, b90).

// trappedAll is the tracer's next report, any class, without blocking.
func (f *ptFixture) trappedAll(tracer *Task) (WaitResult, error) {
	f.k.Quiesce()
	return f.waitid(tracer, unix.P_ALL, 0, unix.WEXITED|unix.WSTOPPED|unix.WNOHANG|unix.WALL)
}

// TestSigchldGoesToForkingThread_do_notify_parent: do_notify_parent sends
// a child's exit signal to tsk->parent, the thread that forked it, and
// do_notify_parent_cldstop its stop's SIGCHLD to the leader's
// real_parent: a traced non-leader that forked the child stops for
// SIGCHLD. A child the untraced leader forked makes no stop.
func TestSigchldGoesToForkingThread_do_notify_parent(t *testing.T) {
	for _, event := range []string{"exit", "stop"} {
		t.Run(event, func(t *testing.T) {
			f := newPtFixture(t)
			f.ptrace(f.a, unix.PTRACE_SEIZE, f.th, 0)
			byLeader := f.fork(f.b)
			f.exit(byLeader, 4)
			r, err := f.trappedAll(f.a)
			f.wantNothing("the tracer's wait after the leader's child exited", r, err)

			c := f.fork(f.th)
			if event == "exit" {
				f.exit(c, 3)
			} else {
				f.kill(f.init, c, unix.SIGSTOP)
			}
			r, err = f.trappedAll(f.a)
			f.want("the tracer's wait", r, err, f.th.Gettid(), stopped(unix.SIGCHLD, 0), CLDTrapped)
			f.wantStopped(false, f.b)
			f.ptrace(f.a, unix.PTRACE_CONT, f.th, 0)
			if event == "stop" {
				f.kill(f.init, c, unix.SIGKILL)
			}
			f.finish()
		})
	}
}

// TestSigchldGoesToTracerThread_do_notify_parent_cldstop: a tracee's stop
// and exit signal its tracer thread (tsk->parent), so a tracer that is
// itself a traced non-leader stops for the SIGCHLD of each.
func TestSigchldGoesToTracerThread_do_notify_parent_cldstop(t *testing.T) {
	f := newPtFixture(t)
	outer := f.fork(f.init)
	f.ptrace(outer, unix.PTRACE_SEIZE, f.th, 0)
	q := f.fork(f.init)
	f.ptrace(f.th, unix.PTRACE_SEIZE, q, 0)

	// The tracer thread, stopped, makes no call until it is continued.
	f.kill(f.init, q, unix.SIGUSR1)
	r, err := f.trappedAll(outer)
	f.want("the outer tracer's wait after the stop", r, err, f.th.Gettid(), stopped(unix.SIGCHLD, 0), CLDTrapped)
	f.ptrace(outer, unix.PTRACE_CONT, f.th, 0)
	r, err = f.trappedAll(f.th)
	f.want("the inner tracer's wait", r, err, q.Gettid(), stopped(unix.SIGUSR1, 0), CLDTrapped)

	f.ptrace(f.th, unix.PTRACE_DETACH, q, 0)
	f.ptrace(f.th, unix.PTRACE_SEIZE, q, 0)
	f.exit(q, 6)
	r, err = f.trappedAll(outer)
	f.want("the outer tracer's wait after the exit", r, err, f.th.Gettid(), stopped(unix.SIGCHLD, 0), CLDTrapped)
	f.ptrace(outer, unix.PTRACE_CONT, f.th, 0)
	r, err = f.trappedAll(f.th)
	f.want("the inner tracer's wait", r, err, q.Gettid(), exited(6), CLDExited)
	f.finish()
}

// TestPdeathSignalThroughItsThread_forget_original_parent: the
// parent-death signal goes to the child's process through the thread that
// set it (group_send_sig_info to t): a traced thread stops for SIGUSR1
// and the process lives.
func TestPdeathSignalThroughItsThread_forget_original_parent(t *testing.T) {
	f := newPtFixture(t)
	q := f.fork(f.init)
	p := f.fork(q)
	pt := f.thread(p)
	f.ptrace(f.a, unix.PTRACE_SEIZE, pt, 0)
	mustOK(t, pt.PrctlSetPdeathsig(int(unix.SIGUSR1)))
	f.exit(q, 0)
	r, err := f.trappedAll(f.a)
	f.want("the tracer's wait", r, err, pt.Gettid(), stopped(unix.SIGUSR1, 0), CLDTrapped)
	if p.Exited() {
		t.Fatal("the process died of a pdeath signal its traced thread stopped for")
	}
	f.finish()
}

// TestSigcontBeatsStopPassedOnResume_do_signal_stop: a SIGSTOP a tracee
// trapped for, then passed on when it resumes (its tracer's exit with the
// stop unreported, or PTRACE_CONT with SIGSTOP), stops the process only if
// no SIGCONT came in between: SIGCONT clears JOBCTL_STOP_DEQUEUED, which
// do_signal_stop needs (d142).
func TestSigcontBeatsStopPassedOnResume_do_signal_stop(t *testing.T) {
	for _, tc := range []struct {
		resume  string
		sigcont bool
	}{{"tracer exits", true}, {"tracer exits", false}, {"CONT SIGSTOP", true}, {"CONT SIGSTOP", false}} {
		t.Run(fmt.Sprintf("%s, SIGCONT %v", tc.resume, tc.sigcont), func(t *testing.T) {
			f := newPtFixture(t)
			f.ptrace(f.a, unix.PTRACE_ATTACH, f.b, 0)
			f.wantStopped(true, f.b)
			if tc.sigcont {
				f.kill(f.init, f.b, unix.SIGCONT)
			}
			if tc.resume == "tracer exits" {
				f.exitGroup(f.a, 0)
			} else {
				// The SIGCONT went to the untraced thread, which wanted
				// it: nothing else is left for the leader to trap for.
				f.ptrace(f.a, unix.PTRACE_CONT, f.b, uint64(unix.SIGSTOP))
			}
			f.k.Quiesce()
			r, err := f.wait4(f.init, f.b.Getpid(), unix.WUNTRACED|unix.WNOHANG)
			if tc.sigcont {
				f.wantNothing("the parent's wait", r, err)
				f.wantStopped(false, f.b, f.th)
			} else {
				f.want("the parent's wait", r, err, f.b.Getpid(), stopped(unix.SIGSTOP, 0), CLDStopped)
				f.wantStopped(true, f.b)
			}
			f.kill(f.init, f.b, unix.SIGKILL)
			f.finish()
		})
	}
}

// TestRootInitTracemeLinksIdle_ptrace_traceme: the root init's real parent
// is the idle task, and ptrace_traceme links it to it: the call succeeds,
// a second one and another task's attach find it traced (EPERM), and the
// first signal it takes, a child's SIGCHLD, stops it for good, since its
// tracer never resumes it.
func TestRootInitTracemeLinksIdle_ptrace_traceme(t *testing.T) {
	e := newEnv(t, Config{})
	other := e.fork(e.init)
	mustOK(t, e.init.Ptrace(unix.PTRACE_TRACEME, 0, 0, 0))
	e.ptraceErr(e.init, unix.PTRACE_TRACEME, 0, 0, unix.EPERM)
	e.ptraceErr(other, unix.PTRACE_ATTACH, e.init.Gettid(), 0, unix.EPERM)
	e.check()
	if e.init.Stopped() {
		t.Fatal("the root init stopped before any signal")
	}
	e.exit(other, 0)
	e.wantStopped(true, e.init)
	e.check()
}

// TestStopPassedOnResumeHoldsKeptSignal_do_signal_stop: a tracee detached
// with SIGSTOP stops its process before it takes the signals it kept for
// its tracer (do_signal_stop runs before get_signal dequeues again): a
// kept SIGHUP waits for SIGCONT, and only then kills it (d143).
func TestStopPassedOnResumeHoldsKeptSignal_do_signal_stop(t *testing.T) {
	f := newPtFixture(t)
	c := f.fork(f.init)
	f.ptrace(f.a, unix.PTRACE_ATTACH, c, 0)
	f.reapCode(f.a, c.Getpid(), 0, c.Getpid(), stopped(unix.SIGSTOP, 0), CLDTrapped)
	f.kill(f.init, c, unix.SIGHUP)
	f.ptrace(f.a, unix.PTRACE_DETACH, c, uint64(unix.SIGSTOP))
	f.k.Quiesce()
	f.reapCode(f.init, c.Getpid(), unix.WUNTRACED|unix.WNOHANG, c.Getpid(), stopped(unix.SIGSTOP, 0), CLDStopped)
	f.kill(f.init, c, unix.SIGCONT)
	f.reapCode(f.init, c.Getpid(), 0, c.Getpid(), killed(unix.SIGHUP), CLDKilled)
	f.finish()
}

// complete_signal and prepare_signal judge a signal sent to a process by
// the task it was sent to, not by the thread that takes it: with the
// untraced leader gone, a fatal SIGTERM kills the process through its
// traced thread, a SIGQUIT (which dumps core) stops that thread for its
// tracer, and an ignored SIGCHLD is dropped (corpus g41, g42, g43).
func TestSignalJudgedByAddressee_G1_D6(t *testing.T) {
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
		e.ptrace(e.init, unix.PTRACE_SEIZE, th, 0)
		e.exit(p, 0)
		mustOK(t, e.init.Kill(p.Gettid(), int(c.sig)))
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
func TestStoppedTraceeKeepsSignal_D9(t *testing.T) {
	e := newEnv(t, Config{})
	tracer := e.fork(e.init)
	p := e.fork(tracer)
	e.ptrace(tracer, unix.PTRACE_ATTACH, p, 0)
	mustOK(t, e.init.Tgkill(p.Gettid(), p.Gettid(), int(unix.SIGTSTP)))
	e.exit(tracer, 0)
	e.reap(e.init, tracer.Gettid(), 0, tracer.Gettid(), exited(0))
	e.check()
	e.ptrace(e.init, unix.PTRACE_SEIZE, p, 0)
	e.check()
	// The seize's PTRACE_EVENT_STOP trap of the stopped process.
	e.reap(e.init, p.Gettid(), unix.WNOHANG|unix.WALL, p.Gettid(), stopped(unix.SIGSTOP, ptraceEventStop))
	e.ptrace(e.init, unix.PTRACE_CONT, p, 0)
	e.check()
	e.reap(e.init, p.Gettid(), unix.WNOHANG|unix.WALL, p.Gettid(), stopped(unix.SIGTSTP, 0))
	mustOK(t, e.init.Kill(p.Gettid(), int(unix.SIGKILL)))
	e.reap(e.init, p.Gettid(), unix.WALL, p.Gettid(), killed(unix.SIGKILL))
	e.settle()
}

// dequeue_signal takes a thread's private queue before its process's
// shared one: a tracee stops for a tgkill'd SIGUSR2 before a kill'd
// SIGUSR1 (D6; corpus d144).
func TestTraceePrivateSignalsFirst_D6(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	e.ptrace(e.init, unix.PTRACE_SEIZE, p, 0)
	e.ptrace(e.init, unix.PTRACE_INTERRUPT, p, 0)
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), stopped(unix.SIGTRAP, ptraceEventStop))
	e.kill(e.init, p, unix.SIGUSR1)
	e.tgkill(e.init, p, unix.SIGUSR2)
	for _, sig := range []unix.Signal{unix.SIGUSR2, unix.SIGUSR1} {
		e.ptrace(e.init, unix.PTRACE_CONT, p, 0)
		e.reap(e.init, p.Getpid(), 0, p.Getpid(), stopped(sig, 0))
	}
	e.kill(e.init, p, unix.SIGKILL)
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), killed(unix.SIGKILL))
	e.settle()
}

// complete_signal gives a signal sent through a thread (do_notify_parent's
// parent thread) to that thread when it wants it: SIGCHLD for a child of an
// untraced thread does not stop the process's traced leader (G1, B7;
// corpus g40).
func TestSignalThroughParentThread_G1(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.clone(e.init, 0, unix.SIGUSR1)
	e.ptrace(e.init, unix.PTRACE_SEIZE, p, 0)
	th := e.thread(p)
	c := e.fork(th)
	e.exitGroup(c, 4)
	e.check()
	e.wantWait(e.init, -1, unix.WNOHANG|unix.WALL, nil)
	e.reap(th, -1, unix.WNOHANG, c.Getpid(), exited(4))
	e.kill(e.init, p, unix.SIGKILL)
	e.reap(e.init, -1, unix.WALL, p.Getpid(), killed(unix.SIGKILL))
	e.settle()
}

// exit_notify's do_notify_parent reaches the tracer of a leader that
// exits before its other threads: the tracer gets SIGCHLD at once, which
// ends its wait with EINTR when handled without SA_RESTART, though it
// can reap the zombie only once the process is empty (B6, C11; corpus
// d147).
func TestTracedZombieLeaderSignalsTracer_B6(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	tracer := e.fork(e.init)
	e.ptrace(tracer, unix.PTRACE_SEIZE, p, 0)
	th := e.thread(p)
	e.sigaction(tracer, unix.SIGCHLD, SigHandler, 0)
	out := e.blockedWait(tracer, -1, unix.WALL)
	e.exit(p, 2)
	if o := e.result(out); o.err != unix.EINTR {
		t.Fatalf("tracer's wait4 = {pid %d}, %v; want EINTR from the SIGCHLD", o.r.Pid, o.err)
	}
	e.wantWait(tracer, -1, unix.WALL|unix.WNOHANG, nil)
	e.exit(th, 3)
	e.check()
	e.reap(tracer, -1, unix.WALL|unix.WNOHANG, p.Getpid(), exited(3))
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), exited(3))
	e.check()
}

// wants_signal refuses a thread that already has a signal pending: a
// SIGCONT sent through a seized thread, which prepare_signal has just made
// owe a notify trap, goes to another thread, and the seized one traps
// only once (D6, G1; corpus d148).
func TestSignalSkipsThreadWithPendingTrap_G1(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	th := e.thread(p)
	e.ptrace(e.init, unix.PTRACE_SEIZE, th, 0)
	errIs(t, "kill", e.init.Kill(th.Gettid(), int(unix.SIGCONT)), nil)
	e.check()
	trap := stopped(unix.SIGTRAP, ptraceEventStop)
	e.reap(e.init, th.Gettid(), unix.WALL|unix.WNOHANG, th.Gettid(), trap)
	e.ptrace(e.init, unix.PTRACE_CONT, th, 0)
	e.check()
	e.wantWait(e.init, th.Gettid(), unix.WALL|unix.WNOHANG, nil)
	e.kill(e.init, p, unix.SIGKILL)
	e.reap(e.init, th.Gettid(), unix.WALL, th.Gettid(), killed(unix.SIGKILL))
	e.reap(e.init, p.Getpid(), unix.WALL, p.Getpid(), killed(unix.SIGKILL))
	e.settle()
}
