package bench

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"tasklist/workload"
)

// Timing is how long one run of a point lasts: a warm-up, then Samples
// samples of Sample each.
type Timing struct {
	Warmup  time.Duration
	Sample  time.Duration
	Samples int
}

// maxSamples bounds Timing.Samples.
const maxSamples = 64

// latencyCap is how many timed calls a worker records per run; past it,
// it goes on counting without recording, so that recording allocates
// nothing in the timed part.
const latencyCap = 1 << 16

// yieldEvery is how many iterations a worker runs between yields. When
// every P runs a worker, the controller's timer would wait for the
// scheduler's 10 ms preemption to fire, stretching every sample and
// warm-up; a yield every few hundred iterations lets it run on time, for
// well under 1% of a fast op's time.
const yieldEvery = 256

// measurement is what one run of a point measured.
type measurement struct {
	// value is the workload's figure.
	value float64
	// iterations counts the ops done in the samples, by all workers;
	// perWorker by each.
	iterations uint64
	perWorker  []uint64
	// elapsed is the samples' total length.
	elapsed time.Duration
	// allocs and bytes are the heap allocations per iteration.
	allocs, bytes float64
	notes         []string
	// locks is the lock profile, from a run with lock statistics on.
	locks *LockProfile
	// load is how many CPUs' worth of other work ran meanwhile
	// (otherLoad); -1 when unknown.
	load float64
}

// worker is one worker's record, written only by it. marks[k] is its
// iteration count when it first saw epoch k, latMarks[k] its number of
// recorded latencies then. The padding keeps its neighbours' records off
// its cache lines.
type worker struct {
	_        [128]byte
	marks    [maxSamples + 2]uint64
	latMarks [maxSamples + 2]int
	lat      []time.Duration
	err      error
	_        [128]byte
}

// epoch is the run's phase: 0 while warming up, k during sample k, past
// the last sample when the workers must stop. The controller writes it;
// workers read it once per iteration, and its line is never written
// otherwise.
type epoch struct {
	_ [128]byte
	atomic.Int32
	_ [128]byte
}

// runModel runs inst's ops on their workers under the harness rules:
// the workers start together behind a barrier, warm up, then count
// iterations over fixed-length samples. With lockStats the lock
// statistics are reset at the first sample and read at the end, and the
// measurement carries the profile. A cancelled ctx stops the run; its
// error is returned.
func runModel(ctx context.Context, w *workload.Workload, inst *workload.Instance, t Timing, lockStats func(phase lockPhase)) (measurement, error) {
	n := len(inst.Ops)
	workers := make([]worker, n)
	var ep epoch
	var done sync.WaitGroup
	gate := newStartGate()
	latency := !w.Unit.HigherIsBetter()
	last := int32(t.Samples)
	for i, op := range inst.Ops {
		rec := &workers[i]
		if latency {
			rec.lat = make([]time.Duration, 0, latencyCap)
		}
		gate.expect()
		done.Go(func() {
			gate.arrive()
			var count uint64
			seen := int32(0)
			for {
				if e := ep.Load(); e != seen {
					for k := seen + 1; k <= e; k++ {
						rec.marks[k] = count
						rec.latMarks[k] = len(rec.lat)
					}
					seen = e
					if e > last {
						return
					}
				}
				d, err := op()
				if err != nil {
					rec.err = err // the run fails: its marks do not matter
					return
				}
				count++
				if count%yieldEvery == 0 {
					runtime.Gosched()
				}
				if latency && len(rec.lat) < cap(rec.lat) {
					rec.lat = append(rec.lat, d)
				}
			}
		})
	}
	gate.waitAll()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	stopped := false
	sleep := func(d time.Duration) {
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			stopped = true
		}
	}
	gate.open()
	sleep(t.Warmup)
	starts := make([]time.Time, t.Samples+2)
	reader := newAllocReader()
	var before, after heapAllocs
	var cpuBefore, cpuAfter cpuReading
	for k := int32(1); k <= last+1 && !stopped; k++ {
		switch k {
		case 1:
			cpuBefore = readCPU(false)
			before = reader.read()
			if lockStats != nil {
				lockStats(lockStart)
			}
		case last + 1:
			if lockStats != nil {
				lockStats(lockStop)
			}
			after = reader.read()
			cpuAfter = readCPU(false)
		}
		starts[k] = time.Now()
		ep.Store(k)
		if k <= last {
			sleep(t.Sample)
		}
	}
	ep.Store(last + 1)
	done.Wait()
	if stopped {
		return measurement{}, ctx.Err()
	}
	for i := range workers {
		if err := workers[i].err; err != nil {
			return measurement{}, fmt.Errorf("%s: worker %d: %w", w.Name, i, err)
		}
	}
	m := measure(w, workers, starts[last+1].Sub(starts[1]), before, after, int(last))
	m.load = otherLoad(cpuBefore, cpuAfter)
	return m, nil
}

// measure turns the workers' records into the run's figure.
func measure(w *workload.Workload, workers []worker, elapsed time.Duration, before, after heapAllocs, last int) measurement {
	m := measurement{elapsed: elapsed}
	var lat []float64
	m.perWorker = make([]uint64, len(workers))
	for i := range workers {
		rec := &workers[i]
		m.perWorker[i] = rec.marks[last+1] - rec.marks[1]
		m.iterations += m.perWorker[i]
		for _, d := range rec.lat[rec.latMarks[1]:rec.latMarks[last+1]] {
			lat = append(lat, d.Seconds()*1e6/float64(w.PerOp))
		}
	}
	if w.Unit.HigherIsBetter() {
		m.value = float64(m.iterations) * float64(w.PerOp) / elapsed.Seconds() * w.Unit.PerSecond
	} else {
		m.value = RobustMedian(lat)
	}
	if m.iterations > 0 {
		m.allocs = float64(after.objects-before.objects) / float64(m.iterations)
		m.bytes = float64(after.bytes-before.bytes) / float64(m.iterations)
	}
	return m
}

// heapAllocs is a reading of the heap allocation counters.
type heapAllocs struct{ objects, bytes uint64 }

// allocReader reads the heap allocation counters. Unlike
// runtime.ReadMemStats it does not stop the world, so the workers run on
// through a reading, and a reading allocates nothing.
type allocReader []metrics.Sample

func newAllocReader() allocReader {
	names := []string{"/gc/heap/allocs:objects", "/gc/heap/tiny/allocs:objects", "/gc/heap/allocs:bytes"}
	r := make(allocReader, len(names))
	for i, name := range names {
		r[i].Name = name
	}
	return r
}

func (r allocReader) read() heapAllocs {
	metrics.Read(r)
	return heapAllocs{objects: r[0].Value.Uint64() + r[1].Value.Uint64(), bytes: r[2].Value.Uint64()}
}

// startGate is the barrier the workers start behind: each arrives and
// waits until the controller, having seen every one arrive, opens it.
type startGate struct {
	arrived sync.WaitGroup
	opened  chan struct{}
}

func newStartGate() *startGate { return &startGate{opened: make(chan struct{})} }

// expect announces one more worker; call it before the worker starts.
func (g *startGate) expect() { g.arrived.Add(1) }

// arrive is a worker's: it blocks until the gate opens.
func (g *startGate) arrive() {
	g.arrived.Done()
	<-g.opened
}

// waitAll returns once every expected worker has arrived.
func (g *startGate) waitAll() { g.arrived.Wait() }

// open lets every worker through.
func (g *startGate) open() { close(g.opened) }

// settle collects garbage before a run, so that each run starts from a
// heap without its predecessor's garbage.
func settle() { runtime.GC() }
