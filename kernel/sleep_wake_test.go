package kernel

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
)

// Wake-ups that set a thread's pending-signal flag without a signal for
// it to take (ptrace_signal_wake_up, do_signal_stop's signal_wake_up of
// the other threads, ptrace_trap_notify): an interruptible sleep ends as
// for a stop.

// semSet makes a one-semaphore set owned by init.
func (e *env) semSet() int {
	e.t.Helper()
	id, err := e.init.Semget(unix.IPC_PRIVATE, 1, 0o600)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// wantSemEINTR checks that a blocked semop left the queue (GETNCNT 0) and
// then returns EINTR.
func (e *env) wantSemEINTR(what string, id int, out <-chan semOut) {
	e.t.Helper()
	e.k.Quiesce()
	if n := e.semctl(e.init, id, 0, sem.GETNCNT); n != 0 {
		e.t.Fatalf("%s: GETNCNT = %d, want 0: the sleeper is still queued", what, n)
	}
	if err := e.semResult(out); !errors.Is(err, unix.EINTR) {
		e.t.Fatalf("%s: semop = %v, want EINTR", what, err)
	}
}

// PTRACE_INTERRUPT's ptrace_signal_wake_up: a semop the tracee sleeps in
// fails with EINTR (never restarted), returned once the tracer resumes it
// from the trap (D6, H10; corpus d140).
func TestPtraceInterruptBreaksSemop_H10(t *testing.T) {
	e := newEnv(t, Config{})
	id := e.semSet()
	a := e.fork(e.init)
	e.ptrace(e.init, unix.PTRACE_SEIZE, a, 0)
	out := e.blockedSemop(a, id, sem.Sembuf{Num: 0, Op: -1})
	e.ptrace(e.init, unix.PTRACE_INTERRUPT, a, 0)
	e.k.Quiesce()
	trap := stopped(unix.SIGTRAP, ptraceEventStop)
	e.reap(e.init, a.Gettid(), unix.WNOHANG, a.Gettid(), trap)
	if n := e.semctl(e.init, id, 0, sem.GETNCNT); n != 0 {
		t.Fatalf("GETNCNT of a trapped tracee = %d, want 0", n)
	}
	e.ptrace(e.init, unix.PTRACE_CONT, a, 0)
	e.wantSemEINTR("after PTRACE_INTERRUPT", id, out)
	e.kill(e.init, a, unix.SIGKILL)
	e.reap(e.init, a.Getpid(), 0, a.Getpid(), killed(unix.SIGKILL))
	e.settle()
}

// do_signal_stop wakes every other thread of the stopping process with
// signal_wake_up: a sibling asleep in semop leaves the queue, and fails
// with EINTR once SIGCONT lets it run (H10; corpus h76).
func TestGroupStopWakesSiblingSemop_H10(t *testing.T) {
	e := newEnv(t, Config{})
	id := e.semSet()
	a := e.fork(e.init)
	th := e.thread(a)
	out := e.blockedSemop(th, id, sem.Sembuf{Num: 0, Op: -1})
	e.kill(e.init, a, unix.SIGSTOP)
	e.k.Quiesce()
	if n := e.semctl(e.init, id, 0, sem.GETNCNT); n != 0 {
		t.Fatalf("GETNCNT while the process is stopped = %d, want 0", n)
	}
	e.kill(e.init, a, unix.SIGCONT)
	e.wantSemEINTR("after a group stop", id, out)
	e.kill(e.init, a, unix.SIGKILL)
	e.reap(e.init, a.Getpid(), 0, a.Getpid(), killed(unix.SIGKILL))
	e.settle()
}

// A SIGCONT to the process makes a seized thread owe a PTRACE_EVENT_STOP
// trap (ptrace_trap_notify), whose signal_wake_up ends its semop with
// EINTR (D6, H10; corpus h77).
func TestTrapNotifyBreaksTraceeSemop_H10(t *testing.T) {
	e := newEnv(t, Config{})
	id := e.semSet()
	a := e.fork(e.init)
	th := e.thread(a)
	e.ptrace(e.init, unix.PTRACE_SEIZE, th, 0)
	out := e.blockedSemop(th, id, sem.Sembuf{Num: 0, Op: -1})
	e.kill(e.init, a, unix.SIGCONT)
	e.k.Quiesce()
	if n := e.semctl(e.init, id, 0, sem.GETNCNT); n != 0 {
		t.Fatalf("GETNCNT of a thread owing a notify trap = %d, want 0", n)
	}
	e.ptrace(e.init, unix.PTRACE_CONT, th, 0)
	e.wantSemEINTR("after a SIGCONT notify", id, out)
	e.kill(e.init, a, unix.SIGKILL)
	e.reap(e.init, th.Gettid(), unix.WALL, th.Gettid(), killed(unix.SIGKILL))
	e.reap(e.init, a.Getpid(), 0, a.Getpid(), killed(unix.SIGKILL))
	e.settle()
}

// A thread asleep killably inside a call (wait_for_vfork_done, de_thread)
// takes no ptrace stop until it leaves the call, as get_signal runs only
// on the way back to user space: after PTRACE_INTERRUPT it is in no stop,
// so PTRACE_CONT fails with ESRCH (D6; corpus d145, x18).
func TestNoTrapInsideKillableSleep_D6(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	e.ptrace(e.init, unix.PTRACE_SEIZE, p, 0)
	cloned := make(chan error, 1)
	go func() {
		_, err := p.Clone(CloneArgs{Flags: unix.CLONE_VFORK | unix.CLONE_VM, ExitSignal: int(unix.SIGCHLD)})
		cloned <- err
	}()
	e.eventually("the vfork parent to sleep", p.Sleeping)
	e.ptrace(e.init, unix.PTRACE_INTERRUPT, p, 0)
	e.k.Quiesce()
	errIs(t, "PTRACE_CONT of a vfork parent", e.init.Ptrace(unix.PTRACE_CONT, p.Gettid(), 0, 0), unix.ESRCH)
	e.kill(e.init, p, unix.SIGKILL)
	<-cloned
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
			done := make(chan error, 1)
			go func() { done <- other.Execve() }()
			e.reap(e.init, th.Gettid(), unix.WALL, th.Gettid(), exited(6))
			errIs(t, "exec", <-done, nil)
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
