package bench

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tasklist/workload"
)

// tinyTiming keeps the harness's runs short in tests.
var tinyTiming = Timing{Warmup: time.Millisecond, Sample: 2 * time.Millisecond, Samples: 3}

// TestStartGate: no worker passes the gate before it opens, waitAll
// returns only once all have arrived, and all pass once it opens.
func TestStartGate(t *testing.T) {
	const n = 8
	g := newStartGate()
	var passed atomic.Int32
	done := make(chan struct{}, n)
	for range n {
		g.expect()
		go func() {
			g.arrive()
			passed.Add(1)
			done <- struct{}{}
		}()
	}
	g.waitAll()
	for range 100 {
		runtime.Gosched()
	}
	if p := passed.Load(); p != 0 {
		t.Fatalf("%d workers passed a closed gate", p)
	}
	g.open()
	for range n {
		<-done
	}
}

// counting returns a synthetic workload whose ops count their calls.
func counting(workers int, calls []atomic.Uint64) (*workload.Workload, *workload.Instance) {
	w := &workload.Workload{Name: "counting", Unit: workload.OpsPerSec, PerOp: 2}
	inst := &workload.Instance{}
	for i := range workers {
		inst.Ops = append(inst.Ops, func() (time.Duration, error) {
			calls[i].Add(1)
			runtime.Gosched()
			return 0, nil
		})
	}
	return w, inst
}

// TestRunModelCounts: every worker counts iterations in the samples, no
// more than it made, and the figure is the iterations times PerOp over
// the samples' time.
func TestRunModelCounts(t *testing.T) {
	for _, timing := range []Timing{tinyTiming, {Warmup: time.Millisecond, Sample: 200 * time.Millisecond, Samples: 2}} {
		calls := make([]atomic.Uint64, 3)
		w, inst := counting(3, calls)
		m, err := runModel(context.Background(), w, inst, timing, nil)
		if err != nil {
			t.Fatal(err)
		}
		var sum uint64
		idle := false
		for i, n := range m.perWorker {
			if n > calls[i].Load() {
				t.Fatalf("worker %d: %d iterations counted of %d made", i, n, calls[i].Load())
			}
			idle = idle || n == 0
			sum += n
		}
		if sum != m.iterations || m.value != float64(2*sum)/m.elapsed.Seconds() {
			t.Fatalf("iterations %d, per worker %v, value %v over %v", m.iterations, m.perWorker, m.value, m.elapsed)
		}
		// On a busy machine a worker can wait out short samples for a
		// CPU: only one that stays idle over long ones is wrong.
		if !idle {
			return
		}
	}
	t.Fatal("a worker counted nothing over long samples")
}

// TestMeasure: the figure from hand-made worker records, for a rate in
// jobs per minute and for a latency.
func TestMeasure(t *testing.T) {
	ws := make([]worker, 2)
	ws[0].marks = [maxSamples + 2]uint64{0, 10, 20, 40}
	ws[1].marks = [maxSamples + 2]uint64{0, 5, 15, 35}
	rate := &workload.Workload{Unit: workload.JobsPerMin, PerOp: 1}
	m := measure(rate, ws, 2*time.Second, heapAllocs{objects: 100, bytes: 1000}, heapAllocs{objects: 160, bytes: 4000}, 2)
	// (30 + 30) iterations in 2 s: 30/s, 1800/min; 60 allocations and
	// 3000 bytes over 60 iterations.
	if m.iterations != 60 || m.value != 1800 || m.allocs != 1 || m.bytes != 50 {
		t.Fatalf("%+v", m)
	}
	lat := &workload.Workload{Unit: workload.MicrosPerCall, PerOp: 8}
	ws[0].lat = []time.Duration{999 * time.Microsecond, 8 * time.Microsecond, 16 * time.Microsecond, 24 * time.Microsecond}
	ws[0].latMarks = [maxSamples + 2]int{0, 1, 2, 4}
	ws[1].lat = nil
	m = measure(lat, ws, time.Second, heapAllocs{}, heapAllocs{}, 2)
	// Recorded in the samples: 8, 16 and 24 µs per batch of 8, so 1, 2
	// and 3 µs per call; the warm-up's 999 µs is left out.
	if m.value != 2 {
		t.Fatalf("latency %v, want 2", m.value)
	}
}

// TestRunModelStopsOnCancel: a cancelled run stops at once and returns
// the context's error.
func TestRunModelStopsOnCancel(t *testing.T) {
	calls := make([]atomic.Uint64, 2)
	w, inst := counting(2, calls)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	long := Timing{Warmup: time.Hour, Sample: time.Hour, Samples: 2}
	if _, err := runModel(ctx, w, inst, long, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestRunModelReportsAFailedOp: an op's error ends the run with it.
func TestRunModelReportsAFailedOp(t *testing.T) {
	boom := errors.New("boom")
	w := &workload.Workload{Name: "failing", Unit: workload.OpsPerSec, PerOp: 1}
	inst := &workload.Instance{Ops: []workload.Op{func() (time.Duration, error) { return 0, boom }}}
	if _, err := runModel(context.Background(), w, inst, tinyTiming, nil); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the op's", err)
	}
}

// TestRunInterleavesPlans: the sweep runs the first repetition of every
// plan and worker count before the second, each plan once per point and
// repetition in an order that changes, and the lock-statistics runs
// after all repetitions; each point ends with one value per repetition.
func TestRunInterleavesPlans(t *testing.T) {
	get, err := workload.Named("get")
	if err != nil {
		t.Fatal(err)
	}
	var seen []Progress
	cfg := Config{Groups: []Group{{Workload: get, Plans: []string{"scalable", Private, "linux-2.6.35"}}},
		Workers: []int{1, 2}, Reps: 3, Timing: tinyTiming, Population: -1, LockStats: true,
		Progress: func(p Progress) { seen = append(seen, p) }}
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3*2*3+3*2 || seen[len(seen)-1].Done != len(seen)-1 || seen[0].Total != len(seen) {
		t.Fatalf("%d progress reports, last %+v", len(seen), seen[len(seen)-1])
	}
	orders := map[string]bool{}
	for i := 0; i < 18; i += 3 {
		var round []string
		for _, p := range seen[i : i+3] {
			if want := i/6 + 1; p.Rep != want || p.Workers != seen[i].Workers {
				t.Fatalf("run %d is rep %d at %d workers, want rep %d at %d", i, p.Rep, p.Workers, want, seen[i].Workers)
			}
			round = append(round, p.Plan)
		}
		sorted := slices.Sorted(slices.Values(round))
		if !slices.Equal(sorted, []string{"linux-2.6.35", Private, "scalable"}) {
			t.Fatalf("runs %d-%d are on %v: want each plan once", i, i+2, round)
		}
		orders[strings.Join(round, " ")] = true
	}
	if len(orders) < 2 {
		t.Fatalf("the plans ran in one order every time: %v", orders)
	}
	for _, p := range seen[18:] {
		if p.Rep != 0 {
			t.Fatalf("a lock-statistics run reported rep %d", p.Rep)
		}
	}
	for _, pt := range r.Points {
		if len(pt.Values) != 3 || len(pt.Allocs) != 3 || pt.Locks == nil {
			t.Fatalf("%s on %s at %d: %d values, %d allocs, locks %v", pt.Workload, pt.Plan, pt.Workers, len(pt.Values), len(pt.Allocs), pt.Locks)
		}
	}
	if got := []string{r.Base(r.Point("get", Private, 2)).Plan}; !slices.Equal(got, []string{"scalable"}) {
		t.Fatalf("base %v", got)
	}
}

// TestRunInterrupted: a sweep whose context ends returns what it
// measured, marked interrupted.
func TestRunInterrupted(t *testing.T) {
	get, _ := workload.Named("get")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := 0
	cfg := Config{Groups: []Group{{Workload: get, Plans: []string{"scalable", Private}}}, Workers: []int{1}, Reps: 5,
		Timing: tinyTiming, Population: -1, Progress: func(p Progress) {
			if runs++; runs == 4 {
				cancel()
			}
		}}
	r, err := Run(ctx, cfg)
	if err != nil || !r.Interrupted {
		t.Fatalf("Run = %v, interrupted %v", err, r.Interrupted)
	}
	if n := len(r.Point("get", "scalable", 1).Values) + len(r.Point("get", Private, 1).Values); n != 3 {
		t.Fatalf("%d repetitions kept, want the 3 finished before the stop", n)
	}
}

// TestSplitPlans: toggles join the preset before them; unknown names and
// misplaced toggles are refused.
func TestSplitPlans(t *testing.T) {
	got, err := SplitPlans("scalable, linux-2.6.35,prio-without-tasklist,exit-ptrace-fastpath,private+cursor,host")
	want := []string{"scalable", "linux-2.6.35,prio-without-tasklist,exit-ptrace-fastpath", PrivateCursor, Host}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("SplitPlans = %q, %v; want %q", got, err, want)
	}
	for _, bad := range []string{"nosuch", "prio-without-tasklist,scalable", "host,prio-without-tasklist", "scalable,,private", "scalable,zhang-v1"} {
		if _, err := SplitPlans(bad); err == nil {
			t.Errorf("SplitPlans(%q) succeeded", bad)
		}
	}
	// The controls are named where the name may have been meant for one,
	// and not beside a refused toggle.
	for list, controls := range map[string]bool{"nosuch": true, "scalable,privat": true, "scalable,zhang-v1": false,
		"linux-2.6.35,nosuch-toggle": true} {
		_, err := SplitPlans(list)
		if err == nil || strings.Contains(err.Error(), "controls:") != controls {
			t.Errorf("SplitPlans(%q) = %v; want the controls named: %v", list, err, controls)
		}
	}
}

// TestValidateBounds: a configuration out of bounds is refused with the
// bound in the message, before anything runs.
func TestValidateBounds(t *testing.T) {
	get, _ := workload.Named("get")
	good := Config{Groups: []Group{{Workload: get, Plans: []string{"scalable"}}}, Workers: []int{1}, Reps: 1, Timing: tinyTiming}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Population = workload.MaxPopulation + 1 }, "at most 16000"},
		{func(c *Config) { c.Population = 100000 }, "at most 16000"},
		{func(c *Config) { c.MaxLoad = math.NaN() }, "maximum load of NaN"},
		{func(c *Config) { c.MaxLoad = math.Inf(1) }, "maximum load of +Inf"},
		{func(c *Config) { c.MaxLoad = -1 }, "maximum load of -1"},
		{func(c *Config) { c.Workers = []int{MaxWorkers + 1} }, "want 1 to 1024"},
	} {
		c := good
		tc.change(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate = %v, want %q", err, tc.want)
		}
	}
}

// TestRunOrderPutsTheHostLast: the host, never compared, runs after the
// model plans, which are all there.
func TestRunOrderPutsTheHostLast(t *testing.T) {
	plans := []string{Host, "scalable", Private, "gvisor"}
	got := runOrder(plans, rand.New(rand.NewPCG(3, 4)))
	if len(got) != 4 || got[3] != Host || !slices.Contains(got, "scalable") || !slices.Contains(got, Private) || !slices.Contains(got, "gvisor") {
		t.Fatalf("runOrder = %v", got)
	}
}
