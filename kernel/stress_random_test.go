package kernel

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/plan"
)

type stressOp int

const (
	opFork stressOp = iota
	opThread
	opCloneParent
	opCloneOddSignal
	opNewPID
	opUnshare
	opExit
	opExitGroup
	opWaitNoHang
	opWaitBlock
	opWaitid
	opSubreaper
	opPdeathsig
	opSetuid
	opSigchld
	opSetsid
	opHandOff
	numStressOps
)

var stressOpNames = [numStressOps]string{"fork", "thread", "clone-parent", "clone-odd-signal", "clone-newpid",
	"unshare-newpid", "exit", "exit_group", "wait-nohang", "wait-block", "waitid", "subreaper", "pdeathsig",
	"setuid", "sigchld", "setsid", "hand-off"}

var stressOpWeights = [numStressOps]int{
	opFork: 14, opThread: 10, opCloneParent: 5, opCloneOddSignal: 3, opNewPID: 1, opUnshare: 1,
	opExit: 9, opExitGroup: 5, opWaitNoHang: 10, opWaitBlock: 6, opWaitid: 5, opSubreaper: 3,
	opPdeathsig: 3, opSetuid: 2, opSigchld: 3, opSetsid: 1, opHandOff: 4,
}

// poolLimit is how many tasks one worker drives before it prefers exits:
// it bounds the table (and so the cost of each checkpoint) however long
// the run is.
const poolLimit = 32

// stressWorld is what the goroutines of TestStressRandom share.
type stressWorld struct {
	t *testing.T
	k *Kernel

	// inboxes receive tasks handed over from other workers, so that the
	// threads of a process and the parent and child of a relationship are
	// driven by different goroutines.
	inboxes []chan *Task
	// unshared marks tasks whose children go to a pid namespace made by
	// unshare: they may not clone threads (EINVAL, A4).
	unshared sync.Map
	// nsBudget is how many more pid namespaces the run may create.
	nsBudget atomic.Int64

	// claimed records every zombie a wait reaped since the last
	// checkpoint, to catch a second claim of the same one.
	claimMu sync.Mutex
	claimed map[*Task]string

	errs   atomic.Int64
	closed atomic.Bool
}

// errorf reports a failure found on a worker goroutine; a flood of them is
// cut short.
func (s *stressWorld) errorf(format string, args ...any) {
	if s.closed.Load() {
		return
	}
	if n := s.errs.Add(1); n <= 20 {
		s.t.Errorf(format, args...)
	} else if n == 21 {
		s.t.Errorf("more errors left out")
	}
}

// claim records that who reaped the zombie r reports.
func (s *stressWorld) claim(who string, r WaitResult) {
	if r.Task == nil {
		s.errorf("%s: wait reported pid %d without a task", who, r.Pid)
		return
	}
	if !r.Task.Exited() {
		s.errorf("%s: wait reaped pid %d, which has not exited", who, r.Pid)
	}
	if !r.Status.Exited() && !r.Status.Signaled() {
		s.errorf("%s: wait reaped pid %d with status %#x, neither exited nor killed", who, r.Pid, uint32(r.Status))
	}
	s.claimMu.Lock()
	prev, dup := s.claimed[r.Task]
	if !dup {
		s.claimed[r.Task] = who
	}
	s.claimMu.Unlock()
	if dup {
		s.errorf("zombie pid %d claimed twice: by %s and by %s", r.Pid, prev, who)
	}
}

// stressWorker drives the tasks in its pool; a task is driven by one
// goroutine at a time, as a thread makes one system call at a time.
type stressWorker struct {
	s   *stressWorld
	id  int
	rng *rand.Rand
	// anchor is a process of its own under init that never exits before
	// the clean-up: it refills the pool and, when it is a subreaper,
	// adopts orphans.
	anchor *Task
	tasks  []*Task

	calls, failed [numStressOps]int
}

func (w *stressWorker) who(t *Task) string {
	return fmt.Sprintf("worker %d, tid %d", w.id, t.PIDIn(w.s.k.RootNamespace()))
}

// check accepts a nil error or one of allowed and reports anything else.
func (w *stressWorker) check(op stressOp, t *Task, err error, allowed ...error) bool {
	w.calls[op]++
	if err == nil {
		return true
	}
	w.failed[op]++
	if !isOneOf(err, allowed...) {
		w.s.errorf("%s: %s: unexpected error %v", w.who(t), stressOpNames[op], err)
	}
	return false
}

func (w *stressWorker) pick() stressOp {
	total := 0
	for _, wt := range stressOpWeights {
		total += wt
	}
	n := w.rng.IntN(total)
	for op, wt := range stressOpWeights {
		if n < wt {
			return stressOp(op)
		}
		n -= wt
	}
	panic("unreachable")
}

func (w *stressWorker) drop(i int) {
	last := len(w.tasks) - 1
	w.tasks[i] = w.tasks[last]
	w.tasks = w.tasks[:last]
}

// step makes one call.
func (w *stressWorker) step() {
	for more := true; more; {
		select {
		case t := <-w.s.inboxes[w.id]:
			w.tasks = append(w.tasks, t)
		default:
			more = false
		}
	}
	if len(w.tasks) == 0 || w.rng.IntN(16) == 0 {
		w.anchorStep()
		return
	}
	i := w.rng.IntN(len(w.tasks))
	t := w.tasks[i]
	if t.Exited() {
		w.drop(i) // exited by its own call or killed by a signal
		return
	}
	// Lockless reads race with every write below.
	_ = t.Getppid() + t.Getpid() + t.Getpgrp()

	op := w.pick()
	if len(w.tasks) > poolLimit && w.rng.IntN(2) == 0 {
		op = opExit + stressOp(w.rng.IntN(2))
	}
	// The caller may be killed at any moment (pdeath signal, a namespace
	// being zapped, an exit signal other than SIGCHLD): ESRCH and EINTR
	// are always possible.
	gone := []error{unix.ESRCH, unix.EINTR}
	switch op {
	case opFork:
		args := CloneArgs{ExitSignal: int(unix.SIGCHLD)}
		if w.rng.IntN(8) == 0 {
			args.Flags = unix.CLONE_SIGHAND | unix.CLONE_VM
		}
		w.cloned(op, t, args, append(gone, unix.ENOMEM)...)
	case opThread:
		allowed := append(gone, unix.ENOMEM)
		if _, ok := w.s.unshared.Load(t); ok {
			allowed = append(allowed, unix.EINVAL)
		}
		w.cloned(op, t, CloneArgs{Flags: threadFlags}, allowed...)
	case opCloneParent:
		allowed := append(gone, unix.ENOMEM)
		if t.Getpid() == 1 {
			allowed = append(allowed, unix.EINVAL) // an init may not have siblings (A3)
		}
		w.cloned(op, t, CloneArgs{Flags: unix.CLONE_PARENT, ExitSignal: int(unix.SIGCHLD)}, allowed...)
	case opCloneOddSignal:
		// Children that must be waited for with __WCLONE; SIGUSR1
		// kills the parent when the child exits.
		sig := 0
		if w.rng.IntN(4) == 0 {
			sig = int(unix.SIGUSR1)
		}
		w.cloned(op, t, CloneArgs{ExitSignal: sig}, append(gone, unix.ENOMEM)...)
	case opNewPID:
		if t.Namespace().Level() >= 2 || w.s.nsBudget.Add(-1) < 0 {
			return
		}
		w.cloned(op, t, CloneArgs{Flags: unix.CLONE_NEWPID, ExitSignal: int(unix.SIGCHLD)},
			append(gone, unix.ENOMEM, unix.EPERM, unix.EINVAL)...)
	case opUnshare:
		if t.Namespace().Level() >= 2 || w.s.nsBudget.Add(-1) < 0 {
			return
		}
		if w.check(op, t, t.Unshare(unix.CLONE_NEWPID), append(gone, unix.EPERM, unix.EINVAL)...) {
			w.s.unshared.Store(t, true)
		}
	case opExit:
		w.check(op, t, t.Exit(w.rng.IntN(256)), gone...)
		w.drop(i)
	case opExitGroup:
		w.check(op, t, t.ExitGroup(w.rng.IntN(256)), gone...)
		w.drop(i)
	case opWaitNoHang:
		pid, opts := -1, unix.WNOHANG
		switch w.rng.IntN(4) {
		case 1:
			opts |= unix.WALL
		case 2:
			pid, opts = 0, opts|unix.WCLONE
		case 3:
			pid = w.tasks[w.rng.IntN(len(w.tasks))].Getpid()
		}
		r, err := t.Wait4(context.Background(), pid, opts)
		if w.check(op, t, err, append(gone, unix.ECHILD)...) && r.Pid != 0 {
			w.s.claim(w.who(t), r)
		}
	case opWaitBlock:
		ctx, cancel := context.WithTimeout(context.Background(),
			time.Duration(200+w.rng.IntN(1800))*time.Microsecond)
		var r WaitResult
		var err error
		switch w.rng.IntN(3) {
		case 0:
			r, err = t.Wait4(ctx, -1, 0)
		case 1:
			r, err = t.Wait4(ctx, -1, unix.WALL)
		default:
			r, err = t.Waitid(ctx, unix.P_ALL, 0, unix.WEXITED|unix.WALL)
		}
		cancel()
		if w.check(op, t, err, append(gone, unix.ECHILD)...) {
			w.s.claim(w.who(t), r)
		}
	case opWaitid:
		opts := unix.WEXITED | unix.WNOHANG
		if w.rng.IntN(2) == 0 {
			opts |= unix.WALL
		}
		nowait := w.rng.IntN(3) == 0
		if nowait {
			opts |= unix.WNOWAIT
		}
		idtype := unix.P_ALL
		if w.rng.IntN(4) == 0 {
			idtype = unix.P_PGID
		}
		r, err := t.Waitid(context.Background(), idtype, 0, opts)
		if w.check(op, t, err, append(gone, unix.ECHILD)...) && r.Pid != 0 && !nowait {
			w.s.claim(w.who(t), r)
		}
	case opSubreaper:
		w.check(op, t, t.PrctlSetChildSubreaper(w.rng.IntN(3) != 0), gone...)
	case opPdeathsig:
		sigs := []unix.Signal{0, unix.SIGKILL, unix.SIGTERM, unix.SIGUSR2, unix.SIGCHLD}
		w.check(op, t, t.PrctlSetPdeathsig(int(sigs[w.rng.IntN(len(sigs))])), gone...)
	case opSetuid:
		w.check(op, t, t.Setuid(1000+w.rng.IntN(3)), append(gone, unix.EPERM)...)
	case opSigchld:
		acts := []SigAction{{Handler: SigIgn}, {Handler: SigDfl},
			{Handler: SigDfl, Flags: SaNoCldWait}, {Handler: SigHandler}}
		_, err := t.Sigaction(int(unix.SIGCHLD), acts[w.rng.IntN(len(acts))])
		w.check(op, t, err, gone...)
	case opSetsid:
		_, err := t.Setsid()
		w.check(op, t, err, append(gone, unix.EPERM)...)
	case opHandOff:
		w.calls[op]++
		select {
		case w.s.inboxes[w.rng.IntN(len(w.s.inboxes))] <- t:
			w.drop(i)
		default:
		}
	}
}

// cloned clones from t and adds the new task to the pool.
func (w *stressWorker) cloned(op stressOp, t *Task, args CloneArgs, allowed ...error) {
	c, err := t.Clone(args)
	if w.check(op, t, err, allowed...) {
		w.tasks = append(w.tasks, c)
	}
}

// anchorStep refills an empty pool from the anchor, or reaps what the
// anchor adopted.
func (w *stressWorker) anchorStep() {
	a := w.anchor
	if len(w.tasks) < 4 {
		c, err := a.Fork()
		if err != nil {
			w.s.errorf("worker %d: anchor fork: %v", w.id, err)
			return
		}
		w.tasks = append(w.tasks, c)
		return
	}
	// The orphans of a whole subtree pile up on a subreaper anchor: reap
	// every one that is ready, then block for a moment.
	for {
		r, err := a.Wait4(context.Background(), -1, unix.WALL|unix.WNOHANG)
		if err == nil && r.Pid == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(w.rng.IntN(500))*time.Microsecond)
			r, err = a.Wait4(ctx, -1, unix.WALL)
			cancel()
		}
		switch {
		case err == nil:
			w.s.claim(fmt.Sprintf("worker %d's anchor", w.id), r)
			continue
		case !isOneOf(err, unix.ECHILD, unix.EINTR):
			w.s.errorf("worker %d: anchor wait4: %v", w.id, err)
		}
		return
	}
}

// reapAsInit is init's loop: it reaps the orphans that reach it.
func (s *stressWorld) reapAsInit(stop *atomic.Bool) {
	init := s.k.Init()
	for !stop.Load() {
		// Orphans reach init faster than one goroutine among many can
		// reap them one sleep at a time: block only when none is ready.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
		r, err := init.Wait4(ctx, -1, unix.WALL|unix.WNOHANG)
		if err == nil && r.Pid == 0 {
			r, err = init.Wait4(ctx, -1, unix.WALL)
		}
		cancel()
		switch {
		case err == nil:
			s.claim("init", r)
		case !isOneOf(err, unix.ECHILD, unix.EINTR):
			s.errorf("init's wait4: %v", err)
		}
	}
}

// TestStressRandom runs random clone, exit, wait, prctl, setuid and
// sigaction calls on many goroutines for -stress.duration. Every quarter
// second it stops them all, lets the kernel quiesce and checks the
// invariants; at the end every task exits and is reaped and no pid may be
// left but init's. It runs under tasklist's own locking, and for a
// quarter of the duration under every preset plan, whose table lock
// must neither deadlock (lockstat reports a site nested in another) nor
// change an outcome.
func TestStressRandom(t *testing.T) {
	stressRandom(t, nil, *stressDuration)
	for _, name := range plan.PresetNames()[1:] {
		t.Run(name, func(t *testing.T) { stressRandom(t, plan.MustParse(name, false), *stressDuration/4) })
	}
}

func stressRandom(t *testing.T, p *plan.Plan, duration time.Duration) {
	// A small pid_max makes the cursor wrap within a short run, so pids
	// are reused while waits by pid and lockless lookups are in flight.
	h := newStress(t, 0, Config{PIDMax: 4096, Plan: p})
	nWorkers := max(1, *stressWorkers)
	world := &stressWorld{t: t, k: h.k, inboxes: make([]chan *Task, nWorkers), claimed: map[*Task]string{}}
	world.nsBudget.Store(int64(64 + 64*duration.Seconds()))
	defer world.closed.Store(true)

	workers := make([]*stressWorker, nWorkers)
	for i := range workers {
		world.inboxes[i] = make(chan *Task, 64)
		anchor := h.fork(h.init)
		if i%2 == 0 {
			mustOK(t, anchor.PrctlSetChildSubreaper(true))
		}
		workers[i] = &stressWorker{s: world, id: i, rng: rand.New(rand.NewPCG(h.seed, uint64(i))), anchor: anchor}
	}

	const epoch = 250 * time.Millisecond
	end := time.Now().Add(duration)
	checkpoints := 0
	for {
		var stop atomic.Bool
		var wg sync.WaitGroup
		for _, w := range workers {
			wg.Go(func() {
				for !stop.Load() {
					w.step()
				}
			})
		}
		wg.Go(func() { world.reapAsInit(&stop) })
		time.Sleep(min(epoch, max(time.Until(end), time.Millisecond)))
		stop.Store(true)
		waitOrDump(t, "stress workers", wg.Wait)
		if t.Failed() {
			break
		}
		h.check()
		checkpoints++
		world.claimMu.Lock()
		clear(world.claimed)
		world.claimMu.Unlock()
		if time.Now().After(end) {
			break
		}
	}

	var calls, failed [numStressOps]int
	live := 0
	for _, w := range workers {
		for op := range calls {
			calls[op] += w.calls[op]
			failed[op] += w.failed[op]
		}
		live += len(w.tasks)
	}
	var summary strings.Builder
	total := 0
	for op, n := range calls {
		total += n
		fmt.Fprintf(&summary, " %s=%d/%d", stressOpNames[op], n-failed[op], n)
	}
	t.Logf("%d calls (succeeded/made):%s", total, summary.String())
	t.Logf("%d checkpoints; %d tasks in pools and %d pids allocated before clean-up",
		checkpoints, live, h.k.RootNamespace().Allocated())
	h.end()
}
