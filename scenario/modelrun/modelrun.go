// Package modelrun runs scenario files on the tasklist model: it is the
// scenario.Backend behind `tasklist run FILE`.
//
// The scenario's init is pid 1 of a fresh pid namespace, the leader of its
// own session and process group, made by the model's root init with
// CLONE_NEWPID and setsid() — the same position the kernel runner gives it
// on the host. Between statements the backend waits for the model to be
// quiescent (Kernel.Quiesce), and a background call is handed back once it
// has completed or is blocked in a wait; both waits sleep until the kernel
// reports an event (Kernel.Await) rather than poll.
//
// Conventions shared with the kernel runner, for what the contract leaves
// open: a call by a task that has exited (a zombie or reaped) prints ESRCH;
// a call during which its task dies prints done, since it never returns;
// a call that stops its own task prints EDEADLK (the kernel runner gives
// up on its reply); a call that is blocked while nothing else can run, in
// the foreground or at its join, prints EDEADLK, and so does every later
// call of that task until the blocked one completes (a call made to a
// stopped task is such a call: it runs once the task is continued).
// A semtimedop with a timeout is never stalled: it waits for the timeout
// (unless its task is stopped, so that the call has not started).
//
// Calls are made by handlers keyed by the language's call table
// (calls.go), and the runner holds the table's Blocks column to the
// model: a call that sleeps although the table says it never blocks ends
// the run with a fatal result naming it.
package modelrun

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"golang.org/x/sys/unix"

	"tasklist/kernel"
	"tasklist/plan"
	"tasklist/scenario"
)

// Backend is a scenario.Backend on a fresh model kernel.
type Backend struct {
	k *kernel.Kernel
	// mu guards tasks, sets, heirs and execing: each call runs on a
	// goroutine of its own, and one that blocked (a vfork, a call made to a
	// stopped task) adds to them when it returns, while the driver's
	// goroutine reads them for the next statements.
	mu    sync.Mutex
	tasks []*kernel.Task
	// sets holds the id of each set a semget returned, by SetRef.
	sets []int
	// files holds each pidfd a call opened, by FileRef.
	files []*kernel.Pidfd
	bg    map[scenario.TaskRef]*background
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
	// workers holds, per task, the channel of the goroutine that makes its
	// calls (worker).
	workers map[scenario.TaskRef]chan func()
	ctx     context.Context
	stop    context.CancelFunc
}

type background struct {
	done chan struct{}
	res  scenario.Result
	// t is the task making the call.
	t *kernel.Task
	// name is the call's.
	name string
	// timed marks a call that ends by itself when its timeout expires.
	timed bool
	// sleptUndeclared marks a call seen asleep although the call table
	// says it never blocks (scenario.CallSpec.Blocks).
	sleptUndeclared bool
	// foreground marks a call the scenario joins at once.
	foreground bool
	// refused marks a call answered without being made: its task was
	// stuck or its name stood for no task.
	refused bool
	// made is the task the call has created, once it has (a vfork
	// child while its parent waits), and madePid its pid in the
	// caller's namespace then, which the call returns even when a thread
	// of the child's has taken it meanwhile (exec); guarded by the
	// backend's mu.
	made    scenario.TaskRef
	madePid int
	hasMade bool
}

// New returns a backend whose init is ready, on a model with tasklist's
// own locking.
func New() (*Backend, error) { return NewWithPlan(nil) }

// NewWithPlan is New on a model that runs under lock plan p (package
// plan); a plan changes how calls wait for each other, never what they
// return.
func NewWithPlan(p *plan.Plan) (*Backend, error) {
	k, err := kernel.New(kernel.Config{Plan: p})
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
		execing: map[scenario.TaskRef]*kernel.Task{}, workers: map[scenario.TaskRef]chan func(){},
		ctx: ctx, stop: stop}, nil
}

// Kernel returns the model the scenario runs on.
func (b *Backend) Kernel() *kernel.Kernel { return b.k }

// PidIn implements scenario.Backend.
func (b *Backend) PidIn(viewer, target scenario.TaskRef) int {
	b.mu.Lock() // for the tables
	defer b.mu.Unlock()
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
// own, and Start returns once it has finished or sleeps in a wait. It
// never fails: the model always knows what a call did.
func (b *Backend) Start(actor scenario.TaskRef, c scenario.Call) error {
	b.start(actor, c, false)
	return nil
}

func (b *Backend) start(actor scenario.TaskRef, c scenario.Call, foreground bool) {
	// The actor is read before the call starts: the call may add tasks
	// (fork) while this goroutine watches it.
	t := b.task(actor)
	spec, _ := scenario.LookupCall(c.Name)
	_, timed := spec.Timeout(c.Args)
	bg := &background{done: make(chan struct{}), name: c.Name, timed: timed, t: t, foreground: foreground}
	b.bg[actor] = bg
	if old := b.stuck[actor]; old != nil {
		select {
		case <-old.done:
			delete(b.stuck, actor) // it completed: the task is free again
			b.k.Quiesce()
		default:
		}
	}
	b.mu.Lock() // for execing
	execing := b.execing[actor] != nil
	b.mu.Unlock()
	switch {
	case execing:
		// Its exec never returned, so its name still stands for its old
		// tid, which the old leader took away: no such task.
		bg.res, bg.refused = errno(unix.ESRCH), true
		close(bg.done)
		return
	case b.stuck[actor] != nil:
		// The task is still stuck in an earlier call, which keeps it
		// sleeping: answer here rather than watch it.
		bg.res, bg.refused = errno(unix.EDEADLK), true
		close(bg.done)
		return
	}
	b.worker(actor) <- func() {
		bg.res = b.call(bg, actor, c, foreground)
		close(bg.done)
	}
	// Handed back once the call has returned, or its task sleeps in it
	// with nothing asynchronous left to wake it. A task that is stopped
	// sleeps until it is continued in any call.
	if b.k.Await(bg.done, b.asleep(t)) && !spec.Blocks && !t.Stopped() {
		bg.sleptUndeclared = true
	}
	b.settle()
}

// asleep is the condition, for Kernel.Await, that t sleeps in a blocking
// call while the model is quiescent: only another task's call can wake it.
func (b *Backend) asleep(t *kernel.Task) func() bool {
	return func() bool { return b.k.Quiescent() && t.Sleeping() }
}

// settle waits until the model is quiescent and every call in flight, in
// the background or stuck, has returned or sleeps: a sleeper that the last
// call woke finishes what it does before the next statement, as on the
// kernel runner, which waits until the tasks it woke are quiet. Its goroutine
// is no asynchronous work of the kernel's, so Quiesce alone would not wait
// for it.
func (b *Backend) settle() {
	for {
		b.k.Quiesce()
		waited := false
		for _, calls := range []map[scenario.TaskRef]*background{b.bg, b.stuck} {
			for _, bg := range calls {
				select {
				case <-bg.done:
					continue
				default:
				}
				if !b.asleep(bg.t)() {
					waited = true
					b.k.Await(bg.done, b.asleep(bg.t))
				}
			}
		}
		if !waited {
			return
		}
	}
}

// Join implements scenario.Backend. A call still blocked once the model is
// quiescent can never complete, since the scenario issues nothing while it
// joins: it is left blocked and the join reports EDEADLK. A timed call is
// waited for instead, unless its task is stopped: then it has not started,
// and neither has its timeout.
func (b *Backend) Join(actor scenario.TaskRef) scenario.Result {
	bg := b.bg[actor]
	if bg.sleptUndeclared {
		delete(b.bg, actor)
		b.stuck[actor] = bg
		return scenario.Result{Kind: scenario.ResultFatal,
			Err: fmt.Errorf("%s slept in the model, but the call table says it never blocks", bg.name)}
	}
	stalled := func() bool { return b.asleep(bg.t)() && (!bg.timed || bg.t.Stopped()) }
	if b.k.Await(bg.done, stalled) {
		delete(b.bg, actor)
		b.stuck[actor] = bg
		b.settle()
		return errno(unix.EDEADLK)
	}
	<-bg.done
	delete(b.bg, actor)
	if !bg.refused && bg.res.Kind != scenario.ResultDone {
		// The exec, if this was one, has returned: the name stands for
		// the pid the thread took, as the kernel runner learns from the
		// reply. A refused call, or one its task died in, tells the
		// kernel runner nothing.
		b.mu.Lock() // for execing
		delete(b.execing, actor)
		b.mu.Unlock()
	}
	b.settle()
	return bg.res
}

// Close implements scenario.Backend: background calls still blocked are
// interrupted, and Close returns once the tasks it killed for them have
// finished exiting, so that the model it leaves is quiescent.
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
	for _, w := range b.workers {
		close(w)
	}
	b.k.Quiesce()
	return nil
}

// worker returns the channel of the goroutine that makes actor's calls, one
// at a time, starting it on first use. A task makes one call at a time, so
// its worker is free whenever a call is started (a task stuck in a call is
// refused before); one goroutine per task, not per call, keeps a
// million-line scenario from paying for a fresh goroutine and its stack
// growth on every statement.
func (b *Backend) worker(actor scenario.TaskRef) chan<- func() {
	w := b.workers[actor]
	if w == nil {
		w = make(chan func())
		b.workers[actor] = w
		go func() {
			for call := range w {
				call()
			}
		}()
	}
	return w
}

// call makes one call for actor. A call on a stopped task starts, and a
// call that leaves its task stopped returns, only once the task runs
// again; in the foreground the kernel runner gives up on its reply
// (EDEADLK).
func (b *Backend) call(bg *background, actor scenario.TaskRef, c scenario.Call, foreground bool) scenario.Result {
	t := b.task(actor)
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
	res := b.dispatch(bg, t, actor, c)
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

// execve runs t's exec; when t was not its process's leader, the leader's
// name now stands for t's pid.
func (b *Backend) execve(t *kernel.Task, actor scenario.TaskRef) scenario.Result {
	leader := t.ThreadGroup().Leader()
	if err := t.Execve(); err != nil {
		return errno(err)
	}
	if leader != t {
		b.mu.Lock() // for the tables
		defer b.mu.Unlock()
		for ref, u := range b.tasks {
			if u == leader {
				b.heirs[scenario.TaskRef(ref)] = t
			}
		}
		// A name that stood for the leader, an heir of an earlier exec,
		// goes on to this one.
		for ref, u := range b.heirs {
			if u == leader {
				b.heirs[ref] = t
			}
		}
		b.execing[actor] = leader
	}
	return scenario.Result{Kind: scenario.ResultInt}
}

// created binds the task a fork or clone made: make calls its made
// argument with the child as soon as the child exists, which may be long
// before the call returns (a vfork), so that the child can be named then
// (Made).
func (b *Backend) created(bg *background, caller *kernel.Task, make func(made func(*kernel.Task)) (*kernel.Task, error)) scenario.Result {
	_, err := make(func(child *kernel.Task) { b.made(bg, caller, child) })
	if err != nil {
		return errno(err)
	}
	b.mu.Lock() // for bg.made
	defer b.mu.Unlock()
	return scenario.Result{Kind: scenario.ResultNewTask, NewTask: bg.made, NewPid: bg.madePid}
}

// made records child, which bg's call by caller has just created.
func (b *Backend) made(bg *background, caller, child *kernel.Task) {
	b.mu.Lock() // for tasks and bg.made
	defer b.mu.Unlock()
	b.tasks = append(b.tasks, child)
	bg.made, bg.madePid, bg.hasMade = scenario.TaskRef(len(b.tasks)-1), child.PIDIn(caller.Namespace()), true
}

// Made implements scenario.Backend.
func (b *Backend) Made(actor scenario.TaskRef) (scenario.TaskRef, bool) {
	bg := b.bg[actor]
	if bg == nil {
		return 0, false
	}
	b.mu.Lock() // for bg.made
	defer b.mu.Unlock()
	return bg.made, bg.hasMade
}

// task returns the task ref names.
func (b *Backend) task(ref scenario.TaskRef) *kernel.Task {
	b.mu.Lock() // for tasks
	defer b.mu.Unlock()
	return b.tasks[ref]
}
