package kernel

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// de_thread ends with exit_signal = SIGCHLD for the thread that execs,
// the leader included: a child cloned with SIGUSR1 that execs itself
// leaves the __WCLONE class, and its exit sends its parent SIGCHLD, not
// SIGUSR1, whose default action would kill the parent (B7, C5; corpus
// x15).
func TestDeThreadResetsLeaderExitSignal_B7(t *testing.T) {
	e := newEnv(t, Config{})
	w := e.fork(e.init)
	a := e.clone(w, 0, unix.SIGUSR1)
	e.wantWait(w, -1, unix.WNOHANG|unix.WCLONE, nil)
	if err := a.Execve(); err != nil {
		t.Fatalf("execve: %v", err)
	}
	e.wantWait(w, -1, unix.WNOHANG|unix.WCLONE, unix.ECHILD)
	e.wantWait(w, -1, unix.WNOHANG, nil)
	e.exit(a, 3)
	e.check()
	if w.Exited() {
		t.Fatal("the parent was killed: the exit signal was not reset to SIGCHLD")
	}
	e.reap(w, -1, unix.WNOHANG, a.Getpid(), exited(3))
	e.exit(w, 0)
	e.reap(e.init, -1, 0, w.Getpid(), exited(0))
	e.settle()
}

// setNproc sets t's RLIMIT_NPROC soft limit, keeping the hard one.
func (e *env) setNproc(t *Task, soft uint64) {
	e.t.Helper()
	if err := t.Setrlimit(unix.RLIMIT_NPROC, RLimit{Cur: soft, Max: unix.RLIM_INFINITY}); err != nil {
		e.t.Fatalf("setrlimit(RLIMIT_NPROC, %d): %v", soft, err)
	}
}

// forkAs forks a child of init and moves it to uid.
func (e *env) forkAs(uid int) *Task {
	e.t.Helper()
	c := e.fork(e.init)
	if err := c.Setuid(uid); err != nil {
		e.t.Fatalf("setuid(%d): %v", uid, err)
	}
	return c
}

// set_user's flag_nproc_exceeded marks a task whose new real uid already
// has more tasks than its RLIMIT_NPROC, counted before the task joins
// them; do_execveat_common then fails with EAGAIN while the user is still
// over the limit (zombies count until released) and clears the mark once
// it is not (A7; corpus a57, a58).
func TestExecRechecksNprocAfterSetuid_A7(t *testing.T) {
	e := newEnv(t, Config{})
	x := e.forkAs(1000)
	// One other task, limit 1: not over, not marked.
	a := e.fork(e.init)
	e.setNproc(a, 1)
	errIs(t, "a.Setuid(1000)", a.Setuid(1000), nil)
	errIs(t, "a.Execve()", a.Execve(), nil)
	// Two others: marked.
	b := e.fork(e.init)
	e.setNproc(b, 1)
	errIs(t, "b.Setresuid(1000, -1, -1)", b.Setresuid(1000, -1, -1), nil)
	errIs(t, "exec while the user has 3 tasks", b.Execve(), unix.EAGAIN)
	e.exit(x, 0)
	errIs(t, "exec while a zombie still counts", b.Execve(), unix.EAGAIN)
	e.reap(e.init, x.Getpid(), 0, x.Getpid(), exited(0))
	errIs(t, "exec with 2 tasks for a limit of 1", b.Execve(), unix.EAGAIN)
	e.exit(a, 0)
	e.reap(e.init, a.Getpid(), 0, a.Getpid(), exited(0))
	errIs(t, "b.Execve()", b.Execve(), nil)
	// The mark is gone: over the limit again, exec still succeeds.
	e.forkAs(1000)
	e.forkAs(1000)
	errIs(t, "b.Execve()", b.Execve(), nil)
	e.check()
}

// A marked task's fork hands the mark to the child (dup_task_struct
// copies the flags) and clears the caller's once past the limit check
// (copy_process); a move back to uid 0 clears it too, as root is never
// marked (A7; corpus a58, a59).
func TestNprocMarkInheritedAndCleared_A7(t *testing.T) {
	e := newEnv(t, Config{})
	e.forkAs(1001)
	e.forkAs(1001)
	b := e.fork(e.init)
	e.setNproc(b, 1)
	errIs(t, "b.Setresuid(1001, -1, -1)", b.Setresuid(1001, -1, -1), nil)
	e.setNproc(b, 100)
	c := e.fork(b)
	e.setNproc(b, 1)
	e.setNproc(c, 1)
	errIs(t, "exec by the marked parent's child", c.Execve(), unix.EAGAIN)
	errIs(t, "b.Execve()", b.Execve(), nil)

	d := e.fork(e.init)
	e.setNproc(d, 1)
	errIs(t, "d.Setresuid(1001, -1, -1)", d.Setresuid(1001, -1, -1), nil)
	errIs(t, "exec once marked", d.Execve(), unix.EAGAIN)
	errIs(t, "d.Setresuid(0, -1, -1)", d.Setresuid(0, -1, -1), nil)
	errIs(t, "d.Execve()", d.Execve(), nil)
	e.check()
}

// de_thread sleeps, killably, until every killed sibling is released
// (notify_count, counted down in __exit_signal): a traced sibling only
// when its tracer reaps it, which it sees exit with status 0. Until then
// the exec is asleep, for runners to see (Sleeping), and returns once the
// tracer's wait has reaped the sibling (corpus x16).
func TestDeThreadWaitsForTracedSiblingRelease(t *testing.T) {
	e := newEnv(t, Config{})
	a := e.fork(e.init)
	th := e.thread(a)
	e.ptrace(e.init, unix.PTRACE_SEIZE, th, 0)
	done := make(chan error, 1)
	go func() { done <- a.Execve() }()
	e.eventually("the exec to sleep", a.Sleeping)
	select {
	case err := <-done:
		t.Fatalf("exec returned %v before the tracer reaped the sibling", err)
	default:
	}
	e.reap(e.init, th.Gettid(), unix.WALL, th.Gettid(), exited(0))
	select {
	case err := <-done:
		errIs(t, "exec", err, nil)
	case <-time.After(callTimeout):
		t.Fatal("exec never completed after the sibling was reaped")
	}
	e.exit(a, 2)
	e.reap(e.init, -1, unix.WALL, a.Getpid(), exited(2))
	e.settle()
}

// ptrace_attach takes the target's cred_guard_mutex, which an exec holds
// through de_thread: an attach to a process whose exec waits for a traced
// sibling's reaping sleeps until the exec ends, then goes through (D5;
// corpus d143).
func TestAttachWaitsForExecCredGuard_D5(t *testing.T) {
	e := newEnv(t, Config{})
	a := e.fork(e.init)
	th := e.thread(a)
	e.ptrace(e.init, unix.PTRACE_SEIZE, th, 0)
	execDone := make(chan error, 1)
	go func() { execDone <- a.Execve() }()
	e.eventually("the exec to sleep", a.Sleeping)
	b := e.fork(e.init)
	attached := make(chan error, 1)
	go func() { attached <- b.Ptrace(unix.PTRACE_SEIZE, a.Gettid(), 0, 0) }()
	e.eventually("the attach to sleep", b.Sleeping)
	select {
	case err := <-attached:
		t.Fatalf("attach returned %v while the exec held cred_guard_mutex", err)
	default:
	}
	e.reap(e.init, th.Gettid(), unix.WALL, th.Gettid(), exited(0))
	for what, ch := range map[string]chan error{"exec": execDone, "attach": attached} {
		select {
		case err := <-ch:
			errIs(t, what, err, nil)
		case <-time.After(callTimeout):
			t.Fatalf("%s never completed after the sibling was reaped", what)
		}
	}
	if a.tracer.Load() != b {
		t.Fatal("after the exec, the attach did not make b a's tracer")
	}
	e.check()
}

// cap_task_setnice, set_one_prio's last check: a target whose permitted
// capabilities the caller lacks may be reniced only with CAP_SYS_NICE
// (F5; corpus f23).
func TestSetniceNeedsCallersCaps_F5(t *testing.T) {
	e := newEnv(t, Config{})
	keeper := e.fork(e.init)
	errIs(t, "setresuid", keeper.Setresuid(1000, 1000, -1), nil) // saved uid 0 keeps the permitted set
	dropped := e.forkAs(1000)
	errIs(t, "renice of a task with more capabilities",
		dropped.Setpriority(unix.PRIO_PROCESS, keeper.Gettid(), 12), unix.EPERM)
	if got, _ := keeper.Getpriority(unix.PRIO_PROCESS, 0); got != 20 {
		t.Fatalf("refused renice changed the target: getpriority %d, want 20", got)
	}
	errIs(t, "renice by the task with more capabilities", keeper.Setpriority(unix.PRIO_PROCESS, dropped.Gettid(), 12), nil)
	e.check()
}
