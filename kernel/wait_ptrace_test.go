package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

// What wait reports of tracees (wait_consider_task with ptrace set): their
// stops before their continues, the other wait class found after the
// children, and zombies that count only for WEXITED.

// TestZombieTraceeCountsOnlyForWEXITED_wait_consider_task: a zombie the
// waiter sees as a tracee (wait_consider_task with ptrace set: its
// tracer, or its real parent when a thread of the parent traces it) keeps
// a wait from failing with ECHILD only for WEXITED, since wait_task_zombie
// returns before notask_error is cleared; a leader that live threads keep
// from being reported also counts for WCONTINUED (c40, c41).
func TestZombieTraceeCountsOnlyForWEXITED_wait_consider_task(t *testing.T) {
	f := newPtFixture(t)
	waitid := func(w *Task, opts int) error {
		_, err := f.waitid(w, unix.P_ALL, 0, opts|unix.WNOHANG)
		return err
	}
	c := f.fork(f.a)
	mustOK(t, c.Ptrace(unix.PTRACE_TRACEME, 0, 0, 0))
	th := f.thread(c)
	f.exit(c, 3)
	f.k.Quiesce()
	// A leader kept a zombie by its thread.
	for opts, want := range map[int]error{unix.WSTOPPED: unix.ECHILD, unix.WCONTINUED: nil, unix.WEXITED: nil} {
		if err := waitid(f.a, opts); err != want {
			t.Fatalf("waitid(%#x) with a delayed zombie leader = %v, want %v", opts, err, want)
		}
	}
	f.exit(th, 4)
	f.k.Quiesce()
	for opts, want := range map[int]error{unix.WSTOPPED: unix.ECHILD, unix.WCONTINUED: unix.ECHILD,
		unix.WSTOPPED | unix.WCLONE: unix.ECHILD} {
		if err := waitid(f.a, opts); err != want {
			t.Fatalf("waitid(%#x) with a zombie tracee = %v, want %v", opts, err, want)
		}
	}
	r, err := f.waitid(f.a, unix.P_ALL, 0, unix.WEXITED|unix.WNOHANG)
	f.want("the parent's wait", r, err, c.Getpid(), exited(4), CLDExited)

	// A tracer outside the parent's process: it gets ECHILD without
	// WEXITED, the parent, which the zombie has not reached yet, does not.
	d := f.fork(f.b)
	f.ptrace(f.a, unix.PTRACE_SEIZE, d, 0)
	f.exit(d, 5)
	f.k.Quiesce()
	if err := waitid(f.a, unix.WSTOPPED|unix.WALL); err != unix.ECHILD {
		t.Fatalf("the tracer's waitid(WSTOPPED) = %v, want ECHILD", err)
	}
	if err := waitid(f.b, unix.WSTOPPED); err != nil {
		t.Fatalf("the parent's waitid(WSTOPPED) = %v, want 0", err)
	}
	f.finish()
}

// wait_consider_task reports a child's ptrace stop before its continue:
// a continued child its parent then attaches is reported stopped first,
// by a wait for its pid and by one for any child (corpus c46).
func TestTracedChildStopBeforeContinue_C10(t *testing.T) {
	for _, anyChild := range []bool{false, true} {
		e := newEnv(t, Config{})
		c := e.fork(e.init)
		pid := c.Gettid()
		for _, sig := range []unix.Signal{unix.SIGSTOP, unix.SIGCONT} {
			mustOK(t, e.init.Kill(pid, int(sig)))
			e.check()
		}
		mustOK(t, e.init.Ptrace(unix.PTRACE_ATTACH, pid, 0, 0))
		e.check()
		sel := pid
		if anyChild {
			sel = -1
		}
		e.reap(e.init, sel, unix.WNOHANG|unix.WCONTINUED, pid, stopped(unix.SIGSTOP, 0))
		e.reap(e.init, sel, unix.WNOHANG|unix.WCONTINUED, pid, 0xffff)
		e.killAndSettle(c)
	}
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
