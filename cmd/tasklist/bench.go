package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"tasklist/bench"
	"tasklist/replay"
	"tasklist/workload"
)

var benchCommand = command{
	name:    "bench",
	summary: "run the benchmark workloads on the lock plans, the controls and the host kernel; write a report",
	details: `
Runs each workload on each plan at each worker count, --reps times interleaved across plans,
and prints an mmtests-style table (or --format). The report directory (--out, default
./tasklist-report; "" for none) gets charts, the results in every format and index.html; it
must be new, empty or an earlier report, which the new one replaces as a whole, and is
checked before anything is measured. LIST is comma-separated; a plan toggle belongs to the
preset before it ("linux-2.6.35,prio-without-tasklist"). Plans are the presets and toggles of
tasklist plans, and private, private+cursor and host.

A workload replay:FILE replays the trace in FILE (tasklist trace records one; see tasklist
replay) on every model plan: each worker its own copy, each traced task a goroutine, as fast
as the trace's causal order allows, every result checked against the replay's; its figure is
the trace's calls per second. The trace is read, parsed and replayed once before anything is
measured: one that cannot be is refused (FILE:LINE: message, exit status 2). The host cannot
replay a trace and is left out of its plans.

--quick is a smoke run of under 20 seconds; --seeds runs each seed's A/B (its toggle off and
on under linux-2.6.35) on its workload, beside the seed's own claim.

Ctrl-C, SIGTERM or SIGHUP stops at once and keeps what was measured: the table and the report
are still written (not the report when nothing was), and the exit status is 128 plus the
signal's number. Nothing the host runs outlives the command, whatever signal ends it.`,
	interruptible: true,
	setup: func(fs *flag.FlagSet) runFunc {
		fl := &benchFlags{}
		fl.bind(fs)
		return func(ctx context.Context, _ []string, stdout, stderr io.Writer) int {
			return fl.run(ctx, fs, stdout, stderr)
		}
	},
}

// The sweeps bench runs without --quick and with it.
var (
	defaultSweep = mustPreset("default")
	quickSweep   = mustPreset("quick")
)

func mustPreset(name string) bench.Sweep {
	s, err := bench.Preset(name)
	if err != nil {
		panic(err)
	}
	return s
}

const (
	defaultReportDir  = "tasklist-report"
	progressLineEvery = 2 * time.Second
)

// benchFlags are bench's command line.
type benchFlags struct {
	workloads, plans, workers string
	reps, population          int
	duration                  time.Duration
	format, out, mix          string
	quick, seeds              bool
	maxLoad                   float64
	// notes are what config has to say about the sweep it made: a plan left out.
	notes []string
}

// bind declares the flags on fs, each bound to its field.
func (f *benchFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.workloads, "workloads", "", "comma-separated workloads (default: all: "+strings.Join(workload.Names(), ", ")+
		"), or "+workload.ReplayPrefix+"FILE, the replay of a trace tasklist trace recorded")
	fs.StringVar(&f.plans, "plans", "", "comma-separated plans (default: "+strings.Join(defaultSweep.Plans, ",")+
		"; --quick: "+strings.Join(quickSweep.Plans, ",")+")")
	fs.StringVar(&f.workers, "workers", "", "comma-separated worker counts, 1 to "+strconv.Itoa(bench.MaxWorkers)+
		" (default: 1, 2 and twice the cores)")
	fs.IntVar(&f.reps, "reps", defaultSweep.Reps, "repetitions of each point, interleaved across plans")
	fs.DurationVar(&f.duration, "duration", defaultSweep.Duration,
		fmt.Sprintf("measured time of one repetition, in %d samples", bench.Samples))
	fs.StringVar(&f.format, "format", "table", "output format: "+strings.Join(bench.Formats, ", "))
	fs.StringVar(&f.out, "out", defaultReportDir, "the report directory (\"\" for none)")
	fs.BoolVar(&f.quick, "quick", false, "a smoke run of under 20 seconds: "+strings.Join(quickSweep.Workloads, ",")+
		", 1 and 2 workers")
	fs.BoolVar(&f.seeds, "seeds", false, "each seed's A/B on its workload, beside the seed's own claim")
	fs.IntVar(&f.population, "population", workload.DefaultPopulation,
		fmt.Sprintf("get's other tasks in the table, at most %d", workload.MaxPopulation))
	fs.StringVar(&f.mix, "mix", "", "the mix's workfile (default: workload/default.mix)")
	fs.Float64Var(&f.maxLoad, "max-load", 0, "run a repetition again (up to 3 times, keeping the quietest) when other "+
		"programs kept more than this many CPUs busy beside it")
}

// run runs the sweep the parsed flags of fs describe.
func (f *benchFlags) run(ctx context.Context, fs *flag.FlagSet, stdout, stderr io.Writer) int {
	cfg, err := f.config(fs)
	if err == nil && f.out != "" {
		err = bench.CheckReportDir(f.out)
	}
	var serr *replay.SyntaxError
	switch {
	case errors.As(err, &serr):
		fmt.Fprintln(stderr, serr) // FILE:LINE: message, as replay prints it
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "tasklist: bench: %v\n", err)
		return 2
	}
	for _, note := range f.notes {
		fmt.Fprintf(stderr, "tasklist: bench: %s\n", note)
	}
	prog := newProgress(stderr)
	cfg.Progress = prog.update
	res, err := bench.Run(ctx, *cfg)
	prog.finish()
	if err != nil && res == nil {
		fmt.Fprintf(stderr, "tasklist: bench: %v\n", err)
		return 2
	}
	if f.seeds {
		res.Seeds = res.SeedResults()
	}
	status := 0
	if err != nil {
		fmt.Fprintf(stderr, "tasklist: bench: %v\n", err)
		status = 1
	}
	if res.Interrupted {
		fmt.Fprintf(stderr, "tasklist: bench: %s; keeping what was measured\n", interrupted(ctx))
		status = interruptStatus(ctx)
	}
	if werr := res.WriteFormat(stdout, f.format); werr != nil {
		fmt.Fprintf(stderr, "tasklist: bench: %v\n", werr)
		return 2
	}
	switch {
	case f.out == "":
	case !res.Measured():
		fmt.Fprintf(stderr, "tasklist: bench: nothing was measured; %s is left as it was\n", f.out)
	default:
		index, rerr := res.WriteReport(f.out)
		if rerr != nil {
			fmt.Fprintf(stderr, "tasklist: bench: writing the report: %v\n", rerr)
			return 2
		}
		fmt.Fprintf(stderr, "tasklist: bench: report in %s\n", index)
	}
	return status
}

// config turns the flags, parsed by fs, into a sweep.
func (f *benchFlags) config(fs *flag.FlagSet) (*bench.Config, error) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	switch {
	case f.quick && f.seeds:
		return nil, errors.New("--quick and --seeds do not go together")
	case f.seeds && set["plans"]:
		return nil, errors.New("--seeds chooses its plans: each seed's toggle off and on under " + bench.SeedBase)
	case !slices.Contains(bench.Formats, f.format):
		return nil, fmt.Errorf("unknown format %q (formats: %s)", f.format, strings.Join(bench.Formats, ", "))
	case f.population < 0:
		return nil, fmt.Errorf("--population %d: want 0 or more", f.population)
	}
	sweep := defaultSweep
	if f.quick {
		sweep = quickSweep
	}
	cfg := &bench.Config{Reps: sweep.Reps, Population: f.population, LockStats: true, MaxLoad: f.maxLoad}
	if f.population == 0 {
		cfg.Population = -1 // workload.Env's "none"
	}
	if set["reps"] || !f.quick {
		cfg.Reps = f.reps
	}
	d := sweep.Duration
	if set["duration"] || !f.quick {
		d = f.duration
	}
	if d <= 0 {
		return nil, fmt.Errorf("--duration %v: want a positive duration", d)
	}
	var err error
	if cfg.Timing, err = bench.TimingFor(d); err != nil {
		return nil, fmt.Errorf("--duration: %w", err)
	}
	if cfg.Workers, err = parseWorkers(f.workers, sweep.Workers); err != nil {
		return nil, err
	}
	names := sweep.Workloads
	if names == nil {
		names = workload.Names()
	}
	if set["workloads"] {
		names = splitList(f.workloads)
	}
	planNames := sweep.Plans
	if set["plans"] {
		if planNames, err = bench.SplitPlans(f.plans); err != nil {
			return nil, err
		}
	}
	if f.mix != "" {
		if cfg.Mix, err = readMix(f.mix); err != nil {
			return nil, err
		}
	}
	if f.seeds {
		groups, err := bench.SeedGroups()
		if err != nil {
			return nil, err
		}
		for _, g := range groups {
			if !set["workloads"] || slices.Contains(names, g.Workload.Name) {
				cfg.Groups = append(cfg.Groups, g)
			}
		}
		if len(cfg.Groups) == 0 {
			return nil, errors.New("--workloads names no seed's workload")
		}
	} else {
		for _, name := range names {
			w, err := workload.Named(name)
			if err != nil {
				return nil, err
			}
			if slices.ContainsFunc(cfg.Groups, func(g bench.Group) bool { return g.Workload.Name == w.Name }) {
				return nil, fmt.Errorf("--workloads: %s named twice", w.Name)
			}
			plans := planNames
			if w.NotOnHost != "" && slices.Contains(plans, bench.Host) {
				plans = slices.DeleteFunc(slices.Clone(plans), func(p string) bool { return p == bench.Host })
				if len(plans) == 0 {
					return nil, fmt.Errorf("%s does not run on %s (%s), the only plan given", w.Name, bench.Host, w.NotOnHost)
				}
				f.notes = append(f.notes, fmt.Sprintf("%s runs on the model only: %s", w.Name, w.NotOnHost))
			}
			cfg.Groups = append(cfg.Groups, bench.Group{Workload: w, Plans: plans})
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func readMix(path string) (*workload.Mix, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return workload.ParseMix(file, path)
}

// parseWorkers reads --workers, or gives the preset's worker counts
// (bench.DefaultWorkers where it has none).
func parseWorkers(list string, preset []int) ([]int, error) {
	if list == "" {
		if preset == nil {
			return bench.DefaultWorkers(), nil
		}
		return slices.Clone(preset), nil
	}
	var ns []int
	for _, item := range splitList(list) {
		n, err := strconv.Atoi(item)
		if err != nil || n < 1 || n > bench.MaxWorkers {
			return nil, fmt.Errorf("--workers: %q is not a number from 1 to %d", item, bench.MaxWorkers)
		}
		if !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	if len(ns) == 0 {
		return nil, errors.New("--workers: empty list")
	}
	slices.Sort(ns)
	return ns, nil
}

func splitList(list string) []string {
	var out []string
	for _, item := range strings.Split(list, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// progress shows a sweep's progress on standard error: a bar on a
// terminal, a plain line every few seconds otherwise.
type progress struct {
	w    io.Writer
	bar  *progressbar.ProgressBar
	tty  bool
	last time.Time
}

func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, tty: ok && term.IsTerminal(int(f.Fd()))}
}

func (p *progress) update(pr bench.Progress) {
	what := fmt.Sprintf("%s on %s, %d workers", pr.Workload, pr.Plan, pr.Workers)
	if pr.Rep == 0 {
		what += ", lock statistics"
	} else {
		what += fmt.Sprintf(", rep %d", pr.Rep)
	}
	if !p.tty {
		if now := time.Now(); now.Sub(p.last) >= progressLineEvery {
			p.last = now
			fmt.Fprintf(p.w, "tasklist bench: %d/%d runs done; %s\n", pr.Done, pr.Total, what)
		}
		return
	}
	if p.bar == nil {
		p.bar = progressbar.NewOptions(pr.Total, progressbar.OptionSetWriter(p.w), progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish(), progressbar.OptionSetWidth(24),
			progressbar.OptionThrottle(100*time.Millisecond))
	}
	p.bar.Describe(what)
	p.bar.Set(pr.Done)
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
		p.bar.Clear()
	}
}
