package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"tasklist/bench/host"
	"tasklist/kernel/pid"
	"tasklist/lockstat"
	"tasklist/workload"
)

// Config is a sweep: which workloads run on which plans, at which worker
// counts, how often and for how long.
type Config struct {
	// Groups say which plans each workload runs on. The first plan of a
	// group is the base its other model plans are compared with.
	Groups  []Group
	Workers []int
	// Reps is how many times each point is measured. The repetitions
	// are interleaved: the first of every point, then the second, and
	// so on, so that a disturbance of the machine falls on every plan
	// alike. Within a repetition the model plans of a point run in an
	// order shuffled afresh each time (seeded, so a sweep is
	// reproducible), so that no plan always runs first or always after
	// the same one; the host runs last.
	Reps   int
	Timing Timing
	// Population is get's population (workload.Env.Population).
	Population int
	// Mix is the mix's workfile; nil for the default.
	Mix *workload.Mix
	// LockStats adds, after the timed repetitions, one run of every
	// model point with lock statistics on.
	LockStats bool
	// MaxLoad, when positive, is the most other work (in CPUs, as
	// otherLoad measures it) a repetition may run beside: one that ran
	// beside more is run again, up to maxAttempts times in all, and the
	// quietest attempt is kept.
	MaxLoad float64
	// Progress, if set, is called before each run.
	Progress func(Progress)
}

// Group is a workload and the plans it runs on.
type Group struct {
	Workload *workload.Workload
	Plans    []string
}

// Progress says where a sweep is.
type Progress struct {
	// Done runs of Total have finished.
	Done, Total int
	Workload    string
	Plan        string
	Workers     int
	// Rep is the repetition about to run, from 1; 0 for a
	// lock-statistics run.
	Rep int
}

// MaxWorkers bounds a sweep's worker counts.
const MaxWorkers = 1024

// Validate checks the configuration.
func (c *Config) Validate() error {
	switch {
	case len(c.Groups) == 0:
		return errors.New("no workloads")
	case len(c.Workers) == 0:
		return errors.New("no worker counts")
	case c.Reps < 1:
		return fmt.Errorf("%d repetitions: want at least 1", c.Reps)
	case c.Timing.Sample <= 0 || c.Timing.Warmup < 0:
		return errors.New("the sample must last some time and the warm-up must not be negative")
	case c.Timing.Samples < 1 || c.Timing.Samples > maxSamples:
		return fmt.Errorf("%d samples: want 1 to %d", c.Timing.Samples, maxSamples)
	case c.Population > workload.MaxPopulation:
		return fmt.Errorf("a population of %d: at most %d (the model's pid space holds %d tasks, the workers' included)",
			c.Population, workload.MaxPopulation, pid.DefaultMax-1)
	case !(c.MaxLoad >= 0) || math.IsInf(c.MaxLoad, 1):
		return fmt.Errorf("a maximum load of %v CPUs: want 0 (off) or a positive number", c.MaxLoad)
	}
	for _, n := range c.Workers {
		if n < 1 || n > MaxWorkers {
			return fmt.Errorf("%d workers: want 1 to %d", n, MaxWorkers)
		}
	}
	for _, g := range c.Groups {
		if len(g.Plans) == 0 {
			return fmt.Errorf("workload %s: no plans", g.Workload.Name)
		}
		for _, p := range g.Plans {
			if _, err := newTarget(p); err != nil {
				return err
			}
			if p == Host && g.Workload.NotOnHost != "" {
				return fmt.Errorf("workload %s does not run on %s: %s", g.Workload.Name, Host, g.Workload.NotOnHost)
			}
		}
	}
	return nil
}

// Run runs the sweep. When ctx is cancelled it stops at once, drops the
// run in progress and returns what was measured until then, with
// Interrupted set and a nil error. An error is returned for a failed
// model run (a bug); a failed host run is recorded on its point, which
// is not run again.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	defer lockstat.SetChecking(lockstat.SetChecking(false))
	r := newResults(cfg)
	total := 0
	for _, g := range cfg.Groups {
		for _, p := range g.Plans {
			total += len(cfg.Workers) * cfg.Reps
			if cfg.LockStats && p != Host {
				total += len(cfg.Workers)
			}
		}
	}
	done := 0
	step := func(g Group, p string, n, rep int) {
		if cfg.Progress != nil {
			cfg.Progress(Progress{Done: done, Total: total, Workload: g.Workload.Name, Plan: p, Workers: n, Rep: rep})
		}
		done++
	}
	order := rand.New(rand.NewPCG(1, 2))
	for rep := 1; rep <= cfg.Reps; rep++ {
		for _, g := range cfg.Groups {
			for _, n := range cfg.Workers {
				for _, p := range runOrder(g.Plans, order) {
					step(g, p, n, rep)
					pt := r.point(g.Workload, p, n)
					if pt.Err != "" {
						continue
					}
					m, err := runQuietly(ctx, &cfg, g.Workload, p, n)
					switch {
					case ctx.Err() != nil:
						r.Interrupted = true
						return r, nil
					case err != nil && p == Host:
						pt.Err = err.Error()
						continue
					case err != nil:
						return r, err
					}
					pt.add(m)
				}
			}
		}
	}
	if !cfg.LockStats {
		return r, nil
	}
	for _, g := range cfg.Groups {
		for _, n := range cfg.Workers {
			for _, p := range g.Plans {
				if p == Host {
					continue
				}
				step(g, p, n, 0)
				m, err := runPoint(ctx, &cfg, g.Workload, p, n, true)
				switch {
				case ctx.Err() != nil:
					r.Interrupted = true
					return r, nil
				case err != nil:
					return r, err
				}
				r.point(g.Workload, p, n).Locks = m.locks
			}
		}
	}
	return r, nil
}

// runOrder returns plans in the order one repetition of a point runs
// them: the model plans shuffled by rng, then the host.
func runOrder(plans []string, rng *rand.Rand) []string {
	var model []string
	for _, p := range plans {
		if p != Host {
			model = append(model, p)
		}
	}
	rng.Shuffle(len(model), func(i, j int) { model[i], model[j] = model[j], model[i] })
	if len(model) < len(plans) {
		model = append(model, Host)
	}
	return model
}

// maxAttempts bounds the runs of one repetition under Config.MaxLoad.
const maxAttempts = 3

// runQuietly makes one repetition of a point: a run, repeated while
// others loaded the machine more than cfg.MaxLoad allows.
func runQuietly(ctx context.Context, cfg *Config, w *workload.Workload, p string, n int) (measurement, error) {
	m, err := runPoint(ctx, cfg, w, p, n, false)
	for attempt := 1; err == nil && cfg.MaxLoad > 0 && m.load > cfg.MaxLoad && attempt < maxAttempts; attempt++ {
		again, err := runPoint(ctx, cfg, w, p, n, false)
		if err != nil {
			return again, err
		}
		if again.load < m.load {
			m = again
		}
	}
	return m, err
}

// runPoint makes one run of workload w on plan p with n workers; with
// lockStats it is a single-sample run that gathers lock statistics.
func runPoint(ctx context.Context, cfg *Config, w *workload.Workload, p string, n int, lockStats bool) (measurement, error) {
	t, err := newTarget(p)
	if err != nil {
		return measurement{}, err
	}
	timing := cfg.Timing
	if lockStats {
		timing.Samples = 1
	}
	if t.host {
		return runHost(ctx, cfg, w, n)
	}
	kernels, err := t.kernels(n)
	if err != nil {
		return measurement{}, err
	}
	inst, err := w.Setup(&workload.Env{Kernels: kernels, Population: cfg.Population, Mix: cfg.Mix})
	if err != nil {
		return measurement{}, err
	}
	settle()
	if !lockStats {
		return runModel(ctx, w, inst, timing, nil)
	}
	rec := &lockRecorder{workers: n}
	m, err := runModel(ctx, w, inst, timing, rec.phase)
	m.locks = rec.profile(m.iterations)
	return m, err
}

// runHost runs w on the host kernel.
func runHost(ctx context.Context, cfg *Config, w *workload.Workload, n int) (measurement, error) {
	spec := host.Spec{Workload: w.Name, Workers: n, Warmup: cfg.Timing.Warmup, Sample: cfg.Timing.Sample,
		Samples: cfg.Timing.Samples, Population: cfg.Population}
	switch {
	case spec.Population == 0:
		spec.Population = workload.DefaultPopulation
	case spec.Population < 0:
		spec.Population = 0
	}
	mix := cfg.Mix
	if mix == nil {
		mix = workload.DefaultMix()
	}
	spec.Mix = mix.String()
	cpuBefore := readCPU(true)
	res, err := host.Run(ctx, spec)
	if err != nil {
		return measurement{}, err
	}
	m := measurement{load: otherLoad(cpuBefore, readCPU(true))}
	var elapsed time.Duration
	var lat []float64
	for _, s := range res.Samples {
		elapsed += s.Length
		for _, c := range s.Counts {
			m.iterations += c
		}
		for _, d := range s.Latencies {
			lat = append(lat, d.Seconds()*1e6)
		}
	}
	if w.Unit.HigherIsBetter() {
		m.value = float64(m.iterations) * float64(w.PerOp) / elapsed.Seconds() * w.Unit.PerSecond
	} else {
		m.value = RobustMedian(lat)
	}
	m.notes = res.Notes
	return m, nil
}
