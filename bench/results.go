package bench

import (
	"bufio"
	"cmp"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/workload"
)

// Results is what a sweep measured.
type Results struct {
	Env     Env
	Workers []int
	Reps    int
	Timing  Timing
	// Groups are the sweep's workloads with their plans, in order.
	Groups []GroupInfo
	Points []*Point
	// Interrupted is set when the sweep was stopped before its end.
	Interrupted bool
	// Seeds holds the seed table, for a sweep of the seeds' claims.
	Seeds []SeedResult
}

// GroupInfo describes a workload of the sweep.
type GroupInfo struct {
	Workload       string
	Unit           string
	HigherIsBetter bool
	Plans          []string
	Summary        string
	HostNote       string
}

// Env describes the machine and the program that measured.
type Env struct {
	GOMAXPROCS int    `json:"gomaxprocs"`
	Cores      int    `json:"cores"`
	GoVersion  string `json:"go"`
	// Kernel is the host's kernel release (uname -r).
	Kernel string `json:"kernel"`
	CPU    string `json:"cpu,omitempty"`
	GOOS   string `json:"goos"`
	GOARCH string `json:"goarch"`
	// GOGC is the GOGC environment variable, "default" when unset.
	GOGC string    `json:"gogc"`
	Date time.Time `json:"date"`
}

// Point is one workload on one plan at one worker count, over its
// repetitions.
type Point struct {
	Workload       string
	Plan           string
	Workers        int
	Unit           string
	HigherIsBetter bool
	// Values holds the figure of each repetition, in order.
	Values []float64
	// Allocs and Bytes hold the heap allocations per iteration of each
	// repetition (none for the host).
	Allocs []float64
	Bytes  []float64
	// Loads holds the other work that ran beside each repetition, in
	// CPUs (-1 where unknown).
	Loads []float64
	// Notes say where a host run differed from the model's workload.
	Notes []string
	// Locks is the lock profile, when lock statistics were gathered.
	Locks *LockProfile
	// Err is why the host could not run the point.
	Err string
}

// CurrentEnv describes this machine and program.
func CurrentEnv() Env {
	e := Env{GOMAXPROCS: runtime.GOMAXPROCS(0), Cores: runtime.NumCPU(), GoVersion: runtime.Version(),
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GOGC: cmp.Or(os.Getenv("GOGC"), "default"), Date: time.Now().UTC().Truncate(time.Second)}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		e.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	e.CPU = cpuModel()
	return e
}

// cpuModel returns the processor's name from /proc/cpuinfo, or "".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func newResults(cfg Config) *Results {
	r := &Results{Env: CurrentEnv(), Workers: slices.Clone(cfg.Workers), Reps: cfg.Reps, Timing: cfg.Timing}
	for _, g := range cfg.Groups {
		r.Groups = append(r.Groups, GroupInfo{Workload: g.Workload.Name, Unit: g.Workload.Unit.Name,
			HigherIsBetter: g.Workload.Unit.HigherIsBetter(), Plans: slices.Clone(g.Plans),
			Summary: g.Workload.Summary, HostNote: g.Workload.HostNote})
		for _, n := range cfg.Workers {
			for _, p := range g.Plans {
				r.Points = append(r.Points, &Point{Workload: g.Workload.Name, Plan: p, Workers: n,
					Unit: g.Workload.Unit.Name, HigherIsBetter: g.Workload.Unit.HigherIsBetter()})
			}
		}
	}
	return r
}

// Measured reports whether the sweep measured anything: a repetition of
// some point.
func (r *Results) Measured() bool {
	return slices.ContainsFunc(r.Points, func(pt *Point) bool { return len(pt.Values) > 0 })
}

// point returns the point of w on plan p at n workers.
func (r *Results) point(w *workload.Workload, p string, n int) *Point { return r.Point(w.Name, p, n) }

// Point returns the point of a workload on a plan at n workers, or nil.
func (r *Results) Point(workload, plan string, n int) *Point {
	for _, pt := range r.Points {
		if pt.Workload == workload && pt.Plan == plan && pt.Workers == n {
			return pt
		}
	}
	return nil
}

func (p *Point) add(m measurement) {
	p.Values = append(p.Values, m.value)
	p.Loads = append(p.Loads, m.load)
	if p.Plan != Host {
		p.Allocs = append(p.Allocs, m.allocs)
		p.Bytes = append(p.Bytes, m.bytes)
	}
	for _, n := range m.notes {
		if !slices.Contains(p.Notes, n) {
			p.Notes = append(p.Notes, n)
		}
	}
}

// Summary sums up the point's repetitions.
func (p *Point) Summary() Summary { return Summarize(p.Values, p.HigherIsBetter) }

// AllocsPerOp returns the mean heap allocations and bytes per iteration.
func (p *Point) AllocsPerOp() (allocs, bytes float64) { return mean(p.Allocs), mean(p.Bytes) }

// OtherLoad returns the mean other work beside the repetitions, in CPUs;
// ok is false when it is unknown.
func (p *Point) OtherLoad() (load float64, ok bool) {
	if len(p.Loads) == 0 || slices.Min(p.Loads) < 0 {
		return 0, false
	}
	return mean(p.Loads), true
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Base returns the point p is compared with: the same workload and
// worker count on the first model plan of its group. It returns nil for
// that plan itself, for the host, which is never compared, and when the
// base has no values.
func (r *Results) Base(p *Point) *Point {
	if p.Plan == Host {
		return nil
	}
	for _, g := range r.Groups {
		if g.Workload != p.Workload {
			continue
		}
		for _, name := range g.Plans {
			if name == Host {
				continue
			}
			if name == p.Plan {
				return nil
			}
			if b := r.Point(p.Workload, name, p.Workers); b != nil && len(b.Values) > 0 {
				return b
			}
			return nil
		}
	}
	return nil
}

// Compare compares p with its base; ok is false when it has none.
func (r *Results) Compare(p *Point) (c Comparison, ok bool) {
	b := r.Base(p)
	if b == nil || len(p.Values) == 0 {
		return Comparison{}, false
	}
	return Compare(b.Values, p.Values, p.HigherIsBetter), true
}

// Projection is how far a workload on a plan would scale past this
// machine: a projection from the measured points, not a measurement.
type Projection struct {
	Workload string
	Plan     string
	// Ns are the worker counts measured beside one worker and Speedups
	// the measured speedup over one worker at each.
	Ns       []int
	Speedups []float64
	// Fit is the Universal Scalability Law fitted to the measured
	// speedups (FitSpeedups): σ and κ with four or more worker counts
	// (FitKind "USL"); with two or three, the contention term σ alone,
	// κ = 0 (FitKind "contention"; with 1 and 2 workers σ = 2/C(2) − 1);
	// FitKind is "" when scaling was not measured.
	Fit     USL
	FitKind string
	// Serial is the serial fraction at the largest worker count with a
	// lock profile, and Amdahl 1/Serial, the bound on any speedup.
	Serial      float64
	SerialClass string
	HasSerial   bool
	Amdahl      float64
	// Shared and SharedPerOp are the lock profile's shared class, at the
	// largest worker count with a profile (LockProfile.Shared).
	Shared      string
	SharedPerOp float64
	// ContradictedAt is the first worker count at which Amdahl's
	// speedup from the serial fraction exceeds the measured speedup, 0
	// if none: what limits the workload there is not that lock, and the
	// bound is no bound.
	ContradictedAt int
	// Cores are ProjectedCores; FitSpeedup and AmdahlSpeedup the
	// projected speedups over one worker there, the fit's no larger
	// than Amdahl's.
	Cores         []int
	FitSpeedup    []float64
	AmdahlSpeedup []float64
}

// Projections returns the projection of every model plan of every
// throughput workload that has either measured scaling or a lock profile.
func (r *Results) Projections() []Projection {
	var out []Projection
	for _, g := range r.Groups {
		if !g.HigherIsBetter {
			continue
		}
		for _, p := range g.Plans {
			if p == Host {
				continue
			}
			if pr, ok := r.project(g.Workload, p); ok {
				out = append(out, pr)
			}
		}
	}
	return out
}

// project returns the projection of workload on plan.
func (r *Results) project(workload, plan string) (Projection, bool) {
	pr := Projection{Workload: workload, Plan: plan, Cores: ProjectedCores}
	base := 0.0
	if one := r.Point(workload, plan, 1); one != nil && len(one.Values) > 0 {
		base = Hmean(one.Values)
	}
	ns, cs := []int{1}, []float64{1}
	for _, n := range r.Workers {
		pt := r.Point(workload, plan, n)
		if pt == nil {
			continue
		}
		if n != 1 && len(pt.Values) > 0 && base > 0 {
			pr.Ns = append(pr.Ns, n)
			pr.Speedups = append(pr.Speedups, Hmean(pt.Values)/base)
			ns, cs = append(ns, n), append(cs, Hmean(pt.Values)/base)
		}
		if l := pt.Locks; l != nil {
			pr.Serial, pr.SerialClass, pr.HasSerial = l.Serial, l.SerialClass, true
			pr.Amdahl = l.AmdahlBound()
			pr.Shared, pr.SharedPerOp = l.Shared, l.SharedPerOp
		}
	}
	if fit, ok := FitUSL(ns, cs); ok {
		pr.Fit, pr.FitKind = fit, "USL"
	} else if fit, ok := FitContention(ns, cs); ok {
		pr.Fit, pr.FitKind = fit, "contention"
	}
	if pr.FitKind == "" && !pr.HasSerial {
		return pr, false
	}
	if pr.HasSerial {
		for i, n := range pr.Ns {
			if AmdahlSpeedup(pr.Serial, n) > pr.Speedups[i] {
				pr.ContradictedAt = n
				break
			}
		}
	}
	for _, c := range ProjectedCores {
		if pr.HasSerial {
			pr.AmdahlSpeedup = append(pr.AmdahlSpeedup, AmdahlSpeedup(pr.Serial, c))
		}
		if pr.FitKind != "" {
			pr.FitSpeedup = append(pr.FitSpeedup, pr.At(c))
		}
	}
	return pr, true
}

// At returns the projected speedup at c cores: the fit's where there is
// one, which follows the measurement and which the serial lock bounds
// all the same, else Amdahl's.
func (pr Projection) At(c int) float64 {
	bound := math.Inf(1)
	if pr.HasSerial {
		bound = AmdahlSpeedup(pr.Serial, c)
	}
	if pr.FitKind == "" {
		return bound
	}
	return min(pr.Fit.Speedup(c), bound)
}
