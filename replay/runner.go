package replay

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/kernel"
	"tasklist/scenario"
)

// Runner replays a Program, pass after pass, on tasks of its own: the descendants of one
// worker process of a model kernel, which other runners' workers may share under any lock
// plan. Each Runner is used by one goroutine at a time.
//
// A pass makes the trace's init a child of the worker, the first process of a pid namespace
// of its own and the leader of a session, as the replay's model makes it, and runs each
// slot's ops on a goroutine of the slot's own (init's on the caller's), each op once the ops
// it depends on are done: an opStart whose call slept on the replay's model is done, for the
// ops after it, once its call sleeps, as an unfinished line lets other lines come before its
// resumed one. Every result is checked against the replay's model's. A call that changed
// nothing (a read, a WNOHANG wait that found nothing, a kill that failed) and found the model
// behind what the replay saw is made again until it catches up, for up to retryFor: the model
// completes a killed task's exit, and a stop, on a goroutine of its own after the kill, where
// the replay waited for them. Last, init exits, which ends every task left in its namespace,
// and the worker reaps it.
type Runner struct {
	p      *Program
	worker *kernel.Task
	slots  []slotState
	// sets holds, by the replay's set ref, the id of each semaphore set the pass made, -1
	// before the pass makes it; files, by the replay's file ref, each pidfd it opened.
	sets  []int
	files []*kernel.Pidfd
	// The pass's: abort closes when it stops early, failure says why; progress counts the
	// ops done, which init watches (stall, seen) while it waits.
	abort    chan struct{}
	aborted  atomic.Bool
	failure  atomic.Pointer[error]
	progress atomic.Int64
	tick     *time.Ticker
	seen     int64
	stall    int
}

// slotState is a slot's state in the pass.
type slotState struct {
	task atomic.Pointer[kernel.Task]
	// done counts the slot's ops done. calling is 1 + the pos of an opStart that sleeps
	// while its call is being made, and returned closes when that call returns.
	done     atomic.Int32
	calling  atomic.Int32
	returned atomic.Pointer[chan struct{}]
	// wake is signalled when an op the slot waits for may be done.
	wake chan struct{}
	// started is what the slot's opStart returned, for its opJoin.
	started outcome
}

const (
	// retryFor bounds how long a call that changed nothing is made again.
	retryFor = time.Second
	// stallTicks is how many seconds a pass may go without an op done before it is
	// given up as stuck.
	stallTicks = 30
)

// NewRunner returns a Runner whose passes run under worker, which must be able to create a
// pid namespace (CAP_SYS_ADMIN) and have no other children.
func (p *Program) NewRunner(worker *kernel.Task) *Runner {
	r := &Runner{p: p, worker: worker, slots: make([]slotState, len(p.slots)), sets: make([]int, p.sets),
		files: make([]*kernel.Pidfd, p.files)}
	for i := range r.slots {
		r.slots[i].wake = make(chan struct{}, 1)
	}
	return r
}

// Pass replays the trace once. It fails, as FILE:LINE: what, when a result differs from the
// replay's or no op is done for stallTicks seconds; the pass's tasks are gone either way.
func (r *Runner) Pass() error {
	r.reset()
	init, err := r.worker.Clone(kernel.CloneArgs{Flags: unix.CLONE_NEWPID, ExitSignal: int(unix.SIGCHLD)})
	if err != nil {
		return fmt.Errorf("%s: the trace's init: %w", r.p.file, err)
	}
	r.slots[0].task.Store(init)
	r.tick = time.NewTicker(time.Second)
	defer r.tick.Stop()
	var wg sync.WaitGroup
	if _, err := init.Setsid(); err != nil {
		r.fail(fmt.Errorf("%s: the trace's init: setsid: %w", r.p.file, err))
	} else {
		for s := 1; s < len(r.slots); s++ {
			wg.Go(func() { r.runSlot(int32(s)) })
		}
		r.runSlot(0)
	}
	// A namespace's init exits once every task left in it is killed and reaped.
	if err := init.Exit(0); err != nil {
		r.fail(fmt.Errorf("%s: the trace's init: exit: %w", r.p.file, err))
	} else if _, err := r.worker.Wait4(nil, init.PIDIn(r.worker.Namespace()), 0); err != nil {
		r.fail(fmt.Errorf("%s: reaping the trace's init: %w", r.p.file, err))
	}
	r.stop()
	wg.Wait()
	if err := r.failure.Load(); err != nil {
		return *err
	}
	return nil
}

func (r *Runner) reset() {
	for i := range r.slots {
		st := &r.slots[i]
		st.task.Store(nil)
		st.done.Store(0)
		st.calling.Store(0)
		st.returned.Store(nil)
		st.started = outcome{}
		select {
		case <-st.wake:
		default:
		}
	}
	for i := range r.sets {
		r.sets[i] = -1
	}
	clear(r.files)
	r.abort = make(chan struct{})
	r.aborted.Store(false)
	r.failure.Store(nil)
	r.progress.Store(0)
	r.seen, r.stall = 0, 0
}

// fail stops the pass with err, the first reason given.
func (r *Runner) fail(err error) {
	if r.failure.CompareAndSwap(nil, &err) {
		r.stop()
	}
}

// stop releases every slot waiting for an op.
func (r *Runner) stop() {
	if r.aborted.CompareAndSwap(false, true) {
		close(r.abort)
	}
}

// runSlot runs slot s's ops in order.
func (r *Runner) runSlot(s int32) {
	st := &r.slots[s]
	for pos, i := range r.p.slots[s].ops {
		op := &r.p.ops[i]
		for _, d := range op.deps {
			if !r.waitFor(s, d) {
				return
			}
		}
		t := r.taskOf(s)
		if t == nil {
			r.fail(r.errorf(op, "the task making it was never created"))
			return
		}
		x := caller{run: r, t: t}
		switch op.kind {
		case opCall:
			got := r.call(x, op.call)
			if !r.matches(&op.want, got, t) && !(op.call.unchanged(got) && r.settle(func() bool {
				got = r.call(x, op.call)
				return r.matches(&op.want, got, t)
			})) {
				r.fail(r.diverged(op, got))
				return
			}
		case opStart:
			var ret chan struct{}
			if op.sleeps {
				ret = make(chan struct{})
				st.returned.Store(&ret)
				st.calling.Store(int32(pos) + 1)
				r.wake(op)
			}
			st.started = r.call(x, op.call)
			if op.sleeps {
				st.calling.Store(0)
				close(ret)
			}
		case opJoin:
			if !r.matches(&op.want, st.started, t) {
				r.fail(r.diverged(op, st.started))
				return
			}
		case opQuery:
			got := op.query.read(t)
			if got != op.want.read && !r.settle(func() bool {
				got = op.query.read(t)
				return got == op.want.read
			}) {
				r.fail(r.errorf(op, "the read differs from the replay's"))
				return
			}
		}
		st.done.Store(int32(pos) + 1)
		r.progress.Add(1)
		r.wake(op)
	}
}

// wake tells the slots that wait for op that it may be done.
func (r *Runner) wake(op *progOp) {
	for _, s := range op.wakes {
		select {
		case r.slots[s].wake <- struct{}{}:
		default:
		}
	}
}

// waitFor waits until op d is done for the ops after it; false when the pass stops first.
func (r *Runner) waitFor(self, d int32) bool {
	dop := &r.p.ops[d]
	st := &r.slots[dop.slot]
	for {
		if st.done.Load() > dop.pos {
			return true
		}
		if dop.sleeps && st.calling.Load() == dop.pos+1 {
			// The call is being made: wait until it sleeps or returns.
			if ret, t := st.returned.Load(), st.task.Load(); ret != nil && t != nil {
				t.Kernel().Await(*ret, t.Sleeping)
				return true
			}
		}
		if !r.park(self, dop) {
			return false
		}
	}
}

// park waits for self's wake; false when the pass stops. Init, which waits last for every
// other slot, also watches the pass for a stall.
func (r *Runner) park(self int32, waited *progOp) bool {
	if self != 0 {
		select {
		case <-r.slots[self].wake:
			return true
		case <-r.abort:
			return false
		}
	}
	select {
	case <-r.slots[0].wake:
		return true
	case <-r.abort:
		return false
	case <-r.tick.C:
		if n := r.progress.Load(); n != r.seen {
			r.seen, r.stall = n, 0
			return true
		}
		if r.stall++; r.stall < stallTicks {
			return true
		}
		r.fail(r.errorf(waited, "the pass is stuck: no call done for %ds", stallTicks))
		return false
	}
}

// settle makes again, until ok says it agrees or retryFor has passed, a call that changed
// nothing and found the model behind the replay's.
func (r *Runner) settle(ok func() bool) bool {
	deadline := time.Now().Add(retryFor)
	for try := 0; ; try++ {
		if try < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(50 * time.Microsecond)
		}
		if ok() {
			return true
		}
		if r.aborted.Load() || time.Now().After(deadline) {
			return false
		}
	}
}

// call makes pc for x as the scenario runner on the model does: a task that has exited fails
// with ESRCH, a stopped one makes the call once it runs again, and a call its task dies in
// returns done.
func (r *Runner) call(x caller, pc *preparedCall) outcome {
	t := x.t
	switch {
	case t.Exited():
		return errOutcome(unix.ESRCH)
	case t.Stopped():
		t.WaitRunnable(nil)
		if t.Exited() {
			return doneOutcome(nil)
		}
	}
	out := pc.do(x, pc)
	if t.Stopped() {
		t.WaitRunnable(nil)
	}
	if t.Exited() {
		return doneOutcome(nil)
	}
	return out
}

// taskOf returns slot s's task, nil before the call that creates it has.
func (r *Runner) taskOf(s int32) *kernel.Task { return r.slots[s].task.Load() }

// bind makes t slot s's task; it fails the pass if the slot has another.
func (r *Runner) bind(s int32, t *kernel.Task) {
	if !r.slots[s].task.CompareAndSwap(nil, t) && r.slots[s].task.Load() != t {
		r.fail(fmt.Errorf("%s: the replay's task %d is bound to two tasks", r.p.file, s))
	}
}

// matches reports whether got, a result of viewer's call, is what the replay's model
// returned: the same tasks, by slot, and the same sets.
func (r *Runner) matches(want *expected, got outcome, viewer *kernel.Task) bool {
	if got.kind != want.kind {
		return false
	}
	switch want.kind {
	case scenario.ResultErrno:
		return got.errno == want.errno
	case scenario.ResultInt, scenario.ResultSigset, scenario.ResultSignal:
		return got.n == want.n
	case scenario.ResultWait:
		if got.how != want.how || got.code != want.code {
			return false
		}
		return r.names(want, got.n, viewer)
	case scenario.ResultPid:
		return r.names(want, got.n, viewer)
	case scenario.ResultNewTask:
		return got.task != nil && r.taskOf(want.who) == got.task && (!want.hasFile || r.sameFile(want.file, got.file))
	case scenario.ResultNewFile:
		return r.sameFile(want.file, got.file)
	case scenario.ResultLimit:
		return got.limit == want.limit
	case scenario.ResultNewSet:
		return r.sameSet(want.set, int(got.n))
	case scenario.ResultList:
		return slices.Equal(got.list, want.list)
	}
	return true
}

// names reports whether pid nr, as viewer sees it, is the task want names.
func (r *Runner) names(want *expected, nr int64, viewer *kernel.Task) bool {
	switch want.who {
	case whoNumber:
		return nr == want.n
	case whoUnknown:
		return nr > 0
	}
	t := r.taskOf(want.who)
	return t != nil && int64(t.PIDIn(viewer.Namespace())) == nr
}

// sameSet reports whether id is the pass's set for ref, binding it if the pass had none.
func (r *Runner) sameSet(ref scenario.SetRef, id int) bool {
	if r.sets[ref] < 0 {
		if slices.Contains(r.sets, id) {
			return false // the replay made a new set, the pass found one it had
		}
		r.sets[ref] = id
	}
	return r.sets[ref] == id
}

// sameFile reports whether f is the pass's pidfd for ref, binding it if the pass had none.
func (r *Runner) sameFile(ref scenario.FileRef, f *kernel.Pidfd) bool {
	if f == nil {
		return false
	}
	if r.files[ref] == nil {
		r.files[ref] = f
	}
	return r.files[ref] == f
}

func (r *Runner) errorf(op *progOp, format string, args ...any) error {
	what := "a read"
	if op.call != nil {
		what = op.call.name
	}
	return fmt.Errorf("%s:%d: %s: %s", r.p.file, op.line, what, fmt.Sprintf(format, args...))
}

func (r *Runner) diverged(op *progOp, got outcome) error {
	return r.errorf(op, "%s in this pass, %s on the replay's model", got, op.want)
}

func (o outcome) String() string {
	who := fmt.Sprintf("pid %d", o.n)
	if o.task != nil {
		who = fmt.Sprintf("new task %d", o.task.Gettid())
	}
	return o.text(who)
}

// text prints o, with who for the task a pid, a wait or a clone names.
func (o outcome) text(who string) string {
	switch o.kind {
	case scenario.ResultErrno:
		return errnoName(o.errno)
	case scenario.ResultDone:
		return "done"
	case scenario.ResultPid, scenario.ResultNewTask:
		return who
	case scenario.ResultWait:
		return who + " " + waitText(scenario.Result{How: o.how, Code: o.code})
	case scenario.ResultNewSet:
		return fmt.Sprintf("set %d", o.n)
	case scenario.ResultNewFile:
		return "a pidfd"
	case scenario.ResultLimit:
		return limitText(o.limit.Cur) + " " + limitText(o.limit.Max)
	case scenario.ResultList:
		return fmt.Sprint(o.list)
	case scenario.ResultSigset:
		return sigsetText(uint64(o.n))
	}
	return fmt.Sprint(o.n)
}

func (e expected) String() string {
	who := fmt.Sprintf("the replay's task %d", e.who)
	switch e.who {
	case whoNumber:
		who = fmt.Sprintf("pid %d", e.n)
	case whoUnknown:
		who = "a task of no slot"
	}
	n := e.n
	if e.kind == scenario.ResultNewSet {
		n = int64(e.set)
	}
	return outcome{kind: e.kind, errno: e.errno, n: n, limit: e.limit, how: e.how, code: e.code, list: e.list}.text(who)
}
