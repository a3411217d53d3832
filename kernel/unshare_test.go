package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The expectations below were checked on Linux 6.18 with the scenario
// files a53–a55 (testdata/scenarios), whose goldens come from the kernel.

// TestUnshareThreadFlags: CLONE_THREAD, CLONE_SIGHAND and CLONE_VM are
// accepted, with no effect, only while the caller is alone on its thread
// list; CLONE_VM implies CLONE_SIGHAND, which implies CLONE_THREAD, and
// CLONE_NEWUSER implies CLONE_THREAD (check_unshare_flags, ksys_unshare).
func TestUnshareThreadFlags(t *testing.T) {
	e := newEnv(t, Config{})
	a := e.fork(e.init)
	for _, f := range []uint64{unix.CLONE_THREAD, unix.CLONE_SIGHAND, unix.CLONE_VM,
		unix.CLONE_THREAD | unix.CLONE_SIGHAND | unix.CLONE_VM} {
		errIs(t, "unshare single-threaded", a.Unshare(f), nil)
	}
	th := e.thread(a)
	for _, f := range []uint64{unix.CLONE_THREAD, unix.CLONE_SIGHAND, unix.CLONE_VM, unix.CLONE_NEWUSER} {
		errIs(t, "unshare by the leader of two threads", a.Unshare(f), unix.EINVAL)
		errIs(t, "unshare by the second thread", th.Unshare(f), unix.EINVAL)
	}
	for _, f := range []uint64{unix.CLONE_FILES, unix.CLONE_FS, unix.CLONE_NEWNS, unix.CLONE_SYSVSEM} {
		errIs(t, "unshare of a flag that does not imply CLONE_THREAD", a.Unshare(f), nil)
	}
	e.exit(th, 0)
	e.check()
	errIs(t, "unshare(CLONE_VM) once the thread is gone", a.Unshare(unix.CLONE_VM), nil)

	// A thread whose leader is a zombie is not alone on the thread list.
	b := e.fork(e.init)
	u := e.thread(b)
	e.exit(b, 0)
	e.check()
	errIs(t, "unshare(CLONE_THREAD) beside a zombie leader", u.Unshare(unix.CLONE_THREAD), unix.EINVAL)
	errIs(t, "unshare(CLONE_FILES) beside a zombie leader", u.Unshare(unix.CLONE_FILES), nil)
	e.exit(u, 0)
	e.exit(a, 0)
	e.reap(e.init, b.Getpid(), 0, b.Getpid(), exited(0))
	e.reap(e.init, a.Getpid(), 0, a.Getpid(), exited(0))
	e.settle()
}

// TestUnshareSharedSighand: CLONE_SIGHAND and CLONE_VM fail while another
// process shares the caller's handler table (sighand->count > 1): a
// process made with CLONE_SIGHAND|CLONE_VM holds it until it is reaped,
// as a zombie too, or until its exec gives it a table of its own.
func TestUnshareSharedSighand(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	s := e.clone(p, unix.CLONE_SIGHAND|unix.CLONE_VM, unix.SIGCHLD)
	for _, x := range []*Task{p, s} {
		errIs(t, "unshare(CLONE_THREAD) with a shared table", x.Unshare(unix.CLONE_THREAD), nil)
		errIs(t, "unshare(CLONE_SIGHAND) with a shared table", x.Unshare(unix.CLONE_SIGHAND), unix.EINVAL)
		errIs(t, "unshare(CLONE_VM) with a shared table", x.Unshare(unix.CLONE_VM), unix.EINVAL)
	}
	e.exit(s, 0)
	e.check()
	errIs(t, "unshare(CLONE_SIGHAND) beside a zombie sharer", p.Unshare(unix.CLONE_SIGHAND), unix.EINVAL)
	e.reap(p, s.Getpid(), 0, s.Getpid(), exited(0))
	errIs(t, "unshare(CLONE_SIGHAND) once the sharer is reaped", p.Unshare(unix.CLONE_SIGHAND), nil)

	r := e.clone(p, unix.CLONE_SIGHAND|unix.CLONE_VM, unix.SIGCHLD)
	errIs(t, "unshare(CLONE_SIGHAND) with a new sharer", p.Unshare(unix.CLONE_SIGHAND), unix.EINVAL)
	errIs(t, "exec of the sharer", r.Execve(), nil)
	errIs(t, "unshare(CLONE_SIGHAND) after the sharer's exec", p.Unshare(unix.CLONE_SIGHAND), nil)
	errIs(t, "unshare(CLONE_SIGHAND) by the exec'd sharer", r.Unshare(unix.CLONE_SIGHAND), nil)
	e.exit(r, 0)
	e.exitReaped(e.init, 0, p)
	e.reap(e.init, r.Getpid(), 0, r.Getpid(), exited(0))
	e.settle()
}

// TestUnshareChecksBeforeNamespaces: the thread-group and handler-table
// checks come before the capability check of a new namespace, so an
// unprivileged caller gets EINVAL, not EPERM, for them.
func TestUnshareChecksBeforeNamespaces(t *testing.T) {
	e := newEnv(t, Config{})
	q := e.fork(e.init)
	errIs(t, "setuid", q.Setuid(1000), nil)
	r := e.clone(q, unix.CLONE_SIGHAND|unix.CLONE_VM, unix.SIGCHLD)
	errIs(t, "unshare(CLONE_NEWPID|CLONE_SIGHAND) shared", q.Unshare(unix.CLONE_NEWPID|unix.CLONE_SIGHAND), unix.EINVAL)
	errIs(t, "unshare(CLONE_NEWPID) unprivileged", q.Unshare(unix.CLONE_NEWPID), unix.EPERM)
	errIs(t, "unshare(CLONE_NEWPID|CLONE_THREAD) alone", q.Unshare(unix.CLONE_NEWPID|unix.CLONE_THREAD), unix.EPERM)
	w := e.thread(q)
	errIs(t, "unshare(CLONE_NEWPID|CLONE_THREAD) threaded", q.Unshare(unix.CLONE_NEWPID|unix.CLONE_THREAD), unix.EINVAL)
	errIs(t, "unshare(CLONE_NEWIPC|CLONE_VM) threaded", q.Unshare(unix.CLONE_NEWIPC|unix.CLONE_VM), unix.EINVAL)
	errIs(t, "unshare(CLONE_NEWUSER) threaded", w.Unshare(unix.CLONE_NEWUSER), unix.EINVAL)
	e.exit(r, 0)
	e.exitGroup(q, 0)
	e.check()
	e.reap(e.init, q.Getpid(), 0, q.Getpid(), exited(0))
	e.reap(e.init, r.Getpid(), 0, r.Getpid(), exited(0))
	e.settle()
}

// TestUnshareVMSharedAddressSpace_current_is_single_threaded: CLONE_VM
// fails while another process shares the caller's address space (a
// CLONE_VM child without CLONE_SIGHAND, a vfork child) until that process
// execs or exits: exit_mm lets it go before the zombie is reaped (a65).
func TestUnshareVMSharedAddressSpace_current_is_single_threaded(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	s := e.clone(p, unix.CLONE_VM, unix.SIGCHLD)
	errIs(t, "unshare(CLONE_VM) by the parent", p.Unshare(unix.CLONE_VM), unix.EINVAL)
	errIs(t, "unshare(CLONE_VM) by the sharer", s.Unshare(unix.CLONE_VM), unix.EINVAL)
	errIs(t, "unshare(CLONE_SIGHAND) beside a sharer of the mm only", p.Unshare(unix.CLONE_SIGHAND), nil)
	e.exit(s, 0)
	e.check()
	errIs(t, "unshare(CLONE_VM) beside a zombie sharer", p.Unshare(unix.CLONE_VM), nil)
	e.reap(p, s.Getpid(), 0, s.Getpid(), exited(0))

	// A vfork child shares its parent's address space until it execs.
	out := make(chan error, 1)
	go func() {
		_, err := p.Clone(CloneArgs{Flags: unix.CLONE_VM | unix.CLONE_VFORK, ExitSignal: int(unix.SIGCHLD)})
		out <- err
	}()
	var v *Task
	e.eventually("the vfork child", func() bool {
		v = e.k.RootNamespace().Lookup(p.PIDIn(e.k.RootNamespace()) + 2)
		return v != nil
	})
	errIs(t, "unshare(CLONE_VM) by a vfork child", v.Unshare(unix.CLONE_VM), unix.EINVAL)
	errIs(t, "execve of the vfork child", v.Execve(), nil)
	errIs(t, "the vfork", <-out, nil)
	errIs(t, "unshare(CLONE_VM) by the child after exec", v.Unshare(unix.CLONE_VM), nil)
	errIs(t, "unshare(CLONE_VM) by the parent after exec", p.Unshare(unix.CLONE_VM), nil)
	e.exitReaped(p, 0, v)
	e.exitReaped(e.init, 0, p)
	e.settle()
}
