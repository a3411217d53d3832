package kernel

import (
	"testing"

	"golang.org/x/sys/unix"

	"tasklist/internal/abi"
)

// clone3's own checks, each alone, before anything clone(2) checks
// (A30).
func TestClone3Validation_A30(t *testing.T) {
	e := newEnv(t, Config{})
	sig := int(unix.SIGCHLD)
	for _, c := range []struct {
		what string
		args CloneArgs
	}{
		{"33 set_tid entries", CloneArgs{ExitSignal: sig, SetTID: make([]int32, 33)}},
		{"exit signal 65", CloneArgs{ExitSignal: 65}},
		{"negative exit signal", CloneArgs{ExitSignal: -1}},
		{"an unknown flag", CloneArgs{Flags: 1 << 40, ExitSignal: sig}},
		{"a flag in clone(2)'s signal byte", CloneArgs{Flags: 0x01, ExitSignal: sig}},
		{"CLONE_DETACHED", CloneArgs{Flags: unix.CLONE_DETACHED, ExitSignal: sig}},
		{"CLONE_SIGHAND|CLONE_CLEAR_SIGHAND", CloneArgs{Flags: unix.CLONE_SIGHAND | unix.CLONE_VM | unix.CLONE_CLEAR_SIGHAND, ExitSignal: sig}},
		{"CLONE_THREAD with an exit signal", CloneArgs{Flags: threadFlags, ExitSignal: sig}},
		{"CLONE_PARENT with an exit signal", CloneArgs{Flags: unix.CLONE_PARENT, ExitSignal: sig}},
	} {
		_, err := e.init.Clone3(c.args)
		errIs(t, "clone3: "+c.what, err, unix.EINVAL)
	}
	// clone(2) takes a thread's exit signal and ignores the flags it has
	// no room for.
	p := e.fork(e.init)
	th, err := p.Clone(CloneArgs{Flags: threadFlags | unix.CLONE_CLEAR_SIGHAND, ExitSignal: sig})
	mustOK(t, err)
	_, err = e.init.Clone3(CloneArgs{Flags: unix.CLONE_INTO_CGROUP, ExitSignal: sig})
	errIs(t, "clone3(CLONE_INTO_CGROUP)", err, unix.EBADF)
	e.exit(th, 0)
	e.finish()
}

// CLONE_CLEAR_SIGHAND: the child's handled signals are back to SIG_DFL
// with no flags, ignored ones stay ignored; the parent keeps its own
// (flush_signal_handlers, A31).
func TestClone3ClearSighand_A31(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	e.sigaction(p, unix.SIGUSR1, SigHandler, abi.SA_RESTART)
	e.sigaction(p, unix.SIGUSR2, SigIgn, 0)
	e.sigaction(p, unix.SIGCHLD, SigDfl, SaNoCldWait)
	c, err := p.Clone3(CloneArgs{Flags: unix.CLONE_CLEAR_SIGHAND, ExitSignal: int(unix.SIGCHLD)})
	mustOK(t, err)
	for sig, want := range map[unix.Signal]SigAction{unix.SIGUSR1: {Handler: SigDfl},
		unix.SIGUSR2: {Handler: SigIgn}, unix.SIGCHLD: {Handler: SigDfl}} {
		if got, _ := c.SigactionOf(int(sig)); got != want {
			t.Errorf("child's %v: %+v, want %+v", sig, got, want)
		}
	}
	if got, _ := p.SigactionOf(int(unix.SIGUSR1)); got.Handler != SigHandler {
		t.Errorf("the parent's SIGUSR1 changed: %+v", got)
	}
	e.finish()
}

// set_tid chooses the child's pid in its namespace and the ones above, as
// far as it has entries, innermost first, without moving the cyclic
// cursor; EINVAL for more entries than levels, a number outside
// [1, pid_max), or another number than 1 in a namespace with no init;
// EPERM without CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE; EEXIST for a
// number in use (A32).
func TestClone3SetTID_A32(t *testing.T) {
	e := newEnv(t, Config{})
	sig := int(unix.SIGCHLD)
	root := e.k.RootNamespace()
	nsInit, err := e.init.Clone3(CloneArgs{Flags: unix.CLONE_NEWPID, ExitSignal: sig, SetTID: []int32{1, 500}})
	mustOK(t, err)
	if nsInit.Gettid() != 1 || nsInit.PIDIn(root) != 500 {
		t.Fatalf("set_tid [1 500] made pids %d and %d", nsInit.Gettid(), nsInit.PIDIn(root))
	}
	c, err := nsInit.Clone3(CloneArgs{ExitSignal: sig, SetTID: []int32{40}})
	mustOK(t, err)
	if c.Gettid() != 40 {
		t.Errorf("set_tid [40] made pid %d", c.Gettid())
	}
	next := e.fork(nsInit)
	if next.Gettid() != 2 {
		t.Errorf("the fork after set_tid got pid %d, want the cursor's 2", next.Gettid())
	}
	for _, tc := range []struct {
		what   string
		caller *Task
		args   CloneArgs
		want   error
	}{
		{"3 entries for 2 levels", nsInit, CloneArgs{SetTID: []int32{41, 42, 43}}, unix.EINVAL},
		{"pid 0", nsInit, CloneArgs{SetTID: []int32{0}}, unix.EINVAL},
		{"pid_max", nsInit, CloneArgs{SetTID: []int32{int32(root.PIDMax())}}, unix.EINVAL},
		{"pid 2 of a new namespace", nsInit, CloneArgs{Flags: unix.CLONE_NEWPID, SetTID: []int32{2}}, unix.EINVAL},
		{"a pid in use", nsInit, CloneArgs{SetTID: []int32{40}}, unix.EEXIST},
		{"in use above", nsInit, CloneArgs{SetTID: []int32{41, 500}}, unix.EEXIST},
	} {
		tc.args.ExitSignal = sig
		_, err := tc.caller.Clone3(tc.args)
		errIs(t, "set_tid: "+tc.what, err, tc.want)
	}
	u := e.fork(nsInit)
	mustOK(t, u.Setuid(1000))
	_, err = u.Clone3(CloneArgs{ExitSignal: sig, SetTID: []int32{45}})
	errIs(t, "set_tid without privilege", err, unix.EPERM)
	if got := e.fork(nsInit).Gettid(); got != 4 {
		t.Errorf("failed set_tids moved the cursor: the next fork got %d, want 4", got)
	}
	e.finish()
}

// vfork: the caller sleeps until its CLONE_VM child execs or exits, and
// the child is created (Created is called) before that (A33).
func TestVfork_A33(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	made := make(chan *Task, 1)
	out := e.blocked(p, "vfork", func() (WaitResult, error) {
		c, err := p.Clone(CloneArgs{Flags: unix.CLONE_VFORK | unix.CLONE_VM, ExitSignal: int(unix.SIGCHLD),
			Created: func(c *Task) { made <- c }})
		if c == nil {
			return WaitResult{}, err
		}
		return WaitResult{Pid: c.Gettid()}, err
	})
	c := <-made
	mustOK(t, c.Execve())
	if o := e.result(out); o.err != nil || o.r.Pid != c.Gettid() {
		t.Fatalf("vfork returned %d, %v; want %d", o.r.Pid, o.err, c.Gettid())
	}
	v := e.blocked(p, "Vfork", func() (WaitResult, error) {
		c, err := p.Vfork()
		if c == nil {
			return WaitResult{}, err
		}
		return WaitResult{Pid: c.Gettid()}, err
	})
	e.eventually("a vfork child", func() bool { return p.Sleeping() })
	var child *Task
	for nr := 2; nr < 100 && child == nil; nr++ {
		if u := e.k.RootNamespace().Lookup(nr); u != nil && u.Parent() == p && u != c {
			child = u
		}
	}
	e.exit(child, 0)
	if o := e.result(v); o.err != nil || o.r.Pid != child.Gettid() {
		t.Fatalf("Vfork returned %d, %v", o.r.Pid, o.err)
	}
	e.finish()
}
