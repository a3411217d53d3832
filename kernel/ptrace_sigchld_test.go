package kernel

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// Signals the kernel sends a process on behalf of one of its threads go
// through that thread, which takes them if it wants them: a traced one
// stops for them (d140, b90). The model used to hand them to the thread
// complete_signal picks for a plain process-directed signal, the leader
// first.

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
	r, err := f.wait4(f.a, c.Getpid(), 0)
	f.want("the tracer's wait", r, err, c.Getpid(), stopped(unix.SIGSTOP, 0), CLDTrapped)
	f.kill(f.init, c, unix.SIGHUP)
	f.ptrace(f.a, unix.PTRACE_DETACH, c, uint64(unix.SIGSTOP))
	f.k.Quiesce()
	r, err = f.wait4(f.init, c.Getpid(), unix.WUNTRACED|unix.WNOHANG)
	f.want("the parent's wait after the detach", r, err, c.Getpid(), stopped(unix.SIGSTOP, 0), CLDStopped)
	f.kill(f.init, c, unix.SIGCONT)
	r, err = f.wait4(f.init, c.Getpid(), 0)
	f.want("the parent's wait after SIGCONT", r, err, c.Getpid(), killed(unix.SIGHUP), CLDKilled)
	f.finish()
}
