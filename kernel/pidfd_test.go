package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

// Pidfds (P1–P7): descriptor tables, pidfd_open, CLONE_PIDFD,
// pidfd_send_signal, waitid(P_PIDFD), poll and close.

// openPidfd opens a pidfd of target in p's table, which must succeed.
func (e *env) openPidfd(p, target *Task, flags int) int {
	e.t.Helper()
	fd, err := p.PidfdOpen(target.PIDIn(p.Namespace()), flags)
	if err != nil {
		e.t.Fatalf("pidfd_open(%d, %#x) by %d: %v", target.Gettid(), flags, p.Gettid(), err)
	}
	return fd
}

// wantPoll checks what poll says of fd in p's table.
func (e *env) wantPoll(p *Task, fd int, want bool, wantErr error) {
	e.t.Helper()
	got, err := p.Poll(fd)
	if got != want || err != wantErr && (err == nil || wantErr == nil || err.Error() != wantErr.Error()) {
		e.t.Errorf("poll(%d) by %d = %v, %v; want %v, %v", fd, p.Gettid(), got, err, want, wantErr)
	}
}

// pidfd_open's errors, in the order Linux checks them, and what it opens:
// any task by tid with PIDFD_THREAD, only a process's leader without it
// (ENOENT for another thread: pidfd_prepare), a zombie until it is
// reaped, and nothing for a number that lives on only as a process
// group's id after its leader was reaped (ESRCH) (P1).
func TestPidfdOpen_P1(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	th := e.thread(p)
	for _, c := range []struct {
		what       string
		pid, flags int
		want       error
	}{
		{"unknown flag", p.Getpid(), 1, unix.EINVAL},
		{"pid 0", 0, 0, unix.EINVAL},
		{"negative pid", -p.Getpid(), 0, unix.EINVAL},
		{"no such pid", 30000, 0, unix.ESRCH},
		{"a thread without PIDFD_THREAD", th.Gettid(), 0, unix.ENOENT},
	} {
		_, err := e.init.PidfdOpen(c.pid, c.flags)
		errIs(t, "pidfd_open: "+c.what, err, c.want)
	}
	a := e.openPidfd(e.init, p, 0)
	b := e.openPidfd(e.init, th, PidfdThread|PidfdNonblock)
	if a == b || e.init.Pidfd(a) == nil || !e.init.Pidfd(b).Thread() || !e.init.Pidfd(b).Nonblock() {
		t.Fatalf("pidfds %d and %d: %+v, %+v", a, b, e.init.Pidfd(a), e.init.Pidfd(b))
	}
	// The lowest free number is taken again once closed.
	mustOK(t, e.init.Close(a))
	errIs(t, "close of a closed pidfd", e.init.Close(a), unix.EBADF)
	if again := e.openPidfd(e.init, p, 0); again != a {
		t.Errorf("reopened at %d, want the freed %d", again, a)
	}

	// A group whose leader is reaped keeps its id; the id is no task's.
	leader := e.fork(e.init)
	mustOK(t, leader.Setpgid(0, 0))
	e.fork(leader) // the group's other member
	e.exitReaped(e.init, 0, leader)
	_, err := e.init.PidfdOpen(leader.Getpid(), 0)
	errIs(t, "pidfd_open of a reaped group leader's id", err, unix.ESRCH)
	e.finish()
}

// fork copies the caller's table: the child has the parent's pidfds at
// the same numbers, and what either opens or closes afterwards is its
// own. CLONE_FILES shares it, so a thread made with it sees its
// process's pidfds, one made without it does not; unshare(CLONE_FILES)
// gives a sharer a copy; exec leaves no pidfd (P2).
func TestDescriptorTables_P2(t *testing.T) {
	e := newEnv(t, Config{})
	target := e.fork(e.init)
	p := e.fork(e.init)
	fd := e.openPidfd(p, target, 0)
	child := e.fork(p)
	if child.Pidfd(fd) != p.Pidfd(fd) {
		t.Fatalf("the fork's table has %v at %d, the parent %v", child.Pidfd(fd), fd, p.Pidfd(fd))
	}
	mustOK(t, child.Close(fd))
	if p.Pidfd(fd) == nil {
		t.Errorf("a child's close closed its parent's pidfd")
	}
	own := e.openPidfd(child, target, 0)
	if _, ok := p.FDOf(child.Pidfd(own)); ok {
		t.Errorf("a child's pidfd is open in its parent's table")
	}

	shared := e.clone(p, threadFlags|unix.CLONE_FILES, 0)
	private := e.thread(p)
	late := e.openPidfd(shared, target, 0)
	if p.Pidfd(late) == nil || private.Pidfd(late) != nil || private.Pidfd(fd) != p.Pidfd(fd) {
		t.Errorf("CLONE_FILES: parent sees %v, private thread %v", p.Pidfd(late), private.Pidfd(late))
	}
	mustOK(t, shared.Unshare(unix.CLONE_FILES))
	mustOK(t, shared.Close(late))
	if p.Pidfd(late) == nil {
		t.Errorf("a close after unshare(CLONE_FILES) closed the former sharer's pidfd")
	}

	mustOK(t, child.Execve())
	if child.Pidfd(own) != nil {
		t.Errorf("exec kept a pidfd open")
	}
	e.finish()
}

// CLONE_PIDFD opens a pidfd of the child in the caller's table, a thread
// pidfd for a CLONE_THREAD child; a child with a private table does not
// get it, one that shares the table does. clone(2) writes the pidfd where
// CLONE_PARENT_SETTID writes the tid, so the two fail together (EINVAL);
// clone3 takes both; a nil destination faults (P3).
func TestClonePidfd_P3(t *testing.T) {
	e := newEnv(t, Config{})
	var fd int
	c, err := e.init.Clone(CloneArgs{Flags: unix.CLONE_PIDFD, ExitSignal: int(unix.SIGCHLD), Pidfd: &fd})
	mustOK(t, err)
	if f := e.init.Pidfd(fd); f == nil || f.pid != c.pid.Load() || f.Thread() {
		t.Fatalf("CLONE_PIDFD left %v at %d", f, fd)
	}
	if c.Pidfd(fd) != nil {
		t.Errorf("the child's own copy of the table holds its pidfd")
	}
	var tfd int
	th, err := c.Clone(CloneArgs{Flags: threadFlags | unix.CLONE_PIDFD | unix.CLONE_FILES, Pidfd: &tfd})
	mustOK(t, err)
	if f := th.Pidfd(tfd); f == nil || !f.Thread() {
		t.Errorf("a CLONE_FILES thread does not see its thread pidfd: %v", f)
	}
	_, err = e.init.Clone(CloneArgs{Flags: unix.CLONE_PIDFD | unix.CLONE_PARENT_SETTID, ExitSignal: int(unix.SIGCHLD), Pidfd: &fd})
	errIs(t, "clone(CLONE_PIDFD|CLONE_PARENT_SETTID)", err, unix.EINVAL)
	_, err = e.init.Clone(CloneArgs{Flags: unix.CLONE_PIDFD, ExitSignal: int(unix.SIGCHLD)})
	errIs(t, "CLONE_PIDFD to nowhere", err, unix.EFAULT)
	c3, err := e.init.Clone3(CloneArgs{Flags: unix.CLONE_PIDFD | unix.CLONE_PARENT_SETTID, ExitSignal: int(unix.SIGCHLD), Pidfd: &fd})
	mustOK(t, err)
	e.exit(th, 0)
	e.exitReaped(e.init, 0, c, c3)
	e.settle()
}

// pidfd_send_signal: kill's permission rules; the pidfd's own scope, the
// process or, for a thread pidfd, the thread; one scope flag at most;
// PIDFD_SIGNAL_PROCESS_GROUP for the group whose id the pid is (ESRCH for
// a process that leads none); EINVAL for a pidfd of a namespace the
// caller cannot see; ESRCH once the task is reaped, 0 for a zombie (P4).
func TestPidfdSendSignal_P4(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	fd := e.openPidfd(e.init, p, 0)
	// A child in a namespace of its own inherits fd, a pidfd of a
	// process it cannot see.
	nsInit := e.clone(e.init, unix.CLONE_NEWPID, unix.SIGCHLD)
	inner := e.openPidfd(e.init, nsInit, 0)
	outer := fd
	for _, c := range []struct {
		what         string
		fd, sig, flg int
		want         error
	}{
		{"unknown flag", fd, 0, 8, unix.EINVAL},
		{"two scopes", fd, 0, PidfdSignalThread | PidfdSignalThreadGroup, unix.EINVAL},
		{"not open", NoFD, 0, 0, unix.EBADF},
		{"invalid signal", fd, 65, 0, unix.EINVAL},
		{"group of a process that leads none", fd, 0, PidfdSignalProcessGroup, unix.ESRCH},
		{"probe", fd, 0, 0, nil},
		{"probe into a child namespace", inner, 0, 0, nil},
	} {
		errIs(t, "pidfd_send_signal: "+c.what, e.init.PidfdSendSignal(c.fd, c.sig, c.flg), c.want)
	}
	errIs(t, "pidfd_send_signal of a pidfd of an ancestor namespace", nsInit.PidfdSendSignal(outer, 0, 0), unix.EINVAL)
	u := e.forkAs(1000)
	ufd := e.openPidfd(u, p, 0)
	errIs(t, "pidfd_send_signal to another user's process", u.PidfdSendSignal(ufd, 0, 0), unix.EPERM)

	mustOK(t, p.Setpgid(0, 0))
	member := e.fork(p)
	mustOK(t, e.init.PidfdSendSignal(fd, int(unix.SIGKILL), PidfdSignalProcessGroup))
	e.k.Quiesce()
	if !member.Exited() || !p.Exited() {
		t.Fatalf("PIDFD_SIGNAL_PROCESS_GROUP did not kill the group")
	}
	errIs(t, "to a zombie", e.init.PidfdSendSignal(fd, 0, 0), nil)
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), killed(unix.SIGKILL))
	errIs(t, "to a reaped process", e.init.PidfdSendSignal(fd, 0, 0), unix.ESRCH)

	// A thread pidfd signals its thread: a SIGSTOP through it stops the
	// process, SIGKILL ends it.
	q := e.fork(e.init)
	th := e.thread(q)
	tfd := e.openPidfd(e.init, th, PidfdThread)
	mustOK(t, e.init.PidfdSendSignal(tfd, int(unix.SIGKILL), 0))
	e.k.Quiesce()
	if !q.Exited() {
		t.Errorf("SIGKILL through a thread pidfd left the process running")
	}
	e.reap(e.init, q.Getpid(), 0, q.Getpid(), killed(unix.SIGKILL))
	e.finish()
}

// waitid(P_PIDFD) waits for the task the pidfd refers to, as P_PID does;
// a nonblocking pidfd makes it WNOHANG and says EAGAIN when nothing is
// ready, unless WNOHANG was given; EINVAL for a negative id, EBADF for a
// closed one, ECHILD once reaped (P5).
func TestWaitidPidfd_P5(t *testing.T) {
	e := newEnv(t, Config{})
	c := e.fork(e.init)
	fd := e.openPidfd(e.init, c, 0)
	nb := e.openPidfd(e.init, c, PidfdNonblock)
	_, err := e.waitid(e.init, unix.P_PIDFD, nb, unix.WEXITED)
	errIs(t, "nonblocking, nothing ready", err, unix.EAGAIN)
	r, err := e.waitid(e.init, unix.P_PIDFD, nb, unix.WEXITED|unix.WNOHANG)
	e.wantNothing("nonblocking with WNOHANG", r, err)
	_, err = e.waitid(e.init, unix.P_PIDFD, -1, unix.WEXITED)
	errIs(t, "negative id", err, unix.EINVAL)
	_, err = e.waitid(e.init, unix.P_PIDFD, NoFD, unix.WEXITED)
	errIs(t, "closed id", err, unix.EBADF)
	out := e.blocked(e.init, "waitid(P_PIDFD)", func() (WaitResult, error) {
		return e.init.Waitid(nil, unix.P_PIDFD, fd, unix.WEXITED)
	})
	e.exit(c, 7)
	o := e.result(out)
	e.want("waitid(P_PIDFD)", o.r, o.err, c.Getpid(), exited(7), CLDExited)
	_, err = e.waitid(e.init, unix.P_PIDFD, fd, unix.WEXITED|unix.WNOHANG)
	errIs(t, "once reaped", err, unix.ECHILD)
	e.settle()
}

// poll of a pidfd: readable once the process has exited (a zombie) or is
// reaped; not while a leader that exited waits for its threads, whether
// the pidfd is a thread pidfd or not; readable once a thread is released;
// EBADF when closed (P6).
func TestPollPidfd_P6(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	th := e.thread(p)
	fd := e.openPidfd(e.init, p, 0)
	leaderFD := e.openPidfd(e.init, p, PidfdThread)
	threadFD := e.openPidfd(e.init, th, PidfdThread)
	e.wantPoll(e.init, fd, false, nil)
	e.exit(p, 0)
	e.k.Quiesce()
	e.wantPoll(e.init, fd, false, nil)
	e.wantPoll(e.init, leaderFD, false, nil)
	e.wantPoll(e.init, threadFD, false, nil)
	e.exit(th, 3)
	e.k.Quiesce()
	e.wantPoll(e.init, threadFD, true, nil)
	e.wantPoll(e.init, fd, true, nil)
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), exited(3))
	e.wantPoll(e.init, fd, true, nil)
	mustOK(t, e.init.Close(fd))
	e.wantPoll(e.init, fd, false, unix.EBADF)
	e.wantPoll(e.init, -1, false, nil)
	e.settle()
}
