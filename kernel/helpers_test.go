package kernel

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Helpers shared by the per-phase unit tests. Their names carry an "lc"
// (lifecycle) prefix so that they stay out of the way of other test files.

// threadFlags are the clone flags of pthread_create that the model needs.
const threadFlags = unix.CLONE_THREAD | unix.CLONE_SIGHAND | unix.CLONE_VM

// lcTimeout bounds every blocking call a test makes, so that a model bug
// fails the test instead of hanging it.
const lcTimeout = 10 * time.Second

type lcEnv struct {
	t    *testing.T
	k    *Kernel
	init *Task
	// base is the root namespace's pid count right after New.
	base int
}

func newLCEnv(t *testing.T, cfg Config) *lcEnv {
	t.Helper()
	k, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &lcEnv{t: t, k: k, init: k.Init(), base: k.RootNamespace().Allocated()}
}

func (e *lcEnv) clone(p *Task, flags uint64, sig unix.Signal) *Task {
	e.t.Helper()
	c, err := p.Clone(CloneArgs{Flags: flags, ExitSignal: int(sig)})
	if err != nil {
		e.t.Fatalf("clone(%#x, %v) by %d: %v", flags, sig, p.Gettid(), err)
	}
	return c
}

func (e *lcEnv) fork(p *Task) *Task {
	e.t.Helper()
	return e.clone(p, 0, unix.SIGCHLD)
}

func (e *lcEnv) thread(p *Task) *Task {
	e.t.Helper()
	return e.clone(p, threadFlags, 0)
}

func (e *lcEnv) exit(t *Task, code int) {
	e.t.Helper()
	if err := t.Exit(code); err != nil {
		e.t.Fatalf("exit(%d) of %d: %v", code, t.Gettid(), err)
	}
}

func (e *lcEnv) exitGroup(t *Task, code int) {
	e.t.Helper()
	if err := t.ExitGroup(code); err != nil {
		e.t.Fatalf("exit_group(%d) of %d: %v", code, t.Gettid(), err)
	}
}

func (e *lcEnv) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), lcTimeout)
}

func (e *lcEnv) wait4(p *Task, pid, opts int) (WaitResult, error) {
	ctx, cancel := e.ctx()
	defer cancel()
	return p.Wait4(ctx, pid, opts)
}

// reap waits (blocking unless opts says otherwise) and checks that it
// reports wantPid with status want.
func (e *lcEnv) reap(p *Task, pid, opts, wantPid int, want unix.WaitStatus) WaitResult {
	e.t.Helper()
	r, err := e.wait4(p, pid, opts)
	if err != nil || r.Pid != wantPid || r.Status != want {
		e.t.Fatalf("wait4(%d, %#x) by %d = {pid %d status %#x}, %v; want {pid %d status %#x}",
			pid, opts, p.Gettid(), r.Pid, uint32(r.Status), err, wantPid, uint32(want))
	}
	return r
}

// wantErr checks a wait4 outcome that must fail with want (or, for want
// nil, report nothing: the WNOHANG "0" answer).
func (e *lcEnv) wantWait(p *Task, pid, opts int, want error) {
	e.t.Helper()
	r, err := e.wait4(p, pid, opts)
	ok := (want == nil && err == nil && r.Pid == 0) || (want != nil && errors.Is(err, want))
	if !ok {
		e.t.Fatalf("wait4(%d, %#x) by %d = {pid %d status %#x}, %v; want nothing, %v",
			pid, opts, p.Gettid(), r.Pid, uint32(r.Status), err, want)
	}
}

type lcWaitOut struct {
	r   WaitResult
	err error
}

// blockedWait starts a blocking wait4 and returns once the waiter sleeps.
func (e *lcEnv) blockedWait(p *Task, pid, opts int) <-chan lcWaitOut {
	e.t.Helper()
	out := make(chan lcWaitOut, 1)
	go func() {
		r, err := e.wait4(p, pid, opts)
		out <- lcWaitOut{r, err}
	}()
	e.untilSleeping(p, out)
	return out
}

// untilSleeping polls until p is asleep in a wait; a wait that returned
// instead fails the test.
func (e *lcEnv) untilSleeping(p *Task, out <-chan lcWaitOut) {
	e.t.Helper()
	deadline := time.Now().Add(lcTimeout)
	for !p.Sleeping() {
		select {
		case o := <-out:
			e.t.Fatalf("wait by %d returned {pid %d status %#x}, %v; want it to block",
				p.Gettid(), o.r.Pid, uint32(o.r.Status), o.err)
		default:
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("wait by %d never slept", p.Gettid())
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func (e *lcEnv) result(out <-chan lcWaitOut) lcWaitOut {
	e.t.Helper()
	select {
	case o := <-out:
		return o
	case <-time.After(lcTimeout):
		e.t.Fatal("blocked wait never returned")
		return lcWaitOut{}
	}
}

// stillBlocked checks that a blocked wait has not returned (after a short
// grace period for a wrong wake-up to show).
func (e *lcEnv) stillBlocked(out <-chan lcWaitOut) {
	e.t.Helper()
	select {
	case o := <-out:
		e.t.Fatalf("wait returned {pid %d status %#x}, %v; want it still blocked", o.r.Pid, uint32(o.r.Status), o.err)
	case <-time.After(5 * time.Millisecond):
	}
}

// settle waits for asynchronous exits, checks the table's invariants and
// that the root namespace holds no more pids than it did after New.
func (e *lcEnv) settle() {
	e.t.Helper()
	e.k.Quiesce()
	if err := e.k.CheckInvariants(); err != nil {
		e.t.Fatalf("invariants: %v", err)
	}
	if got := e.k.RootNamespace().Allocated(); got != e.base {
		e.t.Fatalf("root namespace holds %d pids, %d at start: pids leaked", got, e.base)
	}
}

// check verifies the invariants without requiring an empty table.
func (e *lcEnv) check() {
	e.t.Helper()
	e.k.Quiesce()
	if err := e.k.CheckInvariants(); err != nil {
		e.t.Fatalf("invariants: %v", err)
	}
}

// eventually polls cond until it holds.
func (e *lcEnv) eventually(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(lcTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		e.k.Quiesce()
		time.Sleep(100 * time.Microsecond)
	}
}

func exited(code int) unix.WaitStatus        { return unix.WaitStatus(code&0xff) << 8 }
func killed(sig unix.Signal) unix.WaitStatus { return unix.WaitStatus(sig) }

func errIs(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err %v, want %v", what, err, want)
	}
}
