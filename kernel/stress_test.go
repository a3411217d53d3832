package kernel

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var (
	stressDuration = flag.Duration("stress.duration", 2*time.Second,
		"how long TestStressRandom issues calls before cleaning up")
	stressWorkers = flag.Int("stress.workers", 16, "goroutines TestStressRandom runs")
	stressSeed    = flag.Uint64("stress.seed", 0, "seed of the random choices (0: from the clock)")
	stressIters   = flag.Int("stress.iters", 0, "iterations of each hard-case test (0: its default)")
)

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
func fork(t testing.TB, parent *Task) *Task {
	t.Helper()
	return clone(t, parent, CloneArgs{ExitSignal: int(unix.SIGCHLD)})
}

func clone(t testing.TB, parent *Task, args CloneArgs) *Task {
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

func newKernel(t testing.TB) (*Kernel, *Task) {
	t.Helper()
	k, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	return k, k.Init()
}

// waitChild is a blocking wait4 that must report a child within hangLimit.
func waitChild(t testing.TB, parent *Task, pid, options int) WaitResult {
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
func reapAll(t testing.TB, parent *Task) map[int]unix.WaitStatus {
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
func expectNoChildren(t testing.TB, parent *Task) {
	t.Helper()
	if r, err := parent.Wait4(context.Background(), -1, unix.WNOHANG|unix.WALL); !errors.Is(err, unix.ECHILD) {
		t.Fatalf("pid %d: wait4 after reaping everything: %+v, %v; want ECHILD", parent.Getpid(), r, err)
	}
}

// expectOnlyInit checks that the table is back to init alone.
func expectOnlyInit(t testing.TB, k *Kernel, i int) {
	t.Helper()
	if n := k.RootNamespace().Allocated(); n != 1 {
		t.Fatalf("iteration %d: %d pids allocated after everything was reaped, want 1 (a leak)", i, n)
	}
}

// checkInvariants runs the invariant checker on a quiescent kernel.
func checkInvariants(t testing.TB, k *Kernel, when string) {
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
func finish(t testing.TB, k *Kernel) {
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
func describeTable(k *Kernel) string {
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
