package kernel

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The helpers every test of the package uses. An env is a kernel under
// test and its init; its methods make the calls a test needs and fail the
// test when one does not do what it must.

// threadFlags are the clone flags of pthread_create that the model needs.
const threadFlags = unix.CLONE_THREAD | unix.CLONE_SIGHAND | unix.CLONE_VM

// callTimeout bounds every blocking call a test makes: its calls take
// microseconds, so a call still blocked then never ends, and a model bug
// fails the test instead of hanging it.
const callTimeout = 10 * time.Second

// hangLimit bounds every wait for goroutines of a test. The calls involved
// take micro- to milliseconds, so running past it means a deadlock, and
// the goroutine dump is the report.
const hangLimit = 60 * time.Second

type env struct {
	t    testing.TB
	k    *Kernel
	init *Task
	// base is the root namespace's pid count right after New.
	base int
}

func newEnv(t testing.TB, cfg Config) *env {
	t.Helper()
	k, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &env{t: t, k: k, init: k.Init(), base: k.RootNamespace().Allocated()}
}

// --- Making and ending tasks ------------------------------------------------

func (e *env) clone(p *Task, flags uint64, sig unix.Signal) *Task {
	e.t.Helper()
	c, err := p.Clone(CloneArgs{Flags: flags, ExitSignal: int(sig)})
	if err != nil {
		e.t.Fatalf("clone(%#x, %v) by %d: %v", flags, sig, p.Gettid(), err)
	}
	return c
}

func (e *env) fork(p *Task) *Task {
	e.t.Helper()
	return e.clone(p, 0, unix.SIGCHLD)
}

func (e *env) thread(p *Task) *Task {
	e.t.Helper()
	return e.clone(p, threadFlags, 0)
}

func (e *env) exit(t *Task, code int) {
	e.t.Helper()
	if err := t.Exit(code); err != nil {
		e.t.Fatalf("exit(%d) of %d: %v", code, t.Gettid(), err)
	}
}

func (e *env) exitGroup(t *Task, code int) {
	e.t.Helper()
	if err := t.ExitGroup(code); err != nil {
		e.t.Fatalf("exit_group(%d) of %d: %v", code, t.Gettid(), err)
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

// exitReaped makes each of cs exit with code, in turn, then has p reap
// each by its pid.
func (e *env) exitReaped(p *Task, code int, cs ...*Task) {
	e.t.Helper()
	for _, c := range cs {
		e.exit(c, code)
	}
	for _, c := range cs {
		pid := c.PIDIn(p.Namespace())
		e.reap(p, pid, 0, pid, exited(code))
	}
}

// --- Signals and ptrace -----------------------------------------------------

func (e *env) sigaction(p *Task, sig unix.Signal, handler int, flags uint64) {
	e.t.Helper()
	if _, err := p.Sigaction(int(sig), SigAction{Handler: handler, Flags: flags}); err != nil {
		e.t.Fatalf("sigaction(%v) by %d: %v", sig, p.Gettid(), err)
	}
}

// kill sends sig to the process of to.
func (e *env) kill(from *Task, to *Task, sig unix.Signal) {
	e.t.Helper()
	if err := from.Kill(to.Getpid(), int(sig)); err != nil {
		e.t.Fatalf("kill(%d, %v): %v", to.Getpid(), sig, err)
	}
}

func (e *env) tgkill(from *Task, to *Task, sig unix.Signal) {
	e.t.Helper()
	if err := from.Tgkill(to.Getpid(), to.Gettid(), int(sig)); err != nil {
		e.t.Fatalf("tgkill(%d, %d, %v): %v", to.Getpid(), to.Gettid(), sig, err)
	}
}

// ptrace makes a request that must succeed.
func (e *env) ptrace(tracer *Task, req int, target *Task, data uint64) {
	e.t.Helper()
	if err := tracer.Ptrace(req, target.Gettid(), 0, data); err != nil {
		e.t.Fatalf("ptrace(%#x, %d, data %#x) by %d: %v", req, target.Gettid(), data, tracer.Gettid(), err)
	}
}

// ptraceErr makes a request that must fail with want.
func (e *env) ptraceErr(tracer *Task, req, pid int, data uint64, want error) {
	e.t.Helper()
	if err := tracer.Ptrace(req, pid, 0, data); !errors.Is(err, want) {
		e.t.Fatalf("ptrace(%#x, %d, data %#x) by %d: %v, want %v", req, pid, data, tracer.Gettid(), err, want)
	}
}

// wantStopped checks Stopped() of each task once pending stops have been
// taken.
func (e *env) wantStopped(want bool, tasks ...*Task) {
	e.t.Helper()
	e.k.Quiesce()
	for _, task := range tasks {
		if got := task.Stopped(); got != want {
			e.t.Fatalf("tid %d: Stopped() = %v, want %v", task.Gettid(), got, want)
		}
	}
}

// --- Waiting ----------------------------------------------------------------

func (e *env) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), callTimeout)
}

func (e *env) wait4(p *Task, pid, opts int) (WaitResult, error) {
	ctx, cancel := e.ctx()
	defer cancel()
	return p.Wait4(ctx, pid, opts)
}

func (e *env) waitid(p *Task, idtype, id, opts int) (WaitResult, error) {
	ctx, cancel := e.ctx()
	defer cancel()
	return p.Waitid(ctx, idtype, id, opts)
}

// want checks a wait's report: pid, status word and si_code.
func (e *env) want(what string, r WaitResult, err error, pid int, status unix.WaitStatus, code int) {
	e.t.Helper()
	if err != nil || r.Pid != pid || r.Status != status || r.Code != code {
		e.t.Fatalf("%s = {pid %d status %#x code %d}, %v; want {pid %d status %#x code %d}",
			what, r.Pid, uint32(r.Status), r.Code, err, pid, uint32(status), code)
	}
}

// wantNothing checks a WNOHANG wait that finds children but none ready.
func (e *env) wantNothing(what string, r WaitResult, err error) {
	e.t.Helper()
	if err != nil || r.Pid != 0 {
		e.t.Fatalf("%s = {pid %d status %#x}, %v; want 0 (nothing ready)", what, r.Pid, uint32(r.Status), err)
	}
}

// wantErr checks a wait that must fail with want.
func (e *env) wantErr(what string, r WaitResult, err, want error) {
	e.t.Helper()
	if !errors.Is(err, want) {
		e.t.Fatalf("%s = {pid %d status %#x}, %v; want %v", what, r.Pid, uint32(r.Status), err, want)
	}
}

// waitOne is a wait4 (blocking unless opts say otherwise) that must report
// a task; it returns the report.
func (e *env) waitOne(p *Task, pid, opts int) WaitResult {
	e.t.Helper()
	r, err := e.wait4(p, pid, opts)
	if err != nil || r.Pid == 0 {
		e.t.Fatalf("wait4(%d, %#x) by %d = {pid %d status %#x}, %v; want a report",
			pid, opts, p.Gettid(), r.Pid, uint32(r.Status), err)
	}
	return r
}

// reap is a wait4 (blocking unless opts say otherwise) that must report
// wantPid with status want.
func (e *env) reap(p *Task, pid, opts, wantPid int, want unix.WaitStatus) WaitResult {
	e.t.Helper()
	r, err := e.wait4(p, pid, opts)
	if err != nil || r.Pid != wantPid || r.Status != want {
		e.t.Fatalf("wait4(%d, %#x) by %d = {pid %d status %#x}, %v; want {pid %d status %#x}",
			pid, opts, p.Gettid(), r.Pid, uint32(r.Status), err, wantPid, uint32(want))
	}
	return r
}

// reapCode is reap that also checks the report's si_code (CLD_*).
func (e *env) reapCode(p *Task, pid, opts, wantPid int, want unix.WaitStatus, code int) WaitResult {
	e.t.Helper()
	r := e.reap(p, pid, opts, wantPid, want)
	if r.Code != code {
		e.t.Fatalf("wait4(%d, %#x) by %d reported pid %d with si_code %d, want %d", pid, opts, p.Gettid(), r.Pid, r.Code, code)
	}
	return r
}

// wantWait checks a wait4 outcome that must fail with want (or, for want
// nil, report nothing: the WNOHANG "0" answer).
func (e *env) wantWait(p *Task, pid, opts int, want error) {
	e.t.Helper()
	r, err := e.wait4(p, pid, opts)
	what := fmt.Sprintf("wait4(%d, %#x) by %d", pid, opts, p.Gettid())
	if want == nil {
		e.wantNothing(what, r, err)
	} else {
		e.wantErr(what, r, err, want)
	}
}

// reapAll waits for every child of p, blocking, until ECHILD, and returns
// the statuses by pid. A stop it is told of (a tracee's, which a wait
// reports without WUNTRACED) is passed over: it reaps nothing. It may run
// on any goroutine: it reports a failure with Errorf.
func (e *env) reapAll(p *Task) map[int]unix.WaitStatus {
	got := map[int]unix.WaitStatus{}
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	for {
		r, err := p.Wait4(ctx, -1, unix.WALL)
		switch {
		case errors.Is(err, unix.ECHILD):
			return got
		case err != nil:
			e.t.Errorf("reaping the children of %d: %v (a child never became waitable?)", p.Gettid(), err)
			return got
		case r.Status.Stopped() || r.Status.Continued():
			continue
		}
		if _, dup := got[r.Pid]; dup {
			e.t.Errorf("pid %d reaped twice by %d", r.Pid, p.Gettid())
		}
		got[r.Pid] = r.Status
	}
}

// --- Calls that block -------------------------------------------------------

// callOut is what a call that blocked returned.
type callOut struct {
	r   WaitResult
	err error
}

// blocked runs call on a goroutine of its own and returns once p sleeps
// in it; a call that returns instead fails the test. A panic in call is
// returned as its error.
func (e *env) blocked(p *Task, what string, call func() (WaitResult, error)) <-chan callOut {
	e.t.Helper()
	out := make(chan callOut, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				out <- callOut{err: fmt.Errorf("panic: %v", r)}
			}
		}()
		r, err := call()
		out <- callOut{r, err}
	}()
	e.untilSleeping(p, what, out)
	return out
}

// blockedWait starts a blocking wait4 and returns once the waiter sleeps.
func (e *env) blockedWait(p *Task, pid, opts int) <-chan callOut {
	e.t.Helper()
	return e.blocked(p, "wait4", func() (WaitResult, error) { return e.wait4(p, pid, opts) })
}

// untilSleeping polls until p is asleep in a call; a call that returned
// instead fails the test.
func (e *env) untilSleeping(p *Task, what string, out <-chan callOut) {
	e.t.Helper()
	deadline := time.Now().Add(callTimeout)
	for !p.Sleeping() {
		select {
		case o := <-out:
			e.t.Fatalf("%s by %d returned {pid %d status %#x}, %v; want it to block",
				what, p.Gettid(), o.r.Pid, uint32(o.r.Status), o.err)
		default:
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s by %d never slept", what, p.Gettid())
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// result is what a blocked call returns in the end.
func (e *env) result(out <-chan callOut) callOut {
	e.t.Helper()
	select {
	case o := <-out:
		return o
	case <-time.After(callTimeout):
		e.t.Fatal("blocked call never returned")
		return callOut{}
	}
}

// stillBlocked checks that a blocked call has not returned (after a short
// grace period for a wrong wake-up to show).
func (e *env) stillBlocked(out <-chan callOut) {
	e.t.Helper()
	select {
	case o := <-out:
		e.t.Fatalf("call returned {pid %d status %#x}, %v; want it still blocked", o.r.Pid, uint32(o.r.Status), o.err)
	case <-time.After(5 * time.Millisecond):
	}
}

// eventually polls cond until it holds.
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(callTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		e.k.Quiesce()
		time.Sleep(100 * time.Microsecond)
	}
}

// --- The table's state ------------------------------------------------------

// check verifies the invariants on a quiescent kernel, without requiring
// an empty table.
func (e *env) check() {
	e.t.Helper()
	waitOrDump(e.t, "Quiesce", e.k.Quiesce)
	if err := e.k.CheckInvariants(); err != nil {
		e.t.Fatalf("invariants broken:\n%v", err)
	}
}

// wantOnlyInit checks that the root namespace holds no more pids than it
// did after New: nothing the test made is left, not even a zombie.
func (e *env) wantOnlyInit() {
	e.t.Helper()
	if got := e.k.RootNamespace().Allocated(); got != e.base {
		e.t.Fatalf("root namespace holds %d pids, %d at start: pids leaked", got, e.base)
	}
}

// settle waits for asynchronous exits, checks the table's invariants and
// that the test has reaped everything it made.
func (e *env) settle() {
	e.t.Helper()
	e.check()
	e.wantOnlyInit()
}

// killAndSettle kills p's process, has init reap what it has to reap,
// and settles: nothing the test made may be left.
func (e *env) killAndSettle(p *Task) {
	e.t.Helper()
	e.kill(e.init, p, unix.SIGKILL)
	e.reapAll(e.init)
	e.settle()
}

// finish makes every task but init exit, reaps everything through init,
// and checks that the table is consistent and holds init alone. Whatever a
// test left behind (threads, zombies, tracees, pid namespaces whose init
// waits for them to drain) ends up a child of init once every process has
// exited.
func (e *env) finish() {
	e.t.Helper()
	root := e.k.RootNamespace()
	deadline := time.Now().Add(hangLimit)
	for {
		for nr := 2; nr < root.PIDMax(); nr++ {
			if task := root.Lookup(nr); task != nil && !task.Exited() {
				if err := task.ExitGroup(0); err != nil && !errors.Is(err, unix.ESRCH) {
					e.t.Errorf("clean-up: exit_group of pid %d: %v", nr, err)
				}
			}
		}
		waitOrDump(e.t, "Quiesce", e.k.Quiesce)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			_, err := e.init.Wait4(ctx, -1, unix.WALL)
			cancel()
			if err == nil {
				continue
			}
			if !errors.Is(err, unix.ECHILD) && !errors.Is(err, unix.EINTR) {
				e.t.Fatalf("clean-up: init's wait4: %v", err)
			}
			break
		}
		if root.Allocated() == e.base {
			break
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("clean-up: %d pids still allocated after %v:\n%s", root.Allocated(), hangLimit, e.describeTable())
		}
	}
	e.check()
	if n := root.Allocated(); n != e.base {
		e.t.Fatalf("after clean-up %d pids are allocated, want %d (a leak):\n%s", n, e.base, e.describeTable())
	}
}

// describeTable lists the tasks still findable, for a failure message.
func (e *env) describeTable() string {
	root := e.k.RootNamespace()
	var b strings.Builder
	for nr := 1; nr < root.PIDMax(); nr++ {
		task := root.Lookup(nr)
		if task == nil {
			continue
		}
		fmt.Fprintf(&b, "  tid %d tgid %d ppid %d ns level %d exited %v sleeping %v\n",
			nr, task.TGIDIn(root), task.Getppid(), task.Namespace().Level(), task.Exited(), task.Sleeping())
	}
	return b.String()
}

// rootPID is t's pid in the root namespace.
func (e *env) rootPID(t *Task) int { return t.PIDIn(e.k.RootNamespace()) }

// waitOrDump runs wait and fails the test with every goroutine's stack if
// it has not returned within hangLimit.
func waitOrDump(t testing.TB, what string, wait func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(hangLimit):
		buf := make([]byte, 8<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("%s has not finished after %v (deadlock?); goroutines:\n%s", what, hangLimit, buf)
	}
}

// --- Statuses and errors ----------------------------------------------------

func exited(code int) unix.WaitStatus        { return unix.WaitStatus(code&0xff) << 8 }
func killed(sig unix.Signal) unix.WaitStatus { return unix.WaitStatus(sig) }

// stopped is the status of a stop for sig: a group stop, or a ptrace stop
// with event in the high byte (0 for a signal-delivery stop or a legacy
// group-stop trap).
func stopped(sig unix.Signal, event int) unix.WaitStatus {
	return unix.WaitStatus((event<<8|int(sig))<<8 | 0x7f)
}

// errIs checks that err is want (for want nil, that there is no error).
func errIs(t testing.TB, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err %v, want %v", what, err, want)
	}
}

// mustOK fails the test at an unexpected error.
func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// expectOK reports an unexpected error from any goroutine.
func expectOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("unexpected error: %v", err)
	}
}

func isOneOf(err error, allowed ...error) bool {
	for _, e := range allowed {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// errOf is the error of a call's two results.
func errOf[T any](_ T, err error) error { return err }
