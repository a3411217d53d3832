package bench

import (
	"math"
	"slices"

	"golang.org/x/perf/benchmath"
	"gonum.org/v1/gonum/stat/distuv"
)

// Confidence is the level of every interval the reports give.
const Confidence = 0.95

// Alpha is the significance level of the comparisons: a change is marked
// significant when the U test's p-value is below it.
const Alpha = 0.05

// Summary sums up one point's repetitions.
type Summary struct {
	// Kind names Center: "Hmean" (the harmonic mean) for rates, "Amean"
	// (the arithmetic mean) for latencies, as mmtests reports them.
	Kind   string
	Center float64
	// Lo and Hi bound the Confidence interval of Center (Student's t on
	// the reciprocals for a harmonic mean); Hi is +Inf when the interval
	// is unbounded. With a single repetition both equal Center.
	Lo, Hi float64
	// Min and Max are the extreme repetitions.
	Min, Max float64
	N        int
}

// Summarize sums up values, which are rates when higherIsBetter and
// latencies otherwise. It returns the zero Summary for no values.
func Summarize(values []float64, higherIsBetter bool) Summary {
	if len(values) == 0 {
		return Summary{}
	}
	s := Summary{Kind: "Amean", N: len(values), Min: slices.Min(values), Max: slices.Max(values)}
	if higherIsBetter {
		s.Kind = "Hmean"
		if s.Min <= 0 {
			// A repetition that did nothing: the harmonic mean is 0 and
			// the interval unbounded above.
			s.Hi = math.Inf(1)
			return s
		}
		recip := make([]float64, len(values))
		for i, v := range values {
			recip[i] = 1 / v
		}
		m, half := meanInterval(recip)
		s.Center = 1 / m
		s.Lo = 1 / (m + half)
		s.Hi = math.Inf(1)
		if m > half {
			s.Hi = 1 / (m - half)
		}
		return s
	}
	m, half := meanInterval(values)
	s.Center, s.Lo, s.Hi = m, m-half, m+half
	return s
}

// Hmean returns the harmonic mean of values, 0 for none or when one is
// not positive.
func Hmean(values []float64) float64 {
	if len(values) == 0 || slices.Min(values) <= 0 {
		return 0
	}
	sum := 0.0
	for _, v := range values {
		sum += 1 / v
	}
	return float64(len(values)) / sum
}

// meanInterval returns the mean of xs and the half-width of its
// Confidence interval by Student's t (0 for a single value).
func meanInterval(xs []float64) (mean, half float64) {
	n := float64(len(xs))
	for _, x := range xs {
		mean += x
	}
	mean /= n
	if len(xs) < 2 {
		return mean, 0
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / (n - 1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(1 - (1-Confidence)/2)
	return mean, t * sd / math.Sqrt(n)
}

// Comparison is one point against the same point of the base plan.
type Comparison struct {
	// ChangePct is the change of the center in percent, positive when
	// better: a higher rate or a lower latency.
	ChangePct float64
	// P is the two-sided p-value of the Mann-Whitney U test (benchmath's
	// non-parametric comparison) that the two sets of repetitions come
	// from one distribution.
	P float64
	// Significant is P < Alpha.
	Significant bool
}

// Compare compares values against base, both sets of repetitions of
// figures where higherIsBetter says which direction is better.
func Compare(base, values []float64, higherIsBetter bool) Comparison {
	b, v := Summarize(base, higherIsBetter), Summarize(values, higherIsBetter)
	c := Comparison{}
	if b.Center != 0 && v.Center != 0 {
		if higherIsBetter {
			c.ChangePct = (v.Center/b.Center - 1) * 100
		} else {
			c.ChangePct = (b.Center/v.Center - 1) * 100
		}
	}
	thresholds := benchmath.DefaultThresholds
	thresholds.CompareAlpha = Alpha
	cmp := benchmath.AssumeNothing.Compare(benchmath.NewSample(base, &thresholds), benchmath.NewSample(values, &thresholds))
	c.P = cmp.P
	c.Significant = cmp.P < Alpha
	return c
}

// RobustMedian returns the median of xs after removing, once, the values
// more than three standard deviations from their mean, as libMicro does
// with its samples. It returns 0 for no values.
func RobustMedian(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	m, sd := 0.0, 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	for _, x := range xs {
		sd += (x - m) * (x - m)
	}
	sd = math.Sqrt(sd / float64(len(xs)))
	kept := make([]float64, 0, len(xs))
	for _, x := range xs {
		if math.Abs(x-m) <= 3*sd {
			kept = append(kept, x)
		}
	}
	slices.Sort(kept)
	if n := len(kept); n%2 == 1 {
		return kept[n/2]
	} else {
		return (kept[n/2-1] + kept[n/2]) / 2
	}
}

// USL is a fit of the Universal Scalability Law,
// X(N) = λN / (1 + σ(N−1) + κN(N−1)).
type USL struct {
	// Sigma is contention (the serial share), Kappa coherency (the cost
	// of keeping shared data consistent, which makes throughput fall
	// past a peak).
	Sigma, Kappa float64
}

// gunther returns Gunther's linearisation of throughputs xs measured at
// worker counts ns: with C(N) = X(N)/X(1), the points x = N−1,
// y = N/C(N) − 1. ok is false with fewer than least worker counts, no
// measurement at one worker, or a throughput that is not positive.
func gunther(ns []int, xs []float64, least int) (x, y []float64, ok bool) {
	if len(ns) != len(xs) || len(ns) < least {
		return nil, nil, false
	}
	x1 := 0.0
	for i, n := range ns {
		if n == 1 {
			x1 = xs[i]
		}
	}
	if x1 <= 0 || slices.Min(xs) <= 0 {
		return nil, nil, false
	}
	for i, n := range ns {
		x = append(x, float64(n-1))
		y = append(y, float64(n)/(xs[i]/x1)-1)
	}
	return x, y, true
}

// FitUSL fits σ and κ to throughputs measured at worker counts ns (which
// must include 1) by Gunther's linearisation, fitting y = κx² + (σ+κ)x
// by least squares through the origin. ok is false with fewer than four
// worker counts or no measurement at one worker.
func FitUSL(ns []int, xs []float64) (fit USL, ok bool) {
	x, y, ok := gunther(ns, xs, 4)
	if !ok {
		return USL{}, false
	}
	var s4, s3, s2, s2y, s1y float64
	for i := range x {
		s4 += x[i] * x[i] * x[i] * x[i]
		s3 += x[i] * x[i] * x[i]
		s2 += x[i] * x[i]
		s2y += x[i] * x[i] * y[i]
		s1y += x[i] * y[i]
	}
	det := s4*s2 - s3*s3
	if det == 0 {
		return USL{}, false
	}
	a := (s2y*s2 - s3*s1y) / det // κ
	b := (s4*s1y - s3*s2y) / det // σ+κ
	return USL{Sigma: b - a, Kappa: a}, true
}

// FitContention fits the contention term σ alone, with κ = 0, to
// throughputs measured at two or more worker counts ns (one of them 1):
// Gunther's linearisation through the origin, y = σx. With 1 and 2
// workers it is σ = 2/C(2) − 1, the 1 → 2 ratio's. A speedup above
// linear gives σ = 0. ok is false without a measurement at one worker
// and another.
func FitContention(ns []int, xs []float64) (fit USL, ok bool) {
	x, y, ok := gunther(ns, xs, 2)
	if !ok {
		return USL{}, false
	}
	var sxx, sxy float64
	for i := range x {
		sxx += x[i] * x[i]
		sxy += x[i] * y[i]
	}
	if sxx == 0 {
		return USL{}, false
	}
	return USL{Sigma: max(sxy/sxx, 0)}, true
}

// Speedup returns the fit's relative capacity C(N) = X(N)/X(1).
func (u USL) Speedup(n int) float64 {
	N := float64(n)
	return N / (1 + u.Sigma*(N-1) + u.Kappa*N*(N-1))
}

// AmdahlSpeedup returns Amdahl's speedup at n workers for a serial
// fraction s; its limit as n grows is 1/s.
func AmdahlSpeedup(s float64, n int) float64 {
	N := float64(n)
	return N / (1 + s*(N-1))
}

// ProjectedCores are the core counts the projection reports.
var ProjectedCores = []int{8, 64, 128}
