package bench

import (
	"math"
	"testing"
	"time"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// TestSummarizeHmean: the harmonic mean and its interval, computed by
// hand: reciprocals 1/2, 1/4, 1/4 have mean 1/3 and standard deviation
// √(1/48); t(0.975, 2) = 4.302653.
func TestSummarizeHmean(t *testing.T) {
	s := Summarize([]float64{2, 4, 4}, true)
	half := 4.302653 * math.Sqrt(1.0/48) / math.Sqrt(3)
	if s.Kind != "Hmean" || !near(s.Center, 3, 1e-12) || s.Min != 2 || s.Max != 4 || s.N != 3 {
		t.Fatalf("%+v", s)
	}
	if !near(s.Lo, 1/(1.0/3+half), 1e-6) || !math.IsInf(s.Hi, 1) && !near(s.Hi, 1/(1.0/3-half), 1e-6) {
		t.Fatalf("interval [%v, %v], want [%v, %v]", s.Lo, s.Hi, 1/(1.0/3+half), 1/(1.0/3-half))
	}
	if Hmean([]float64{2, 4, 4}) != s.Center {
		t.Fatal("Hmean and Summarize disagree")
	}
	zero := Summarize([]float64{0, 4}, true)
	if zero.Center != 0 || zero.Lo != 0 || !math.IsInf(zero.Hi, 1) || Hmean([]float64{0, 4}) != 0 {
		t.Fatalf("a repetition with nothing done: %+v", zero)
	}
	one := Summarize([]float64{5}, true)
	if one.Center != 5 || one.Lo != 5 || one.Hi != 5 {
		t.Fatalf("one value: %+v", one)
	}
}

// TestSummarizeAmean: a latency's center is the arithmetic mean with a
// t interval: 1, 2, 3 → 2 ± 4.302653 × 1/√3.
func TestSummarizeAmean(t *testing.T) {
	s := Summarize([]float64{1, 2, 3}, false)
	half := 4.302653 / math.Sqrt(3)
	if s.Kind != "Amean" || s.Center != 2 || !near(s.Lo, 2-half, 1e-6) || !near(s.Hi, 2+half, 1e-6) {
		t.Fatalf("%+v", s)
	}
}

// TestCompareUTest: two sets of five that do not overlap give the exact
// two-sided Mann-Whitney p-value 2/C(10,5) = 2/252; identical sets are
// not significant; the change's sign says better or worse in either
// direction of figure.
func TestCompareUTest(t *testing.T) {
	lo, hi := []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}
	c := Compare(lo, hi, true)
	if !near(c.P, 2.0/252, 1e-9) || !c.Significant {
		t.Fatalf("p = %v, want %v", c.P, 2.0/252)
	}
	if want := (Hmean(hi)/Hmean(lo) - 1) * 100; !near(c.ChangePct, want, 1e-12) {
		t.Fatalf("change %v, want %v", c.ChangePct, want)
	}
	if lat := Compare(lo, hi, false); lat.ChangePct >= 0 {
		t.Fatalf("higher latency reported as better: %v", lat.ChangePct)
	}
	same := Compare(lo, lo, true)
	if same.Significant || same.ChangePct != 0 {
		t.Fatalf("identical sets: %+v", same)
	}
	// Interleaved sets: U = 10 of 25, p = 0.690 (exact).
	mixed := Compare([]float64{1, 3, 5, 7, 9}, []float64{2, 4, 6, 8, 10}, true)
	if mixed.Significant || !near(mixed.P, 0.690476, 1e-5) {
		t.Fatalf("interleaved: p = %v, want 0.690476", mixed.P)
	}
}

// TestRobustMedian: a value beyond three standard deviations is dropped
// before the median is taken; without one the plain median is returned.
func TestRobustMedian(t *testing.T) {
	xs := make([]float64, 0, 21)
	for i := range 20 {
		xs = append(xs, 10+float64(i%2))
	}
	xs = append(xs, 1000)
	// With the outlier the median is 11 (11 of 21 values are ≥ 11);
	// without it the twenty values split evenly: (10+11)/2.
	if got := RobustMedian(xs); got != 10.5 {
		t.Fatalf("RobustMedian = %v, want 10.5", got)
	}
	if got := RobustMedian([]float64{3, 1, 2}); got != 2 {
		t.Fatalf("RobustMedian = %v, want 2", got)
	}
}

// TestFitUSLRecoversKnownParameters: throughputs generated from the USL
// with known σ and κ are fitted back exactly.
func TestFitUSLRecoversKnownParameters(t *testing.T) {
	for _, want := range []USL{{Sigma: 0.05, Kappa: 0.001}, {Sigma: 0.2, Kappa: 0}, {Sigma: 0.01, Kappa: 0.02}} {
		ns := []int{1, 2, 4, 8, 16}
		xs := make([]float64, len(ns))
		for i, n := range ns {
			xs[i] = 1234 * want.Speedup(n)
		}
		got, ok := FitUSL(ns, xs)
		if !ok || !near(got.Sigma, want.Sigma, 1e-9) || !near(got.Kappa, want.Kappa, 1e-9) {
			t.Fatalf("fit %+v, %v; want %+v", got, ok, want)
		}
	}
	if _, ok := FitUSL([]int{1, 2, 4}, []float64{1, 2, 3}); ok {
		t.Fatal("a fit from three worker counts")
	}
	if _, ok := FitUSL([]int{2, 3, 4, 5}, []float64{1, 2, 3, 4}); ok {
		t.Fatal("a fit without one worker")
	}
}

// TestFitContention: with one and two workers σ comes from the 1 → 2
// ratio and reproduces it; with more worker counts it is the least
// squares fit of σ alone; a superlinear speedup fits σ = 0.
func TestFitContention(t *testing.T) {
	fit, ok := FitContention([]int{1, 2}, []float64{6.4e6, 3.8e6})
	if want := 2/(3.8/6.4) - 1; !ok || !near(fit.Sigma, want, 1e-12) || fit.Kappa != 0 {
		t.Fatalf("fit %+v, %v; want σ %v", fit, ok, want)
	}
	if got := fit.Speedup(2); !near(got, 3.8/6.4, 1e-12) {
		t.Fatalf("the fit gives %v at 2 workers, %v was measured", got, 3.8/6.4)
	}
	want := USL{Sigma: 0.1}
	fit, ok = FitContention([]int{1, 2, 3}, []float64{10, 10 * want.Speedup(2), 10 * want.Speedup(3)})
	if !ok || !near(fit.Sigma, 0.1, 1e-9) {
		t.Fatalf("fit %+v, %v; want σ 0.1", fit, ok)
	}
	if fit, ok := FitContention([]int{1, 2}, []float64{1, 2.1}); !ok || fit.Sigma != 0 {
		t.Fatalf("superlinear: fit %+v, %v; want σ 0", fit, ok)
	}
	for _, ns := range [][]int{{1}, {2, 4}} {
		if _, ok := FitContention(ns, make([]float64, len(ns))); ok {
			t.Fatalf("a fit from worker counts %v", ns)
		}
	}
}

// TestAmdahl: speedup at n for serial fraction s, and its limit.
func TestAmdahl(t *testing.T) {
	if got := AmdahlSpeedup(0.1, 10); !near(got, 10/1.9, 1e-12) {
		t.Fatalf("AmdahlSpeedup(0.1, 10) = %v", got)
	}
	if got := AmdahlSpeedup(0, 64); got != 64 {
		t.Fatalf("no serial part: %v", got)
	}
}

// TestOtherLoad: others' work is the machine's busy time less the
// program's own, over the wall time; unknown without /proc/stat.
func TestOtherLoad(t *testing.T) {
	t0 := time.Unix(100, 0)
	before := cpuReading{at: t0, busy: 10 * time.Second, own: time.Second, ok: true}
	after := cpuReading{at: t0.Add(2 * time.Second), busy: 13 * time.Second, own: 2 * time.Second, ok: true}
	if got := otherLoad(before, after); got != 1 {
		t.Fatalf("otherLoad = %v, want 1 CPU (3 s busy, 1 s ours, over 2 s)", got)
	}
	after.ok = false
	if got := otherLoad(before, after); got != -1 {
		t.Fatalf("otherLoad without /proc/stat = %v, want -1", got)
	}
	if r := readCPU(false); r.ok && r.busy <= 0 {
		t.Fatalf("a reading of a running machine: %+v", r)
	}
}
