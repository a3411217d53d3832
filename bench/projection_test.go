package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"tasklist/workload"
)

// twoWorkerCounts returns results of get on linux-2.6.35 measured at one
// and two workers, 6.4M and 3.8M ops/s, where the lock statistics saw no
// serial time: readers of one reader-writer lock never wait for each
// other, though they pass its line between them.
func twoWorkerCounts(t *testing.T, workers []int) *Results {
	t.Helper()
	get, _ := workload.Named("get")
	r := newResults(Config{Groups: []Group{{Workload: get, Plans: []string{"linux-2.6.35"}}},
		Workers: workers, Reps: 3, Timing: tinyTiming})
	for _, pt := range r.Points {
		v := map[int]float64{1: 6.4e6, 2: 3.8e6}[pt.Workers]
		for i := range 3 {
			pt.add(measurement{value: v * (1 + 0.001*float64(i))})
		}
		pt.Locks = lockProfile([]classTimes{{name: "plan.tasklist_lock", acquisitions: 4000, bounces: 3000}},
			pt.Workers, time.Second, 1000)
	}
	return r
}

// TestProjectionFollowsMeasurement: with one and two workers measured,
// the projection is the contention term fitted to the 1 → 2 ratio, which
// gives back the measured speedup; Amdahl's bound from a serial fraction
// of 0 is printed as contradicted, never as a projection.
func TestProjectionFollowsMeasurement(t *testing.T) {
	r := twoWorkerCounts(t, []int{1, 2})
	prs := r.Projections()
	if len(prs) != 1 {
		t.Fatalf("%d projections", len(prs))
	}
	pr := prs[0]
	measured := Hmean(r.Point("get", "linux-2.6.35", 2).Values) / Hmean(r.Point("get", "linux-2.6.35", 1).Values)
	if pr.FitKind != "contention" || !near(pr.Fit.Speedup(2), measured, 1e-9) {
		t.Fatalf("fit %s %+v gives %v at 2, measured %v", pr.FitKind, pr.Fit, pr.Fit.Speedup(2), measured)
	}
	if !pr.HasSerial || !math.IsInf(pr.Amdahl, 1) || pr.ContradictedAt != 2 {
		t.Fatalf("serial %v (%v), bound %v, contradicted at %d; want a contradicted ∞ at 2", pr.Serial, pr.HasSerial, pr.Amdahl, pr.ContradictedAt)
	}
	for i, c := range pr.Cores {
		if pr.FitSpeedup[i] > measured {
			t.Fatalf("projected %v at %d cores, above the %v measured at 2", pr.FitSpeedup[i], c, measured)
		}
	}
	var buf bytes.Buffer
	r.WriteTable(&buf)
	out := buf.String()
	for _, want := range []string{"contention", "∞ ✗", "contradicted", " C", "Shared", "pass plan.tasklist_lock's line between them, 3 times an iteration"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, " A\n") || strings.Contains(out, "8.0 ") {
		t.Errorf("the table projects Amdahl's bound although scaling was measured:\n%s", out)
	}
	buf.Reset()
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Projs []struct {
			Fit          string `json:"fit"`
			Contradicted int    `json:"amdahl_contradicted_at"`
		} `json:"projections"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Projs) != 1 || doc.Projs[0].Fit != "contention" || doc.Projs[0].Contradicted != 2 {
		t.Fatalf("JSON projections %+v", doc.Projs)
	}
}

// TestProjectionAmdahlAlone: with one worker count measured, Amdahl's law
// from the serial fraction is all there is, and nothing contradicts it.
func TestProjectionAmdahlAlone(t *testing.T) {
	r := twoWorkerCounts(t, []int{1})
	for _, pt := range r.Points {
		pt.Locks.Serial, pt.Locks.SerialClass = 0.1, "plan.tasklist_lock"
	}
	prs := r.Projections()
	if len(prs) != 1 || prs[0].FitKind != "" || prs[0].ContradictedAt != 0 || !near(prs[0].AmdahlSpeedup[0], AmdahlSpeedup(0.1, 8), 1e-12) {
		t.Fatalf("projections %+v", prs)
	}
	var buf bytes.Buffer
	r.WriteTable(&buf)
	if out := buf.String(); !strings.Contains(out, "4.7 A") || strings.Contains(out, "✗") {
		t.Errorf("table:\n%s", out)
	}
}

// TestProjectionBoundedBySerial: a measured speedup above linear fits no
// contention, but the projection stays within Amdahl's bound from the
// serial fraction.
func TestProjectionBoundedBySerial(t *testing.T) {
	r := twoWorkerCounts(t, []int{1, 2})
	for _, pt := range r.Points {
		if pt.Workers == 2 {
			pt.Values = []float64{13e6, 13e6, 13e6}
		}
		pt.Locks.Serial, pt.Locks.SerialClass = 0.1, "plan.tasklist_lock"
	}
	pr := r.Projections()[0]
	if pr.Fit.Sigma != 0 || pr.ContradictedAt != 0 {
		t.Fatalf("fit %+v, contradicted at %d", pr.Fit, pr.ContradictedAt)
	}
	for i, c := range pr.Cores {
		if want := AmdahlSpeedup(0.1, c); pr.FitSpeedup[i] != want {
			t.Fatalf("projected %v at %d cores, want Amdahl's %v", pr.FitSpeedup[i], c, want)
		}
	}
}

// TestSharedClass: the profile names the class whose locks moved most
// between CPUs per iteration, reads and writes alike, and the share of
// its acquisitions that moved; classes without moves are not named.
func TestSharedClass(t *testing.T) {
	p := lockProfile([]classTimes{
		{name: "kernel.ThreadGroup.mu", acquisitions: 9000},
		{name: "kernel.ProcessGroup.mu", acquisitions: 4000, bounces: 1000},
		{name: "plan.tasklist_lock", acquisitions: 2000, bounces: 1500},
	}, 2, time.Second, 1000)
	if p.Shared != "plan.tasklist_lock" || p.SharedPerOp != 1.5 || p.SharedShare != 0.75 {
		t.Fatalf("shared %q %v/op %v of acquisitions", p.Shared, p.SharedPerOp, p.SharedShare)
	}
	if p := lockProfile([]classTimes{{name: "kernel.ThreadGroup.mu", acquisitions: 9000}}, 2, time.Second, 1000); p.Shared != "" {
		t.Fatalf("a class with no moves is named shared: %q", p.Shared)
	}
	if got := sharedCell(p); got != "1.5/it plan.tasklist_lock" {
		t.Fatalf("Shared cell %q", got)
	}
}
