// Package modelrun runs scenario files on the tasklist model: it is the
// scenario.Backend behind `tasklist run FILE`.
//
// The scenario's init is pid 1 of a fresh pid namespace, the leader of its
// own session and process group, made by the model's root init with
// CLONE_NEWPID and setsid() — the same position the kernel runner gives it
// on the host. Between statements the backend waits for the model to be
// quiescent (Kernel.Quiesce), and a background call is handed back once it
// has completed or is blocked in a wait.
//
// Conventions shared with the kernel runner, for what the contract leaves
// open: a call by a task that has exited (a zombie or reaped) prints ESRCH;
// a call during which its task dies prints done, since it never returns;
// a call that stops its own task prints EDEADLK (the kernel runner gives
// up on its reply); a call that is blocked while nothing else can run, in
// the foreground or at its join, prints EDEADLK, and so does every later
// call of that task until the blocked one completes (a call made to a
// stopped task is such a call: it runs once the task is continued).
// A semtimedop with a timeout is never stalled while its task runs: it
// waits for the timeout.
package modelrun

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/kernel"
	"tasklist/scenario"
)

// Backend is a scenario.Backend on a fresh model kernel.
type Backend struct {
	k     *kernel.Kernel
	tasks []*kernel.Task
	// sets holds the id of each set a semget returned, by SetRef.
	sets []int
	bg   map[scenario.TaskRef]*background
	// stuck holds, per task, a joined call that was blocked with nothing
	// else able to run; the task takes no other call until it completes.
	stuck map[scenario.TaskRef]*background
	// heirs maps a leader that a non-leader's exec replaced to that
	// thread: the leader's name goes on standing for the pid it had, as
	// on the kernel runner, which keeps a task's numbers after it is gone.
	heirs map[scenario.TaskRef]*kernel.Task
	// execing maps a non-leader whose exec has not returned (a ptrace
	// trap holds it) to the old leader, which took the thread's old tid:
	// until the call returns, the thread's name stands for that tid, as on
	// the kernel runner, which learns of the exchange from the reply.
	execing map[scenario.TaskRef]*kernel.Task
	ctx     context.Context
	stop    context.CancelFunc
}

type background struct {
	done chan struct{}
	res  scenario.Result
	// t is the task making the call.
	t *kernel.Task
	// timed marks a call that ends by itself when its timeout expires.
	timed bool
	// foreground marks a call the scenario joins at once.
	foreground bool
}

// New returns a backend whose init is ready.
func New() (*Backend, error) {
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		return nil, err
	}
	init, err := k.Init().Clone(kernel.CloneArgs{Flags: unix.CLONE_NEWPID, ExitSignal: int(unix.SIGCHLD)})
	if err != nil {
		return nil, err
	}
	if _, err := init.Setsid(); err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Backend{k: k, tasks: []*kernel.Task{init}, bg: map[scenario.TaskRef]*background{},
		stuck: map[scenario.TaskRef]*background{}, heirs: map[scenario.TaskRef]*kernel.Task{},
		execing: map[scenario.TaskRef]*kernel.Task{}, ctx: ctx, stop: stop}, nil
}

// Kernel returns the model the scenario runs on.
func (b *Backend) Kernel() *kernel.Kernel { return b.k }

// PidIn implements scenario.Backend.
func (b *Backend) PidIn(viewer, target scenario.TaskRef) int {
	t := b.tasks[target]
	if heir := b.heirs[target]; heir != nil {
		t = heir
	}
	if old := b.execing[target]; old != nil {
		t = old
	}
	return t.PIDIn(b.tasks[viewer].Namespace())
}

// Do implements scenario.Backend.
func (b *Backend) Do(actor scenario.TaskRef, c scenario.Call) scenario.Result {
	// A foreground call is a background call joined at once, so one that
	// blocks for good reports EDEADLK instead of hanging the run, as on
	// the kernel runner.
	b.start(actor, c, true)
	return b.Join(actor)
}

// Start implements scenario.Backend: the call runs on a goroutine of its
// own, and Start returns once it has finished or sleeps in a wait.
func (b *Backend) Start(actor scenario.TaskRef, c scenario.Call) { b.start(actor, c, false) }

func (b *Backend) start(actor scenario.TaskRef, c scenario.Call, foreground bool) {
	// The actor is read before the call starts: the call may add tasks
	// (fork) while this goroutine watches it.
	t := b.tasks[actor]
	bg := &background{done: make(chan struct{}), timed: timed(c), t: t, foreground: foreground}
	b.bg[actor] = bg
	if old := b.stuck[actor]; old != nil {
		select {
		case <-old.done:
			delete(b.stuck, actor) // it completed: the task is free again
			b.k.Quiesce()
		default:
		}
	}
	switch {
	case b.execing[actor] != nil:
		// Its exec never returned, so its name still stands for its old
		// tid, which the old leader took away: no such task.
		bg.res = errno(unix.ESRCH)
		close(bg.done)
		return
	case b.stuck[actor] != nil:
		// The task is still stuck in an earlier call, which keeps it
		// sleeping: answer here rather than watch it.
		bg.res = errno(unix.EDEADLK)
		close(bg.done)
		return
	}
	go func() {
		bg.res = b.call(actor, c, foreground)
		close(bg.done)
	}()
	for {
		select {
		case <-bg.done:
			b.k.Quiesce()
			return
		default:
		}
		if t.Sleeping() {
			b.k.Quiesce()
			if t.Sleeping() {
				return
			}
		}
		runtime.Gosched()
		time.Sleep(20 * time.Microsecond)
	}
}

// Join implements scenario.Backend. A call still blocked once the model is
// quiescent can never complete, since the scenario issues nothing while it
// joins: it is left blocked and the join reports EDEADLK. A timed call is
// waited for instead.
func (b *Backend) Join(actor scenario.TaskRef) scenario.Result {
	bg := b.bg[actor]
	t := bg.t
	for {
		select {
		case <-bg.done:
			delete(b.bg, actor)
			delete(b.execing, actor)
			b.k.Quiesce()
			return bg.res
		default:
		}
		b.k.Quiesce()
		// A timed call ends by itself only if its task runs: one whose
		// task is stopped, before the call started or after a stop took
		// it out, is stuck like any other.
		if t.Sleeping() && (!bg.timed || t.Stopped()) {
			b.stuck[actor] = bg
			return errno(unix.EDEADLK)
		}
		runtime.Gosched()
		time.Sleep(20 * time.Microsecond)
	}
}

// Close implements scenario.Backend: background calls still blocked are
// interrupted.
func (b *Backend) Close() error {
	b.stop()
	// A call that sleeps killably only (a vfork parent waiting for its
	// child) ends when its task is killed, as the kernel runner's
	// teardown kills everything.
	root := b.k.Init()
	pending := append(slices.Collect(maps.Values(b.bg)), slices.Collect(maps.Values(b.stuck))...)
	for _, bg := range pending {
		select {
		case <-bg.done:
		default:
			_ = root.Kill(bg.t.PIDIn(root.Namespace()), int(unix.SIGKILL))
		}
	}
	for _, bg := range pending {
		<-bg.done
	}
	return nil
}

// call makes one call for actor. A call on a stopped task starts, and a
// call that leaves its task stopped returns, only once the task runs
// again; in the foreground the kernel runner gives up on its reply
// (EDEADLK).
func (b *Backend) call(actor scenario.TaskRef, c scenario.Call, foreground bool) scenario.Result {
	t := b.tasks[actor]
	switch {
	case t.Exited():
		return errno(unix.ESRCH)
	case t.Stopped():
		// The call starts once the task runs again (in the foreground
		// the join gives up on it first, as the kernel runner does).
		t.WaitRunnable(b.ctx)
		b.k.Quiesce()
		if t.Exited() {
			return scenario.Result{Kind: scenario.ResultDone}
		}
	}
	res := b.dispatch(t, actor, c)
	b.k.Quiesce()
	if t.Stopped() && foreground {
		// Stopped by a signal it sent itself, or by a ptrace trap (its
		// exit's too), before the call could return: the kernel runner
		// gives up on the reply.
		return errno(unix.EDEADLK)
	}
	if t.Stopped() {
		t.WaitRunnable(b.ctx)
		b.k.Quiesce()
	}
	if t.Exited() {
		// Killed during the call (a blocking call ends with EINTR), or
		// by a signal it sent itself, which Linux acts on before the
		// call returns to user space.
		return scenario.Result{Kind: scenario.ResultDone}
	}
	return res
}

// dispatch maps one call onto the model.
func (b *Backend) dispatch(t *kernel.Task, actor scenario.TaskRef, c scenario.Call) scenario.Result {
	arg := func(i int) int { return c.Args[i].Pid(b, actor) }
	switch c.Name {
	case "fork":
		return b.created(t, func() (*kernel.Task, error) { return t.Fork() })
	case "clone":
		flags := uint64(c.Args[0].Int)
		sig := flags & 0xff
		if len(c.Args) > 1 {
			sig |= uint64(c.Args[1].Int)
		}
		return b.created(t, func() (*kernel.Task, error) {
			return t.Clone(kernel.CloneArgs{Flags: flags, ExitSignal: int(sig & 0xff)})
		})
	case "execve":
		return b.execve(t, actor)
	case "ptrace":
		var target int
		var addr, data uint64
		if len(c.Args) > 1 {
			target = arg(1)
		}
		if len(c.Args) > 3 {
			addr, data = uint64(c.Args[2].Int), uint64(c.Args[3].Int)
		}
		return zero(t.Ptrace(arg(0), target, addr, data))
	case "exit":
		return done(t.Exit(arg(0)))
	case "exit_group":
		return done(t.ExitGroup(arg(0)))
	case "wait4":
		r, err := t.Wait4(b.ctx, arg(0), arg(1))
		if r.Code == kernel.CLDTrapped {
			r.Code = kernel.CLDStopped // wait4's status cannot tell them apart
		}
		return waited(r, err)
	case "waitid":
		r, err := t.Waitid(b.ctx, arg(0), arg(1), arg(2))
		return waited(r, err)
	case "getpid":
		return pid(t.Getpid(), nil)
	case "gettid":
		return pid(t.Gettid(), nil)
	case "getppid":
		return pid(t.Getppid(), nil)
	case "getpgrp":
		return pid(t.Getpgrp(), nil)
	case "getpgid":
		return pid(t.Getpgid(arg(0)))
	case "getsid":
		return pid(t.Getsid(arg(0)))
	case "setsid":
		return pid(t.Setsid())
	case "setpgid":
		return zero(t.Setpgid(arg(0), arg(1)))
	case "getpriority":
		prio, err := t.Getpriority(arg(0), arg(1))
		if err != nil {
			return errno(err)
		}
		return scenario.Result{Kind: scenario.ResultInt, Int: int64(20 - prio)}
	case "setpriority":
		return zero(t.Setpriority(arg(0), arg(1), arg(2)))
	case "kill":
		return zero(t.Kill(arg(0), arg(1)))
	case "tgkill":
		return zero(t.Tgkill(arg(0), arg(1), arg(2)))
	case "setuid":
		return zero(t.Setuid(arg(0)))
	case "setresuid":
		return zero(t.Setresuid(arg(0), arg(1), arg(2)))
	case "setgid":
		return zero(t.Setgid(arg(0)))
	case "setresgid":
		return zero(t.Setresgid(arg(0), arg(1), arg(2)))
	case "setrlimit":
		return zero(setrlimit(t, c.Args))
	case "signal":
		_, err := t.Sigaction(arg(0), kernel.SigAction{Handler: arg(1)})
		return zero(err)
	case "sigaction":
		_, err := t.Sigaction(arg(0), kernel.SigAction{Handler: arg(1), Flags: uint64(c.Args[2].Int)})
		return zero(err)
	case "prctl":
		return prctl(t, c.Args)
	case "unshare":
		return zero(t.Unshare(uint64(c.Args[0].Int)))
	case "semget":
		return b.semget(t, c.Args)
	case "semop", "semtimedop":
		return b.semop(t, c)
	case "semctl":
		return b.semctl(t, c.Args)
	}
	return errno(unix.ENOSYS)
}

// execve runs t's exec; when t was not its process's leader, the leader's
// name now stands for t's pid.
func (b *Backend) execve(t *kernel.Task, actor scenario.TaskRef) scenario.Result {
	leader := t.ThreadGroup().Leader()
	if err := t.Execve(); err != nil {
		return errno(err)
	}
	if leader != t {
		for ref, u := range b.tasks {
			if u == leader {
				b.heirs[scenario.TaskRef(ref)] = t
			}
		}
		b.execing[actor] = leader
	}
	return scenario.Result{Kind: scenario.ResultInt}
}

// created binds the task a fork or clone made.
func (b *Backend) created(caller *kernel.Task, make func() (*kernel.Task, error)) scenario.Result {
	child, err := make()
	if err != nil {
		return errno(err)
	}
	b.tasks = append(b.tasks, child)
	return scenario.Result{Kind: scenario.ResultNewTask, NewTask: scenario.TaskRef(len(b.tasks) - 1),
		NewPid: child.PIDIn(caller.Namespace())}
}

func setrlimit(t *kernel.Task, args []scenario.Value) error {
	res := int(args[0].Int)
	lim, err := t.Getrlimit(res)
	if err != nil {
		return err
	}
	lim.Cur = uint64(args[1].Int)
	if len(args) > 2 {
		lim.Max = uint64(args[2].Int)
	}
	return t.Setrlimit(res, lim)
}

func prctl(t *kernel.Task, args []scenario.Value) scenario.Result {
	switch option := args[0].Int; {
	case option == unix.PR_SET_CHILD_SUBREAPER && len(args) == 2:
		return zero(t.PrctlSetChildSubreaper(args[1].Int != 0))
	case option == unix.PR_GET_CHILD_SUBREAPER:
		v := int64(0)
		if t.PrctlGetChildSubreaper() {
			v = 1
		}
		return scenario.Result{Kind: scenario.ResultInt, Int: v}
	case option == unix.PR_SET_PDEATHSIG && len(args) == 2:
		return zero(t.PrctlSetPdeathsig(int(args[1].Int)))
	case option == unix.PR_GET_PDEATHSIG:
		return scenario.Result{Kind: scenario.ResultInt, Int: int64(t.PrctlGetPdeathsig())}
	}
	return errno(unix.EINVAL)
}

func errno(err error) scenario.Result {
	var e syscall.Errno
	if !errors.As(err, &e) {
		panic(fmt.Sprintf("modelrun: the model returned a non-errno error: %v", err))
	}
	return scenario.Result{Kind: scenario.ResultErrno, Errno: e}
}

func done(err error) scenario.Result {
	if err != nil {
		return errno(err)
	}
	return scenario.Result{Kind: scenario.ResultDone}
}

func zero(err error) scenario.Result {
	if err != nil {
		return errno(err)
	}
	return scenario.Result{Kind: scenario.ResultInt}
}

func pid(nr int, err error) scenario.Result {
	if err != nil {
		return errno(err)
	}
	return scenario.Result{Kind: scenario.ResultPid, Pid: nr}
}

func waited(r kernel.WaitResult, err error) scenario.Result {
	switch {
	case err != nil:
		return errno(err)
	case r.Pid == 0:
		return scenario.Result{Kind: scenario.ResultInt}
	}
	res := scenario.Result{Kind: scenario.ResultWait, WaitPid: r.Pid}
	switch r.Code {
	case kernel.CLDExited:
		res.How, res.Code = scenario.Exited, r.Status.ExitStatus()
	case kernel.CLDKilled:
		res.How, res.Code = scenario.Killed, int(r.Status.Signal())
	case kernel.CLDDumped:
		res.How, res.Code = scenario.Dumped, int(r.Status.Signal())
	case kernel.CLDStopped:
		res.How, res.Code = scenario.Stopped, int(r.Status>>8)&0xffff
	case kernel.CLDTrapped:
		res.How, res.Code = scenario.Trapped, int(r.Status>>8)&0xffff
	case kernel.CLDContinued:
		res.How = scenario.Continued
	}
	return res
}
