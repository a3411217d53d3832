package kernel_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/kernel"
)

var (
	stressDuration = flag.Duration("stress.duration", 2*time.Second,
		"how long TestStressRandom issues calls before cleaning up")
	stressWorkers = flag.Int("stress.workers", 16, "goroutines TestStressRandom runs")
	stressSeed    = flag.Uint64("stress.seed", 0, "seed of the random choices (0: from the clock)")
	stressIters   = flag.Int("stress.iters", 0, "iterations of each hard-case test (0: its default)")
)

// threadFlags makes a pthread.
const threadFlags = unix.CLONE_THREAD | unix.CLONE_SIGHAND | unix.CLONE_VM

// hangLimit bounds every wait for goroutines of a test. The calls involved
// take micro- to milliseconds, so running past it means a deadlock, and
// the goroutine dump is the report.
const hangLimit = 60 * time.Second

// seedFor returns the seed for a test's random choices and logs it, so a
// failure can be rerun with -stress.seed (goroutine interleavings still
// vary between runs).
func seedFor(t testing.TB) uint64 {
	seed := *stressSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -stress.seed=%d)", seed, seed)
	return seed
}

// iterations returns how many rounds a hard-case test runs.
func iterations(def int) int {
	switch {
	case *stressIters > 0:
		return *stressIters
	case testing.Short():
		return max(1, def/4)
	}
	return def
}

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

// concurrently runs each f on a goroutine of its own, releases them
// together after a random number of yields each (so that every order of
// arrival occurs, even with GOMAXPROCS=1), and waits for all of them.
func concurrently(t testing.TB, rng *rand.Rand, fs ...func()) {
	t.Helper()
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, f := range fs {
		yields := rng.IntN(4)
		wg.Go(func() {
			<-start
			for range yields {
				runtime.Gosched()
			}
			f()
		})
	}
	close(start)
	waitOrDump(t, "concurrent calls", wg.Wait)
}

// fork and clone create a task that the test needs.
func fork(t testing.TB, parent *kernel.Task) *kernel.Task {
	t.Helper()
	return clone(t, parent, kernel.CloneArgs{ExitSignal: int(unix.SIGCHLD)})
}

func clone(t testing.TB, parent *kernel.Task, args kernel.CloneArgs) *kernel.Task {
	t.Helper()
	c, err := parent.Clone(args)
	if err != nil {
		t.Fatalf("clone(%#x) by pid %d: %v", args.Flags, parent.Getpid(), err)
	}
	return c
}

func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
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

func newKernel(t testing.TB) (*kernel.Kernel, *kernel.Task) {
	t.Helper()
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return k, k.Init()
}

// waitChild is a blocking wait4 that must report a child within hangLimit.
func waitChild(t testing.TB, parent *kernel.Task, pid, options int) kernel.WaitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	r, err := parent.Wait4(ctx, pid, options)
	if err != nil || r.Pid == 0 {
		t.Fatalf("wait4(%d) by pid %d: %+v, %v", pid, parent.Getpid(), r, err)
	}
	return r
}

// reapAll waits for every child of parent, blocking, until ECHILD, and
// returns the statuses by pid. It may run on any goroutine: it reports a
// failure with Errorf.
func reapAll(t testing.TB, parent *kernel.Task) map[int]unix.WaitStatus {
	got := map[int]unix.WaitStatus{}
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	for {
		r, err := parent.Wait4(ctx, -1, unix.WALL)
		switch {
		case errors.Is(err, unix.ECHILD):
			return got
		case err != nil:
			t.Errorf("reaping the children of pid %d: %v (a child never became waitable?)", parent.Getpid(), err)
			return got
		}
		if _, dup := got[r.Pid]; dup {
			t.Errorf("pid %d reaped twice by pid %d", r.Pid, parent.Getpid())
		}
		got[r.Pid] = r.Status
	}
}

// expectNoChildren checks that parent has nothing left to wait for.
func expectNoChildren(t testing.TB, parent *kernel.Task) {
	t.Helper()
	if r, err := parent.Wait4(context.Background(), -1, unix.WNOHANG|unix.WALL); !errors.Is(err, unix.ECHILD) {
		t.Fatalf("pid %d: wait4 after reaping everything: %+v, %v; want ECHILD", parent.Getpid(), r, err)
	}
}

// expectOnlyInit checks that the table is back to init alone.
func expectOnlyInit(t testing.TB, k *kernel.Kernel, i int) {
	t.Helper()
	if n := k.RootNamespace().Allocated(); n != 1 {
		t.Fatalf("iteration %d: %d pids allocated after everything was reaped, want 1 (a leak)", i, n)
	}
}

// checkInvariants runs the invariant checker on a quiescent kernel.
func checkInvariants(t testing.TB, k *kernel.Kernel, when string) {
	t.Helper()
	waitOrDump(t, "Quiesce", k.Quiesce)
	if err := k.CheckInvariants(); err != nil {
		t.Fatalf("%s: invariants broken:\n%v", when, err)
	}
}

// finish makes every task but init exit, reaps everything through init,
// and checks that the table is consistent and holds init alone. Whatever a
// run left behind (threads, zombies, pid namespaces whose init waits for
// them to drain) ends up a child of init once every process has exited.
func finish(t testing.TB, k *kernel.Kernel) {
	t.Helper()
	init := k.Init()
	root := k.RootNamespace()
	deadline := time.Now().Add(hangLimit)
	for round := 0; ; round++ {
		for nr := 2; nr < root.PIDMax(); nr++ {
			if task := root.Lookup(nr); task != nil && !task.Exited() {
				if err := task.ExitGroup(0); err != nil && !errors.Is(err, unix.ESRCH) {
					t.Errorf("clean-up: exit_group of pid %d: %v", nr, err)
				}
			}
		}
		waitOrDump(t, "Quiesce", k.Quiesce)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			_, err := init.Wait4(ctx, -1, unix.WALL)
			cancel()
			if err == nil {
				continue
			}
			if !errors.Is(err, unix.ECHILD) && !errors.Is(err, unix.EINTR) {
				t.Fatalf("clean-up: init's wait4: %v", err)
			}
			break
		}
		if root.Allocated() == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("clean-up: %d pids still allocated after %v:\n%s", root.Allocated(), hangLimit, describeTable(k))
		}
	}
	checkInvariants(t, k, "after clean-up")
	if n := root.Allocated(); n != 1 {
		t.Fatalf("after clean-up %d pids are allocated, want 1 (a leak):\n%s", n, describeTable(k))
	}
}

// describeTable lists the tasks still findable, for a failure message.
func describeTable(k *kernel.Kernel) string {
	root := k.RootNamespace()
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

// --- The random stress test ------------------------------------------------

// The operations of the random stress test, and their weights.
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
	k *kernel.Kernel

	// inboxes receive tasks handed over from other workers, so that the
	// threads of a process and the parent and child of a relationship are
	// driven by different goroutines.
	inboxes []chan *kernel.Task
	// unshared marks tasks whose children go to a pid namespace made by
	// unshare: they may not clone threads (EINVAL, A4).
	unshared sync.Map
	// nsBudget is how many more pid namespaces the run may create.
	nsBudget atomic.Int64

	// claimed records every zombie a wait reaped since the last
	// checkpoint, to catch a second claim of the same one.
	claimMu sync.Mutex
	claimed map[*kernel.Task]string

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
func (s *stressWorld) claim(who string, r kernel.WaitResult) {
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
	anchor *kernel.Task
	tasks  []*kernel.Task

	calls, failed [numStressOps]int
}

func (w *stressWorker) who(t *kernel.Task) string {
	return fmt.Sprintf("worker %d, tid %d", w.id, t.PIDIn(w.s.k.RootNamespace()))
}

// check accepts a nil error or one of allowed and reports anything else.
func (w *stressWorker) check(op stressOp, t *kernel.Task, err error, allowed ...error) bool {
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
		args := kernel.CloneArgs{ExitSignal: int(unix.SIGCHLD)}
		if w.rng.IntN(8) == 0 {
			args.Flags = unix.CLONE_SIGHAND | unix.CLONE_VM
		}
		w.cloned(op, t, args, append(gone, unix.ENOMEM)...)
	case opThread:
		allowed := append(gone, unix.ENOMEM)
		if _, ok := w.s.unshared.Load(t); ok {
			allowed = append(allowed, unix.EINVAL)
		}
		w.cloned(op, t, kernel.CloneArgs{Flags: threadFlags}, allowed...)
	case opCloneParent:
		allowed := append(gone, unix.ENOMEM)
		if t.Getpid() == 1 {
			allowed = append(allowed, unix.EINVAL) // an init may not have siblings (A3)
		}
		w.cloned(op, t, kernel.CloneArgs{Flags: unix.CLONE_PARENT, ExitSignal: int(unix.SIGCHLD)}, allowed...)
	case opCloneOddSignal:
		// Children that must be waited for with __WCLONE; SIGUSR1
		// kills the parent when the child exits.
		sig := 0
		if w.rng.IntN(4) == 0 {
			sig = int(unix.SIGUSR1)
		}
		w.cloned(op, t, kernel.CloneArgs{ExitSignal: sig}, append(gone, unix.ENOMEM)...)
	case opNewPID:
		if t.Namespace().Level() >= 2 || w.s.nsBudget.Add(-1) < 0 {
			return
		}
		w.cloned(op, t, kernel.CloneArgs{Flags: unix.CLONE_NEWPID, ExitSignal: int(unix.SIGCHLD)},
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
		var r kernel.WaitResult
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
		acts := []kernel.SigAction{{Handler: kernel.SigIgn}, {Handler: kernel.SigDfl},
			{Handler: kernel.SigDfl, Flags: kernel.SaNoCldWait}, {Handler: kernel.SigHandler}}
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
func (w *stressWorker) cloned(op stressOp, t *kernel.Task, args kernel.CloneArgs, allowed ...error) {
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
// left but init's.
func TestStressRandom(t *testing.T) {
	seed := seedFor(t)
	// A small pid_max makes the cursor wrap within a short run, so pids
	// are reused while waits by pid and lockless lookups are in flight.
	k, err := kernel.New(kernel.Config{PIDMax: 4096})
	if err != nil {
		t.Fatal(err)
	}
	init := k.Init()
	nWorkers := max(1, *stressWorkers)
	s := &stressWorld{t: t, k: k, inboxes: make([]chan *kernel.Task, nWorkers), claimed: map[*kernel.Task]string{}}
	s.nsBudget.Store(int64(64 + 64*stressDuration.Seconds()))
	defer s.closed.Store(true)

	workers := make([]*stressWorker, nWorkers)
	for i := range workers {
		s.inboxes[i] = make(chan *kernel.Task, 64)
		anchor := fork(t, init)
		if i%2 == 0 {
			mustOK(t, anchor.PrctlSetChildSubreaper(true))
		}
		workers[i] = &stressWorker{s: s, id: i, rng: rand.New(rand.NewPCG(seed, uint64(i))), anchor: anchor}
	}

	const epoch = 250 * time.Millisecond
	end := time.Now().Add(*stressDuration)
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
		wg.Go(func() { s.reapAsInit(&stop) })
		time.Sleep(min(epoch, max(time.Until(end), time.Millisecond)))
		stop.Store(true)
		waitOrDump(t, "stress workers", wg.Wait)
		if t.Failed() {
			break
		}
		checkInvariants(t, k, fmt.Sprintf("checkpoint %d", checkpoints))
		checkpoints++
		s.claimMu.Lock()
		clear(s.claimed)
		s.claimMu.Unlock()
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
		checkpoints, live, k.RootNamespace().Allocated())
	finish(t, k)
}

// --- The hard cases of the design, each on its own ------------------------

// TestStressExitGroupVsClone races exit_group against clone by another
// thread of the same process. A thread cloned before the group exit is
// killed with its siblings; otherwise clone fails (EINTR, or ESRCH when the
// caller was already killed). A process forked meanwhile is not killed but
// reparented to init.
func TestStressExitGroupVsClone(t *testing.T) {
	rng := rand.New(rand.NewPCG(seedFor(t), 1))
	k, init := newKernel(t)
	outcomes := map[string]int{}
	for i := range iterations(400) {
		p := fork(t, init)
		th := clone(t, p, kernel.CloneArgs{Flags: threadFlags})
		caller, exiter := th, p
		if i%2 == 1 {
			caller, exiter = p, th
		}
		forkMode := i%4 >= 2
		var nt *kernel.Task
		var cerr, xerr error
		concurrently(t, rng,
			func() {
				if forkMode {
					nt, cerr = caller.Fork()
				} else {
					nt, cerr = caller.Clone(kernel.CloneArgs{Flags: threadFlags})
				}
			},
			func() { xerr = exiter.ExitGroup(7) })
		mustOK(t, xerr)
		switch {
		case cerr != nil && isOneOf(cerr, unix.EINTR, unix.ESRCH):
			outcomes["refused"]++
		case cerr != nil:
			t.Fatalf("iteration %d: clone during exit_group: %v, want EINTR or ESRCH", i, cerr)
		case !forkMode && !nt.Exited():
			t.Fatalf("iteration %d: thread %d cloned during exit_group survived it", i, nt.Gettid())
		case !forkMode:
			outcomes["thread killed with its group"]++
		case nt.Exited():
			t.Fatalf("iteration %d: process forked during exit_group was killed with its parent", i)
		case nt.Getppid() != 1:
			t.Fatalf("iteration %d: orphan forked during exit_group has parent %d, want init", i, nt.Getppid())
		default:
			outcomes["process forked and reparented"]++
		}
		r := waitChild(t, init, p.Getpid(), 0)
		if !r.Status.Exited() || r.Status.ExitStatus() != 7 {
			t.Fatalf("iteration %d: process exited with status %#x, want exit_group's 7", i, uint32(r.Status))
		}
		if forkMode && cerr == nil {
			mustOK(t, nt.Exit(0))
			waitChild(t, init, nt.Getpid(), 0)
		}
		expectNoChildren(t, init)
		expectOnlyInit(t, k, i)
		if i%16 == 0 {
			checkInvariants(t, k, fmt.Sprintf("iteration %d", i))
		}
	}
	t.Logf("outcomes: %v", outcomes)
	finish(t, k)
}

// TestStressReparentVsCloneParent races a CLONE_PARENT clone against the
// exit of the caller's parent: the new sibling must end up with the same
// parent as the caller, the reaper (init, or a subreaper above the dying
// parent), and never with the dead parent.
func TestStressReparentVsCloneParent(t *testing.T) {
	rng := rand.New(rand.NewPCG(seedFor(t), 2))
	k, init := newKernel(t)
	for i := range iterations(400) {
		top := init
		if i%2 == 1 {
			top = fork(t, init)
			mustOK(t, top.PrctlSetChildSubreaper(true))
		}
		p := fork(t, top)
		var pt *kernel.Task
		if i%4 >= 2 {
			pt = clone(t, p, kernel.CloneArgs{Flags: threadFlags})
		}
		c := fork(t, p)
		var sib *kernel.Task
		var serr error
		var xerrs [2]error
		fs := []func(){
			func() {
				sib, serr = c.Clone(kernel.CloneArgs{Flags: unix.CLONE_PARENT, ExitSignal: int(unix.SIGCHLD)})
			},
			func() { xerrs[0] = p.Exit(0) },
		}
		if pt != nil {
			fs = append(fs, func() { xerrs[1] = pt.Exit(0) })
		}
		concurrently(t, rng, fs...)
		mustOK(t, errors.Join(xerrs[:]...))
		if serr != nil {
			t.Fatalf("iteration %d: CLONE_PARENT by a live child: %v", i, serr)
		}
		if c.Parent() != top || sib.Parent() != top {
			t.Fatalf("iteration %d: after the parent's exit the child's parent is pid %d and the sibling's %d, want %d",
				i, c.Getppid(), sib.Getppid(), top.Getpid())
		}
		if r := waitChild(t, top, p.Getpid(), 0); r.Status != 0 {
			t.Fatalf("iteration %d: parent's status %#x, want 0", i, uint32(r.Status))
		}
		mustOK(t, c.Exit(0))
		mustOK(t, sib.Exit(0))
		if got := reapAll(t, top); len(got) != 2 || got[c.Getpid()] != 0 || got[sib.Getpid()] != 0 {
			t.Fatalf("iteration %d: reaped %v, want pids %d and %d with status 0", i, got, c.Getpid(), sib.Getpid())
		}
		if top != init {
			mustOK(t, top.Exit(0))
			waitChild(t, init, top.Getpid(), 0)
		}
		expectNoChildren(t, init)
		expectOnlyInit(t, k, i)
		if i%16 == 0 {
			checkInvariants(t, k, fmt.Sprintf("iteration %d", i))
		}
	}
	finish(t, k)
}

// TestStressReparentToExitingSubreaper races the exit of a process against
// the exit of the subreaper that would adopt its child, in a chain
// init → g1 → g2 → p → c where g1 and g2 are subreapers. The child must
// skip the dying g2 (and its threads) and end up with g1, or with init
// when g1 is dying too; the zombies of p and g2 must reach a reaper that
// collects each exactly once.
func TestStressReparentToExitingSubreaper(t *testing.T) {
	rng := rand.New(rand.NewPCG(seedFor(t), 3))
	k, init := newKernel(t)
	for i := range iterations(300) {
		g1 := fork(t, init)
		mustOK(t, g1.PrctlSetChildSubreaper(true))
		g2 := fork(t, g1)
		mustOK(t, g2.PrctlSetChildSubreaper(true))
		var g2t *kernel.Task
		if i%2 == 1 {
			g2t = clone(t, g2, kernel.CloneArgs{Flags: threadFlags})
		}
		p := fork(t, g2)
		c := fork(t, p)
		g1Dies := i%4 == 3
		pids := map[string]int{"g1": g1.Getpid(), "g2": g2.Getpid(), "p": p.Getpid(), "c": c.Getpid()}

		var errs [4]error
		fs := []func(){
			func() { errs[0] = p.Exit(0) },
			func() { errs[1] = g2.Exit(0) },
		}
		if g2t != nil {
			fs = append(fs, func() { errs[2] = g2t.Exit(0) })
		}
		if g1Dies {
			fs = append(fs, func() { errs[3] = g1.Exit(0) })
		}
		concurrently(t, rng, fs...)
		mustOK(t, errors.Join(errs[:]...))

		want := g1
		if g1Dies {
			want = init
		}
		if c.Parent() != want {
			t.Fatalf("iteration %d (%v): orphan's parent is pid %d, want %d", i, pids, c.Getppid(), want.Getpid())
		}
		mustOK(t, c.Exit(0))
		reaped := reapAll(t, want)
		if want == g1 {
			mustOK(t, g1.Exit(0))
			for pid, st := range reapAll(t, init) {
				reaped[pid] = st
			}
		}
		if len(reaped) != 4 {
			t.Fatalf("iteration %d (%v): reaped %v, want all four once", i, pids, reaped)
		}
		for name, pid := range pids {
			if st, ok := reaped[pid]; !ok || st != 0 {
				t.Fatalf("iteration %d: %s (pid %d) reaped %v with status %#x", i, name, pid, ok, uint32(st))
			}
		}
		expectOnlyInit(t, k, i)
		if i%16 == 0 {
			checkInvariants(t, k, fmt.Sprintf("iteration %d", i))
		}
	}
	finish(t, k)
}

// TestStressWaitVsReparent races a wait for a zombie against the
// reparenting of that zombie: exactly one waiter may claim it, with its
// exit status.
//
//   - across: a thread of the zombie's parent waits for it while another
//     thread runs exit_group, and the new parent (init, or a subreaper)
//     waits at the same time;
//   - within: the zombie's parent thread exits, moving it to another
//     thread of the process, which is blocked waiting for it and must get
//     it.
func TestStressWaitVsReparent(t *testing.T) {
	rng := rand.New(rand.NewPCG(seedFor(t), 4))
	k, init := newKernel(t)
	claimedBy := map[string]int{}
	for i := range iterations(400) {
		mode := i % 3
		reaper := init
		if mode == 2 {
			reaper = fork(t, init)
			mustOK(t, reaper.PrctlSetChildSubreaper(true))
		}
		pl := fork(t, reaper)
		pt := clone(t, pl, kernel.CloneArgs{Flags: threadFlags})
		forker := pl
		if mode == 1 {
			forker = pt
		}
		c := fork(t, forker)
		cpid, ppid := c.Getpid(), pl.Getpid()
		mustOK(t, c.Exit(5))

		if mode == 1 {
			var r kernel.WaitResult
			var werr, xerr error
			ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
			concurrently(t, rng,
				func() { r, werr = pl.Wait4(ctx, cpid, 0) },
				func() { xerr = pt.Exit(0) })
			cancel()
			mustOK(t, xerr)
			if werr != nil || r.Pid != cpid || r.Status != 5<<8 {
				t.Fatalf("iteration %d: wait for a zombie moved between threads: %+v, %v", i, r, werr)
			}
			claimedBy["thread of the old parent"]++
			mustOK(t, pl.Exit(0))
			waitChild(t, init, ppid, 0)
		} else {
			var r kernel.WaitResult
			var werr, xerr error
			var byReaper map[int]unix.WaitStatus
			ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
			concurrently(t, rng,
				func() {
					if i%2 == 0 {
						r, werr = pl.Wait4(ctx, cpid, 0)
					} else {
						r, werr = pl.Wait4(ctx, -1, unix.WNOHANG)
					}
				},
				func() { xerr = pt.ExitGroup(0) },
				func() { byReaper = reapAll(t, reaper) })
			cancel()
			mustOK(t, xerr)
			if t.Failed() {
				t.FailNow()
			}
			claims := 0
			if werr == nil && r.Pid == cpid {
				claims++
				claimedBy["old parent"]++
				if r.Status != 5<<8 {
					t.Fatalf("iteration %d: old parent got status %#x, want 5<<8", i, uint32(r.Status))
				}
			} else if werr != nil && !isOneOf(werr, unix.EINTR, unix.ECHILD) || werr == nil && r.Pid != 0 {
				// A killed waiter gets EINTR, or ECHILD when the zombie
				// was already reaped by the new parent.
				t.Fatalf("iteration %d: old parent's wait: %+v, %v", i, r, werr)
			}
			if st, ok := byReaper[cpid]; ok {
				claims++
				claimedBy["new parent"]++
				if st != 5<<8 {
					t.Fatalf("iteration %d: new parent got status %#x, want 5<<8", i, uint32(st))
				}
			}
			if claims != 1 {
				t.Fatalf("iteration %d: zombie %d claimed %d times (old parent %+v %v; new parent %v)",
					i, cpid, claims, r, werr, byReaper)
			}
			if st, ok := byReaper[ppid]; !ok || st != 0 {
				t.Fatalf("iteration %d: parent %d not reaped with status 0: %v", i, ppid, byReaper)
			}
			if reaper != init {
				mustOK(t, reaper.Exit(0))
				waitChild(t, init, reaper.Getpid(), 0)
			}
		}
		expectNoChildren(t, init)
		expectOnlyInit(t, k, i)
		if i%16 == 0 {
			checkInvariants(t, k, fmt.Sprintf("iteration %d", i))
		}
	}
	t.Logf("claimed by: %v", claimedBy)
	finish(t, k)
}

// TestStressLastThreadsExit makes the last two (or three) threads of a
// process exit at once. Exactly one of them must notify the parent, with
// the status of one of the exits (or exit_group's when one of them called
// it); when the parent ignores SIGCHLD the process must be reaped exactly
// once, at once.
func TestStressLastThreadsExit(t *testing.T) {
	rng := rand.New(rand.NewPCG(seedFor(t), 5))
	k, init := newKernel(t)
	for i := range iterations(400) {
		parent := init
		ignores := false
		if i%2 == 1 {
			parent = fork(t, init)
			if i%4 == 3 {
				ignores = true
				_, err := parent.Sigaction(int(unix.SIGCHLD), kernel.SigAction{Handler: kernel.SigIgn})
				mustOK(t, err)
			}
		}
		p := fork(t, parent)
		ppid := p.Getpid()
		threads := []*kernel.Task{p, clone(t, p, kernel.CloneArgs{Flags: threadFlags})}
		if i%3 == 0 {
			threads = append(threads, clone(t, p, kernel.CloneArgs{Flags: threadFlags}))
		}
		groupExit := i%5 == 4
		errs := make([]error, len(threads))
		fs := make([]func(), len(threads))
		for j, th := range threads {
			fs[j] = func() {
				if groupExit && j == len(threads)-1 {
					errs[j] = th.ExitGroup(9)
				} else {
					errs[j] = th.Exit(j + 1)
				}
			}
		}
		concurrently(t, rng, fs...)
		for j, err := range errs {
			// Under exit_group a sibling may already be dead when its own
			// exit starts.
			if err != nil && !(groupExit && errors.Is(err, unix.ESRCH)) {
				t.Fatalf("iteration %d: thread %d's exit: %v", i, j, err)
			}
		}
		if ignores {
			if n := k.RootNamespace().Allocated(); n != 2 {
				t.Fatalf("iteration %d: %d pids allocated after an autoreaped exit, want 2", i, n)
			}
		} else {
			r := waitChild(t, parent, ppid, 0)
			code := r.Status.ExitStatus()
			ok := r.Status.Exited() && (groupExit && code == 9 || !groupExit && code >= 1 && code <= len(threads))
			if !ok {
				t.Fatalf("iteration %d: status %#x, want the exit code of one of the threads", i, uint32(r.Status))
			}
		}
		expectNoChildren(t, parent)
		if parent != init {
			mustOK(t, parent.Exit(0))
			waitChild(t, init, parent.Getpid(), 0)
		}
		expectNoChildren(t, init)
		expectOnlyInit(t, k, i)
		if i%16 == 0 {
			checkInvariants(t, k, fmt.Sprintf("iteration %d", i))
		}
	}
	finish(t, k)
}

// TestStressForkIntoDyingNamespace races forks into a pid namespace
// against the exit of its init, from inside (a task of the namespace) and
// from outside (the process that unshared it). A fork either fails with
// ENOMEM (or the caller, being killed, gets EINTR or ESRCH) or its child is
// killed with the namespace: nothing survives, and once the init is gone a
// fork into the namespace fails with ENOMEM (A13).
func TestStressForkIntoDyingNamespace(t *testing.T) {
	rng := rand.New(rand.NewPCG(seedFor(t), 6))
	k, init := newKernel(t)
	outcomes := map[string]int{}
	for i := range iterations(300) {
		inside := i%2 == 0
		u := fork(t, init)
		var n, forker *kernel.Task
		if inside {
			n = clone(t, u, kernel.CloneArgs{Flags: unix.CLONE_NEWPID, ExitSignal: int(unix.SIGCHLD)})
			forker = fork(t, n)
		} else {
			mustOK(t, u.Unshare(unix.CLONE_NEWPID))
			n = fork(t, u)
			forker = u
		}
		ns := n.Namespace()
		if n.Getpid() != 1 || ns.Level() != 1 {
			t.Fatalf("iteration %d: namespace init has pid %d at level %d", i, n.Getpid(), ns.Level())
		}
		npid := n.PIDIn(k.RootNamespace())

		var kids []*kernel.Task
		var ferr, xerr error
		concurrently(t, rng,
			func() { xerr = n.Exit(0) },
			func() {
				for range 3 {
					x, err := forker.Fork()
					if err != nil {
						ferr = err
						return
					}
					kids = append(kids, x)
				}
			})
		mustOK(t, xerr)
		allowed := []error{unix.ENOMEM}
		if inside {
			allowed = append(allowed, unix.EINTR, unix.ESRCH)
		}
		if ferr != nil && !isOneOf(ferr, allowed...) {
			t.Fatalf("iteration %d (inside %v): fork into a dying namespace: %v", i, inside, ferr)
		}
		outcomes[fmt.Sprintf("%d forked, then %v", len(kids), ferr)]++
		waitOrDump(t, "Quiesce", k.Quiesce)
		for _, x := range kids {
			if !x.Exited() {
				t.Fatalf("iteration %d (inside %v): pid %d forked into the namespace survived its init",
					i, inside, x.PIDIn(k.RootNamespace()))
			}
		}
		if inside && !forker.Exited() {
			t.Fatalf("iteration %d: a task of the namespace survived its init", i)
		}
		if !inside {
			if _, err := u.Fork(); !errors.Is(err, unix.ENOMEM) {
				t.Fatalf("iteration %d: fork into a namespace whose init died: %v, want ENOMEM", i, err)
			}
		}
		// The namespace's init finishes exiting only once u has reaped
		// what it forked into it.
		reaped := reapAll(t, u)
		if st, ok := reaped[npid]; !ok || st != 0 {
			t.Fatalf("iteration %d: namespace init (pid %d) reaped %v, status %#x; all: %v", i, npid, ok, uint32(st), reaped)
		}
		wantReaped := 1
		if !inside {
			wantReaped += len(kids)
			for _, x := range kids {
				st := reaped[x.PIDIn(k.RootNamespace())]
				if !st.Signaled() || st.Signal() != unix.SIGKILL {
					t.Fatalf("iteration %d: child in the dying namespace has status %#x, want SIGKILL", i, uint32(st))
				}
			}
		}
		if len(reaped) != wantReaped {
			t.Fatalf("iteration %d: reaped %v, want %d", i, reaped, wantReaped)
		}
		if got := ns.Allocated(); got != 0 {
			t.Fatalf("iteration %d: dead namespace still has %d pids", i, got)
		}
		mustOK(t, u.Exit(0))
		waitChild(t, init, u.Getpid(), 0)
		expectNoChildren(t, init)
		expectOnlyInit(t, k, i)
		if i%16 == 0 {
			checkInvariants(t, k, fmt.Sprintf("iteration %d", i))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(outcomes)) {
		t.Logf("%5d × %s", outcomes[key], key)
	}
	finish(t, k)
}

// TestStressNamespaceInitThreadsExit makes the last two threads of a pid
// namespace's init exit at once while a task of the namespace forks. The
// namespace is zapped once: nothing in it survives, and the init's parent
// is notified exactly once, after the namespace drained, with the status of
// one of the two exits.
func TestStressNamespaceInitThreadsExit(t *testing.T) {
	rng := rand.New(rand.NewPCG(seedFor(t), 7))
	k, init := newKernel(t)
	root := k.RootNamespace()
	for i := range iterations(300) {
		u := fork(t, init)
		n := clone(t, u, kernel.CloneArgs{Flags: unix.CLONE_NEWPID, ExitSignal: int(unix.SIGCHLD)})
		nt := clone(t, n, kernel.CloneArgs{Flags: threadFlags})
		a := fork(t, n)
		b := fork(t, a)
		ns, npid := n.Namespace(), n.PIDIn(root)

		var errs [2]error
		var kids []*kernel.Task
		concurrently(t, rng,
			func() { errs[0] = n.Exit(1) },
			func() { errs[1] = nt.Exit(2) },
			func() {
				for range 3 {
					x, err := a.Fork()
					if err != nil {
						return
					}
					kids = append(kids, x)
				}
			})
		mustOK(t, errors.Join(errs[:]...))
		waitOrDump(t, "Quiesce", k.Quiesce)
		for _, x := range append(kids, a, b) {
			if !x.Exited() {
				t.Fatalf("iteration %d: pid %d of the namespace survived its init", i, x.PIDIn(root))
			}
		}
		// The namespace is dead but its zombie init is not reaped yet.
		checkInvariants(t, k, fmt.Sprintf("iteration %d, before the init is reaped", i))
		r := waitChild(t, u, npid, 0)
		if !r.Status.Exited() || r.Status.ExitStatus() != 1 && r.Status.ExitStatus() != 2 {
			t.Fatalf("iteration %d: namespace init's status %#x, want exit 1 or 2", i, uint32(r.Status))
		}
		expectNoChildren(t, u)
		if got := ns.Allocated(); got != 0 {
			t.Fatalf("iteration %d: dead namespace still has %d pids", i, got)
		}
		mustOK(t, u.Exit(0))
		waitChild(t, init, u.Getpid(), 0)
		expectOnlyInit(t, k, i)
		if i%16 == 0 {
			checkInvariants(t, k, fmt.Sprintf("iteration %d", i))
		}
	}
	finish(t, k)
}

// TestStressWaitByPidVsClone races wait4 and waitid for one pid against
// the clone that is about to allocate that number, and waits for pid 1. The
// waiter has no children, so every wait must fail with ECHILD: a task that
// clone has not published does not exist for wait, and init is nobody's
// child here.
func TestStressWaitByPidVsClone(t *testing.T) {
	k, init := newKernel(t)
	forker, waiter := fork(t, init), fork(t, init)
	var next atomic.Int64
	next.Store(int64(waiter.Getpid() + 1))
	var wg sync.WaitGroup
	var stop atomic.Bool
	wg.Go(func() {
		defer stop.Store(true)
		for range iterations(4000) {
			c, err := forker.Fork()
			if err != nil {
				t.Errorf("fork: %v", err)
				return
			}
			next.Store(int64(c.Getpid() + 1))
			if err := c.Exit(0); err != nil {
				t.Errorf("exit: %v", err)
				return
			}
			if _, err := forker.Wait4(context.Background(), c.Getpid(), 0); err != nil {
				t.Errorf("wait4: %v", err)
				return
			}
		}
	})
	wg.Go(func() {
		for !stop.Load() {
			pid := int(next.Load())
			for _, p := range []int{pid, pid + 1, 1} {
				if r, err := waiter.Wait4(context.Background(), p, unix.WNOHANG|unix.WALL); !errors.Is(err, unix.ECHILD) {
					t.Errorf("wait4(%d) by a process without children: %+v, %v", p, r, err)
				}
				if r, err := waiter.Waitid(context.Background(), unix.P_PID, p, unix.WNOHANG|unix.WEXITED); !errors.Is(err, unix.ECHILD) {
					t.Errorf("waitid(P_PID, %d) by a process without children: %+v, %v", p, r, err)
				}
			}
		}
	})
	waitOrDump(t, "forker and waiter", wg.Wait)
	finish(t, k)
}
