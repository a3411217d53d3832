package kernel

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"tasklist/lockstat"
)

// The benchmarks follow the harness rules of docs/workloads.md:
// workers start together behind a barrier, each does its share of b.N
// iterations and counts them on a cache line of its own, and nothing is
// asserted about timings. Lock-order checking, on in every test binary, is
// turned off: it costs several microseconds per lock and would be all that
// is measured.

// benchWorker is one worker's counter, padded to two cache lines so that
// the adjacent-line prefetcher cannot make neighbours share one either.
type benchWorker struct {
	ops uint64
	_   [120]byte
}

// runWorkers calls op(w) b.N times in all, split evenly over workers
// goroutines that start together, and reports the aggregate rate. ns/op
// is then wall time per operation of the whole machine, the inverse of
// throughput, as will-it-scale and AIM7 report it.
func runWorkers(b *testing.B, workers int, op func(w int) error) {
	b.Helper()
	counts := make([]benchWorker, workers)
	errs := make([]error, workers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		n := b.N / workers
		if w < b.N%workers {
			n++
		}
		wg.Go(func() {
			<-start
			c := &counts[w]
			for range n {
				if err := op(w); err != nil {
					errs[w] = err
					return
				}
				c.ops++
			}
		})
	}
	b.ResetTimer()
	close(start)
	wg.Wait()
	b.StopTimer()
	total := uint64(0)
	for w := range workers {
		if errs[w] != nil {
			b.Fatalf("worker %d: %v", w, errs[w])
		}
		total += counts[w].ops
	}
	if total != uint64(b.N) {
		b.Fatalf("%d operations done, want %d", total, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// forkExitWait is one AIM7 fork_test job: fork a child, let it exit, and
// reap it.
func forkExitWait(w *Task) error {
	c, err := w.Fork()
	if err != nil {
		return err
	}
	if err := c.Exit(0); err != nil {
		return err
	}
	r, err := w.Wait4(context.Background(), -1, 0)
	if err != nil {
		return err
	}
	if r.Task != c {
		return fmt.Errorf("reaped pid %d, want %d", r.Pid, c.Getpid())
	}
	return nil
}

// BenchmarkForkExitWait is the fork-exit workload (AIM7 fork_test): each
// worker is a process of its own under init and runs
// clone(SIGCHLD)+exit+wait4 cycles. ns/op is per cycle. The lockstat
// variant runs with lock statistics on, to show what they cost against
// the run beside it.
func BenchmarkForkExitWait(b *testing.B) {
	prev := lockstat.SetChecking(false)
	defer lockstat.SetChecking(prev)
	for _, variant := range []struct {
		name     string
		workers  int
		lockstat bool
	}{{"workers=1", 1, false}, {"workers=1/lockstat", 1, true}, {"workers=2", 2, false}} {
		b.Run(variant.name, func(b *testing.B) {
			defer lockstat.SetStats(lockstat.SetStats(variant.lockstat))
			e := newEnv(b, Config{})
			ws := make([]*Task, variant.workers)
			for i := range ws {
				ws[i] = e.fork(e.init)
			}
			runWorkers(b, variant.workers, func(w int) error { return forkExitWait(ws[w]) })
		})
	}
}

// BenchmarkThreadSpawn is will-it-scale threadspawn1: each worker clones a
// pthread which exits at once and reaps itself; Exit returns once the
// thread is released, which stands for the join. The workers are separate
// processes (procs) or threads of one process (threads), where every
// clone and exit takes the same process lock.
func BenchmarkThreadSpawn(b *testing.B) {
	prev := lockstat.SetChecking(false)
	defer lockstat.SetChecking(prev)
	for _, mode := range []string{"procs", "threads"} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d", mode, workers), func(b *testing.B) {
				e := newEnv(b, Config{})
				ws := make([]*Task, workers)
				for i := range ws {
					switch {
					case mode == "procs" || i == 0:
						ws[i] = e.fork(e.init)
					default:
						ws[i] = e.thread(ws[0])
					}
				}
				runWorkers(b, workers, func(w int) error {
					th, err := ws[w].Clone(CloneArgs{Flags: threadFlags})
					if err != nil {
						return err
					}
					return th.Exit(0)
				})
			})
		}
	}
}

// liveTaskCounts are the table sizes of the memory and fork-cost
// benchmarks; -short leaves out the million.
func liveTaskCounts(b *testing.B) []int {
	if testing.Short() {
		return []int{1e5}
	}
	return []int{1e5, 1e6}
}

// populate forks n single-threaded processes, children of one holder
// process under init, that stay alive.
func populate(e *env, n int) {
	e.t.Helper()
	holder := e.fork(e.init)
	for range n {
		if _, err := holder.Fork(); err != nil {
			e.t.Fatalf("populating the table: %v", err)
		}
	}
}

// BenchmarkLiveTaskMemory measures the heap a live process costs: the
// growth of the live heap after forking n processes, divided by n (B/task;
// the target is at most 1 KiB). ns/op is the time to fork all n.
func BenchmarkLiveTaskMemory(b *testing.B) {
	prev := lockstat.SetChecking(false)
	defer lockstat.SetChecking(prev)
	for _, n := range liveTaskCounts(b) {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			var perTask float64
			for range b.N {
				b.StopTimer()
				e := newEnv(b, Config{PIDMax: 4 << 20})
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				b.StartTimer()
				populate(e, n)
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&after)
				perTask += (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(n)
				if got := e.k.RootNamespace().Allocated(); got != n+2 {
					b.Fatalf("%d pids allocated, want %d", got, n+2)
				}
			}
			b.ReportMetric(perTask/float64(b.N), "B/task")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/fork")
		})
	}
}

// BenchmarkForkWithLiveTasks is the fork-exit cycle of
// BenchmarkForkExitWait, one worker, in an empty table and in one that
// holds a million other live processes: nothing on the fork path may cost
// in proportion to the table (the target is within 20% of the empty
// table). The populated table is built once per sub-benchmark and kept
// across its rounds; a cycle leaves it as it found it.
func BenchmarkForkWithLiveTasks(b *testing.B) {
	prev := lockstat.SetChecking(false)
	defer lockstat.SetChecking(prev)
	counts := append([]int{0}, liveTaskCounts(b)[len(liveTaskCounts(b))-1])
	for _, n := range counts {
		var w *Task
		b.Run(fmt.Sprintf("live=%d", n), func(b *testing.B) {
			if w == nil {
				e := newEnv(b, Config{PIDMax: 4 << 20})
				populate(e, n)
				w = e.fork(e.init)
				runtime.GC()
			}
			runWorkers(b, 1, func(int) error { return forkExitWait(w) })
		})
		w = nil // drop the table before building the next one
		runtime.GC()
	}
}

// TestBenchWorkloadsRun runs each benchmark's loop body a few times under
// the test runner (and -race), so a benchmark that broke is noticed
// without running the benchmarks.
func TestBenchWorkloadsRun(t *testing.T) {
	e := newEnv(t, Config{})
	w := e.fork(e.init)
	for range 10 {
		mustOK(t, forkExitWait(w))
		th := e.thread(w)
		e.exit(th, 0)
	}
	e.exit(w, 0)
	if r := e.waitOne(e.init, w.Getpid(), 0); r.Status != 0 {
		t.Fatalf("status %#x", uint32(r.Status))
	}
	e.wantOnlyInit()
}
