package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

// RLIMIT_NPROC (A7): what counts against a user's limit, who is exempt,
// and the mark set_user leaves for exec to check.

// setNproc sets t's RLIMIT_NPROC soft limit, keeping the hard one.
func (e *env) setNproc(t *Task, soft uint64) {
	e.t.Helper()
	if err := t.Setrlimit(unix.RLIMIT_NPROC, RLimit{Cur: soft, Max: unix.RLIM_INFINITY}); err != nil {
		e.t.Fatalf("setrlimit(RLIMIT_NPROC, %d): %v", soft, err)
	}
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
	e.exitReaped(e.init, 0, a)
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

// TestCloneRlimitNproc_A7 checks RLIMIT_NPROC (host): a user with limit N
// owns N tasks, threads and unreaped zombies included; the next fork or
// thread fails with EAGAIN; reaping frees a slot; uid 0 is exempt, and so is
// a task with CAP_SYS_ADMIN in its effective set (host: setresuid(u, 0, 0)
// forks past the limit).
func TestCloneRlimitNproc_A7(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	mustOK(t, p.Setrlimit(unix.RLIMIT_NPROC, RLimit{3, 3}))
	// uid 0 is exempt: a limit of 3 does not stop root.
	var rootKids []*Task
	for range 4 {
		rootKids = append(rootKids, e.fork(p))
	}
	for _, c := range rootKids {
		e.exitReaped(p, 0, c)
	}
	mustOK(t, p.Setresuid(4242, 4242, 4242))
	u := e.k.user(4242)
	if u.Tasks() != 1 {
		t.Fatalf("uid 4242 owns %d tasks, want 1", u.Tasks())
	}
	a := e.fork(p)
	b := e.thread(p) // threads count (host)
	if u.Tasks() != 3 {
		t.Fatalf("uid 4242 owns %d tasks, want 3", u.Tasks())
	}
	_, err := p.Fork()
	errIs(t, "fork past RLIMIT_NPROC", err, unix.EAGAIN)
	_, err = p.Clone(CloneArgs{Flags: threadFlags})
	errIs(t, "thread past RLIMIT_NPROC", err, unix.EAGAIN)
	if u.Tasks() != 3 {
		t.Fatalf("a failed fork left its charge: uid 4242 owns %d tasks", u.Tasks())
	}
	// An unreaped zombie still counts (host); reaping frees its slot.
	e.exit(a, 0)
	_, err = p.Fork()
	errIs(t, "fork with a zombie unreaped", err, unix.EAGAIN)
	e.reap(p, a.Getpid(), 0, a.Getpid(), exited(0))
	c := e.fork(p)
	// A released thread frees its slot at once.
	e.exit(b, 0)
	d := e.thread(p)
	// CAP_SYS_ADMIN in the effective set exempts (host).
	q := e.fork(e.init)
	mustOK(t, q.Setrlimit(unix.RLIMIT_NPROC, RLimit{1, 1}))
	mustOK(t, q.Setresuid(4242, 0, 0))
	qc := e.fork(q) // uid 4242 now owns 5 tasks, with a limit of 1
	mustOK(t, q.Setresuid(-1, 4242, -1))
	_, err = q.Fork()
	errIs(t, "fork past the limit without capabilities", err, unix.EAGAIN)

	for _, x := range []*Task{c, qc, d} {
		e.exit(x, 0)
	}
	e.reap(p, c.Getpid(), 0, c.Getpid(), exited(0))
	e.reap(q, qc.Getpid(), 0, qc.Getpid(), exited(0))
	e.exit(q, 0)
	e.exitReaped(e.init, 0, p)
	e.reap(e.init, q.Getpid(), 0, q.Getpid(), exited(0))
	if u.Tasks() != 0 {
		t.Fatalf("uid 4242 owns %d tasks after every task exited", u.Tasks())
	}
	e.settle()
}

// TestCredsNprocChargeFollowsRealUID_A7: a task is charged to its real uid;
// setuid moves the charge, uid 0 is not counted, and a zombie stays charged
// until it is reaped.
func TestCredsNprocChargeFollowsRealUID_A7(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	th := e.thread(p)
	a, b := e.k.user(1000), e.k.user(2000)
	mustOK(t, p.Setresuid(1000, -1, -1))
	if a.Tasks() != 1 {
		t.Fatalf("uid 1000 owns %d, want 1: credentials are per thread", a.Tasks())
	}
	mustOK(t, th.Setresuid(2000, 0, -1))
	c := e.fork(th) // charged to 2000, exempt through its capabilities
	if a.Tasks() != 1 || b.Tasks() != 2 || p.Getuid() != 1000 || c.Getuid() != 2000 || c.Geteuid() != 0 {
		t.Fatalf("uid 1000 owns %d, uid 2000 owns %d", a.Tasks(), b.Tasks())
	}
	mustOK(t, c.Setuid(1000))
	if a.Tasks() != 2 || b.Tasks() != 1 {
		t.Fatalf("after setuid: uid 1000 owns %d, uid 2000 owns %d", a.Tasks(), b.Tasks())
	}
	e.exit(c, 0)
	if a.Tasks() != 2 {
		t.Fatal("a zombie stays charged until reaped")
	}
	e.reap(th, -1, 0, c.Getpid(), exited(0))
	mustOK(t, th.Setresuid(0, -1, -1))
	if a.Tasks() != 1 || b.Tasks() != 0 {
		t.Fatalf("uid 0 is not counted: uid 1000 owns %d, uid 2000 owns %d", a.Tasks(), b.Tasks())
	}
	e.exitGroup(p, 0)
	e.reap(e.init, -1, 0, p.Getpid(), exited(0))
	if a.Tasks() != 0 || b.Tasks() != 0 {
		t.Fatal("charges left after every task exited")
	}
	e.settle()
}

// prlimit of another task: any thread of the process names it; the caller
// needs the target's real, effective and saved uids and gids to be its
// own real ones, or CAP_SYS_RESOURCE; a zombie's limits are read and set
// until it is reaped; the call returns the old limit; the resource is an
// unsigned int (R1).
func TestPrlimit_R1(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	th := e.thread(p)
	lim := RLimit{Cur: 5, Max: 9}
	old, err := e.init.Prlimit(th.Gettid(), unix.RLIMIT_CORE, &lim)
	mustOK(t, err)
	if old != (RLimit{0, unix.RLIM_INFINITY}) {
		t.Errorf("prlimit returned %+v, want the old limit", old)
	}
	if got, _ := p.Getrlimit(unix.RLIMIT_CORE); got != lim {
		t.Errorf("the process's limit is %+v after prlimit through a thread", got)
	}
	_, err = e.init.Prlimit(p.Getpid(), -1, nil)
	errIs(t, "resource -1", err, unix.EINVAL)
	_, err = e.init.Prlimit(p.Getpid(), 1<<32|unix.RLIMIT_CORE, nil)
	errIs(t, "resource 1<<32|RLIMIT_CORE", err, nil)
	_, err = e.init.Prlimit(30000, unix.RLIMIT_CORE, nil)
	errIs(t, "no such pid", err, unix.ESRCH)

	u := e.forkAs(1000)
	_, err = u.Prlimit(p.Getpid(), unix.RLIMIT_CORE, nil)
	errIs(t, "a uid-1000 caller on a root process", err, unix.EPERM)
	v := e.forkAs(1000)
	_, err = u.Prlimit(v.Getpid(), unix.RLIMIT_CORE, nil)
	errIs(t, "between two uid-1000 processes", err, nil)
	w := e.fork(e.init)
	mustOK(t, w.Setresuid(1000, 1000, 0))
	_, err = u.Prlimit(w.Getpid(), unix.RLIMIT_CORE, nil)
	errIs(t, "on a process whose saved uid differs", err, unix.EPERM)
	x := e.fork(e.init)
	mustOK(t, x.Setresgid(5, 5, 5))
	mustOK(t, x.Setuid(1000))
	_, err = u.Prlimit(x.Getpid(), unix.RLIMIT_CORE, nil)
	errIs(t, "on a process whose gids differ", err, unix.EPERM)
	_, err = e.init.Prlimit(u.Getpid(), unix.RLIMIT_CORE, nil)
	errIs(t, "root with CAP_SYS_RESOURCE on another user's process", err, nil)

	e.exit(th, 0)
	e.exit(p, 0)
	e.k.Quiesce()
	_, err = e.init.Prlimit(p.Getpid(), unix.RLIMIT_CORE, &RLimit{Cur: 1, Max: 9})
	errIs(t, "prlimit of a zombie", err, nil)
	e.finish()
}
