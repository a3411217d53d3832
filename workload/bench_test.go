package workload

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"tasklist/kernel"
	"tasklist/lockstat"
)

// BenchmarkWorkloads runs every workload at 1 and 2 workers on one shared
// kernel (the scalable plan) and on the private control, a kernel per
// worker with nothing shared: the ratio of the two is what the shared
// table costs. Workers start together behind a barrier and split b.N
// iterations; ns/op is wall time per iteration of the whole machine, and
// the workload's own figure (ops/s, jobs/min, µs/call) is reported too.
// Lock-order checking is off: it would be all that is measured.
//
//	go test -run '^$' -bench 'Workloads/fork-exit' -count 5 ./workload/
func BenchmarkWorkloads(b *testing.B) {
	defer lockstat.SetChecking(lockstat.SetChecking(false))
	for _, w := range All() {
		for _, workers := range []int{1, 2} {
			for _, table := range []string{"shared", "private"} {
				b.Run(fmt.Sprintf("%s/%s/workers=%d", w.Name, table, workers), func(b *testing.B) {
					inst, err := w.Setup(env(b, workers, table == "private", kernel.Config{}))
					if err != nil {
						b.Fatal(err)
					}
					benchOps(b, w, inst)
				})
			}
		}
	}
}

// benchWorker is one worker's tally, padded so that workers' tallies
// never share a cache line.
type benchWorker struct {
	timed time.Duration
	err   error
	_     [128]byte
}

// benchOps runs b.N iterations split over inst's workers, which start
// together, and reports the workload's figure.
func benchOps(b *testing.B, w *Workload, inst *Instance) {
	workers := len(inst.Ops)
	tally := make([]benchWorker, workers)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i, op := range inst.Ops {
		n := b.N / workers
		if i < b.N%workers {
			n++
		}
		ready.Add(1)
		done.Go(func() {
			ready.Done()
			<-start
			t := &tally[i]
			for range n {
				d, err := op()
				if err != nil {
					t.err = err
					return
				}
				t.timed += d
			}
		})
	}
	ready.Wait()
	b.ResetTimer()
	close(start)
	done.Wait()
	b.StopTimer()
	var timed time.Duration
	for i := range tally {
		if tally[i].err != nil {
			b.Fatalf("worker %d: %v", i, tally[i].err)
		}
		timed += tally[i].timed
	}
	units := float64(b.N * w.PerOp)
	if w.Unit.HigherIsBetter() {
		b.ReportMetric(units/b.Elapsed().Seconds()*w.Unit.PerSecond, w.Unit.Name)
	} else {
		b.ReportMetric(float64(timed)/float64(time.Microsecond)/units, w.Unit.Name)
	}
}
