package check

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"tasklist/lockstat"
	"tasklist/plan"
)

// Options says what Run checks and for how long.
type Options struct {
	// Plan is the lock plan every round's kernel runs under; nil is the
	// default, scalable.
	Plan *plan.Plan
	// Duration bounds the run; Run stops at the first violation or when
	// it is over. Zero means DefaultDuration.
	Duration time.Duration
	// Rounds, if positive, stops the run after that many rounds, even if
	// time is left.
	Rounds int
	// Workers is the number of goroutines making calls in each round's
	// burst, at most MaxWorkers; zero means two per GOMAXPROCS (at most
	// MaxWorkers). Past some tens of workers porcupine may not decide a
	// round in time: see Report.Undecided.
	Workers int
	// Steps is the number of random calls each worker makes in a round,
	// besides the races aimed at; zero means DefaultSteps.
	Steps int
	// Seed fixes the rounds: the same seed draws the same setups and the
	// same calls for each worker (the interleavings differ from run to
	// run). Zero draws a seed from the clock; the report gives it.
	Seed uint64
	// Progress, if not nil, receives a progress line: updated in place on
	// a terminal, a plain line every ten seconds otherwise.
	Progress io.Writer
	// Shrink bounds the search for a smaller failing round once a
	// violation is found; zero means DefaultShrink, negative no search.
	Shrink time.Duration
}

// Defaults for Options.
const (
	DefaultDuration = 60 * time.Second
	DefaultSteps    = 5
	DefaultShrink   = 20 * time.Second
)

// MaxWorkers bounds Options.Workers, as package bench bounds its workers: a
// round's setup makes a few processes per worker.
const MaxWorkers = 1024

// Report is what a run did and found.
type Report struct {
	Plan    string
	Seed    uint64
	Workers int
	// Rounds is how many rounds ran; Ops how many operations their
	// histories held, all checked.
	Rounds, Ops int
	// Undecided counts rounds whose history porcupine could not decide
	// in time; they are neither passed nor failed.
	Undecided int
	// Interrupted is set when the context ended the run: the round then
	// under way is not counted, and a violation found is reported as it
	// had been shrunk so far.
	Interrupted bool
	Elapsed     time.Duration
	// Violation is the first violation found, shrunk, or nil.
	Violation *Violation
	// FoundAfter is the time from the start to the violation's round.
	FoundAfter time.Duration
}

// Violation is a round that broke a rule.
type Violation struct {
	// Kind says which checks failed: "invariant", "linearizability",
	// "lock order", "hang" or "setup", several joined by commas.
	Kind string
	// Message says what failed: the invariant checker's findings, the
	// lock-order violations with their stacks, the calls that never
	// returned.
	Message string
	// Round is the number of the round in the run (from 0); RoundSeed is
	// the seed its schedule was drawn from.
	Round     int
	RoundSeed uint64
	// Goroutines and Calls are the size of the shrunk round that failed:
	// the goroutines that made calls in its burst, and the calls.
	Goroutines, Calls int

	setup, burst []record
	races        []int // the races in the partitions found not linearizable
	model        porcupine.Model
	info         porcupine.LinearizationInfo
}

// History returns the failing round: the table its setup made (the tasks
// the burst names, and the semaphore sets if it used them), then the burst
// in the order calls began, one line each: "[call,return] pid: call =
// result".
func (v *Violation) History() string {
	var b strings.Builder
	burst := v.shown()
	named := map[int]bool{}
	semaphores := false
	for _, r := range burst {
		semaphores = semaphores || r.c.kind.semaphore()
		for _, pid := range append([]int{r.c.caller, abs(r.c.pid), r.c.pgid}, r.c.pids...) {
			named[pid] = true
		}
		if r.c.kind == kClone || r.c.kind == kWait4 || r.c.kind == kWaitid {
			named[r.o.val] = true
		}
	}
	fmt.Fprintf(&b, "after the setup (%d calls, one at a time):\n", len(v.setup))
	init, err := initialState(v.setup)
	if err != nil {
		// The setup itself failed: show it call by call.
		for _, r := range v.setup {
			fmt.Fprintf(&b, "  %s\n", r)
		}
	} else {
		o, _ := observeModel(init.tasks, nil)
		for _, t := range o {
			if named[t.pid] {
				fmt.Fprintf(&b, "  %s\n", observation{t})
			}
		}
		for _, id := range slices.Sorted(maps.Keys(init.sems.sets)) {
			if set := init.sems.sets[id]; semaphores {
				fmt.Fprintf(&b, "  semaphore set %d (%s) = %v\n", id, semFamily(set.key, id), set.vals)
			}
		}
	}
	fmt.Fprintf(&b, "the burst ([call,return] on one logical clock):\n")
	for _, r := range sortedByStart(burst) {
		fmt.Fprintf(&b, "  %s\n", r)
	}
	return b.String()
}

func abs(n int) int { return max(n, -n) }

// shown leaves out of the burst the final steps that say nothing about
// its calls: the observation of a part of the table no call touched, and
// the final semaphore calls when the burst made none.
func (v *Violation) shown() []record {
	parts := map[int]bool{}
	semaphores := false
	for _, r := range v.burst {
		switch {
		case r.final:
		case r.c.kind.semaphore():
			semaphores = true
		default:
			parts[r.c.part] = true
		}
	}
	var out []record
	for _, r := range v.burst {
		if r.final && (r.c.kind == kObserve && !parts[r.c.part] || r.c.kind.semaphore() && !semaphores) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// WriteHTML writes porcupine's visualisation of the failing round's burst
// to path: the history per goroutine and, for each partition, the longest
// order of calls the model accepts; the violation is annotated.
func (v *Violation) WriteHTML(path string) error {
	info, model := v.info, v.model
	if model.Step == nil {
		// No linearizability check ran (a hang): draw the history alone.
		model = porcupine.Model{
			Init:              func() any { return nil },
			Step:              func(st, _, _ any) (bool, any) { return true, st },
			DescribeOperation: func(in, out any) string { return describe(in.(call), out.(outcome)) },
		}
		_, info = porcupine.CheckOperationsVerbose(model, operations(v.burst), time.Second)
	}
	info.AddAnnotations([]porcupine.Annotation{{Tag: "check", Start: 0,
		Description: v.Kind, Details: v.Message, BackgroundColor: "#fbb"}})
	return porcupine.VisualizePath(model, info, path)
}

// Run checks rounds under opt.Plan until the time is up or a round breaks
// a rule. Each round builds a fresh kernel and the same setup on the
// kernel and on the reference model (internal/refmodel), then lets
// opt.Workers goroutines make random calls at once, with races aimed at
// where the unsafe plans break, and checks: the kernel's invariants
// (Kernel.CheckInvariants), that the calls' results and the final table
// are linearizable with respect to the model (porcupine), that no lock
// was taken out of order (lockstat), and that no call hung. A violation
// is shrunk (the round is retried with fewer calls while it still fails)
// before it is reported.
//
// The first round runs whatever the duration; the duration bounds when
// the next one may start. When ctx is done Run stops at once, drops the
// round under way (whose calls end in the background, a sleeping call
// interrupted by ctx) and returns what it checked with Interrupted set.
// A report is a pass only if it has rounds, no violation, no undecided
// round and no interruption: see Report.Passed.
//
// Run turns lockstat's checking on and installs its reporter for the
// run, restoring both after; runs must not overlap. It fails only for
// options out of bounds.
func Run(ctx context.Context, opt Options) (Report, error) {
	runMu.Lock()
	defer runMu.Unlock()
	if opt.Duration <= 0 {
		opt.Duration = DefaultDuration
	}
	if opt.Workers < 0 || opt.Workers > MaxWorkers {
		return Report{}, fmt.Errorf("%d workers: want 1 to %d", opt.Workers, MaxWorkers)
	}
	if opt.Workers == 0 {
		opt.Workers = min(2*runtime.GOMAXPROCS(0), MaxWorkers)
	}
	if opt.Steps <= 0 {
		opt.Steps = DefaultSteps
	}
	if opt.Shrink == 0 {
		opt.Shrink = DefaultShrink
	}
	if opt.Seed == 0 {
		opt.Seed = uint64(time.Now().UnixNano())
	}
	rep := Report{Plan: opt.Plan.Name(), Seed: opt.Seed, Workers: opt.Workers}
	locks := watchLocks()
	defer locks.stop()

	start := time.Now()
	deadline := start.Add(opt.Duration)
	prog := newProgress(opt.Progress, rep.Plan)
	seeds := rand.New(rand.NewPCG(opt.Seed, 0x726f756e6473))
	for n := 0; opt.Rounds <= 0 || n < opt.Rounds; n++ {
		if n > 0 && time.Now().After(deadline) {
			break
		}
		if ctx.Err() != nil {
			rep.Interrupted = true
			break
		}
		seed := seeds.Uint64()
		res := round(ctx, opt.Plan, newSchedule(seed, opt.Workers, opt.Steps), locks, checkTimeout)
		if res.interrupted {
			rep.Interrupted = true
			break
		}
		rep.Rounds++
		rep.Ops += len(res.burst)
		if res.unknown {
			rep.Undecided++
		}
		prog.update(rep, time.Since(start))
		if v := res.violation; v != nil {
			rep.FoundAfter = time.Since(start)
			v.Round, v.RoundSeed = n, seed
			v.Goroutines, v.Calls = goroutines(v.burst), len(v.burst)
			rep.Violation = v
			if opt.Shrink > 0 {
				prog.note("violation found in round %d; shrinking", n)
				rep.Violation = shrink(ctx, opt.Plan, seed, opt.Workers, opt.Steps, v, locks, opt.Shrink)
				rep.Interrupted = ctx.Err() != nil
			}
			break
		}
	}
	rep.Elapsed = time.Since(start)
	prog.done(rep)
	return rep, nil
}

// Passed reports whether the run is a pass: it checked at least one
// round, found nothing, decided every round and was not interrupted.
func (r *Report) Passed() bool {
	return r.Rounds > 0 && r.Violation == nil && r.Undecided == 0 && !r.Interrupted
}

// checkTimeout bounds porcupine on one round; rounds are small, so it is
// reached only by a pathological history, counted as undecided.
const checkTimeout = 5 * time.Second

var runMu sync.Mutex

// lockWatch collects lockstat's violations instead of panicking.
type lockWatch struct {
	mu       sync.Mutex
	found    []string
	checking bool
	reporter func(lockstat.Violation)
}

func watchLocks() *lockWatch {
	l := &lockWatch{}
	l.checking = lockstat.SetChecking(true)
	l.reporter = lockstat.SetReporter(func(v lockstat.Violation) {
		l.mu.Lock()
		defer l.mu.Unlock()
		msg := fmt.Sprintf("lock order: %s: %s\n%s", v.Kind, v.Message, v.Stack)
		if v.OtherStack != "" {
			msg += "earlier, in the other order:\n" + v.OtherStack
		}
		l.found = append(l.found, msg)
	})
	return l
}

func (l *lockWatch) stop() {
	lockstat.SetReporter(l.reporter)
	lockstat.SetChecking(l.checking)
}

func (l *lockWatch) reset() {
	l.mu.Lock()
	l.found = nil
	l.mu.Unlock()
}

func (l *lockWatch) collected() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.found
}
