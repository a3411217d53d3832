package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"tasklist/workload"
)

// A trace's replay runs on the model plans, a big-lock one and the controls included: each
// run counts whole passes, and its figure is those passes' calls over the samples' time. The
// host cannot run it, and a sweep that asks for it is refused.
func TestReplayWorkloadRuns(t *testing.T) {
	w, err := workload.Named("replay:../testdata/traces/nice.strace")
	if err != nil {
		t.Fatal(err)
	}
	plans := []string{"scalable", "linux-2.6.35", Private, PrivateCursor}
	cfg := Config{Groups: []Group{{Workload: w, Plans: plans}}, Workers: []int{1, 2}, Reps: 1,
		Timing: Timing{Warmup: time.Millisecond, Sample: 10 * time.Millisecond, Samples: 2}}
	for _, p := range plans {
		for _, n := range cfg.Workers {
			m, err := runPoint(context.Background(), &cfg, w, p, n, false)
			if err != nil {
				t.Fatalf("%s at %d workers: %v", p, n, err)
			}
			if m.iterations == 0 || m.value != float64(m.iterations)*float64(w.PerOp)/m.elapsed.Seconds() {
				t.Errorf("%s at %d workers: %d passes of %d calls in %v, figure %v", p, n, m.iterations, w.PerOp, m.elapsed, m.value)
			}
		}
	}
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range r.Points {
		if len(pt.Values) != 1 || !(pt.Values[0] > 0) || pt.Unit != "calls/s" {
			t.Errorf("%s on %s at %d: %v %s", pt.Workload, pt.Plan, pt.Workers, pt.Values, pt.Unit)
		}
	}
	cfg.Groups[0].Plans = append(cfg.Groups[0].Plans, Host)
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "replay:nice does not run on host") {
		t.Errorf("a replay on the host: %v", err)
	}
}

// A chart's file name keeps a workload's name where it can, and turns what has no place in
// a relative URL into hyphens.
func TestChartName(t *testing.T) {
	for workload, want := range map[string]string{"fork-exit": "throughput-fork-exit", "replay:make": "throughput-replay-make",
		"replay:a b/c.d_e": "throughput-replay-a-b-c.d_e"} {
		if got := chartName("throughput", workload); got != want {
			t.Errorf("chartName(%q) = %q, want %q", workload, got, want)
		}
	}
}
