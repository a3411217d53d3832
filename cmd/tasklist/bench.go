package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"tasklist/bench"
	"tasklist/workload"
)

var benchCommand = command{
	name:    "bench",
	summary: "run the benchmark workloads on the lock plans, the controls and the host kernel; write a report",
	details: `
Runs each workload on each plan at each worker count, --reps times interleaved across plans,
and prints an mmtests-style table (or --format). The report directory (--out, default
./tasklist-report; "" for none) gets charts, the results in every format and index.html.
Ctrl-C stops at once and keeps what was measured. LIST is comma-separated; a plan toggle
belongs to the preset before it ("linux-2.6.35,prio-without-tasklist"). Plans are the
presets and toggles of tasklist plans, and private, private+cursor and host.

--quick is a smoke run of under 20 seconds; --seeds runs each seed's A/B (its toggle off and
on under linux-2.6.35) on its workload, beside the seed's own claim.`,
	setup: func(fs *flag.FlagSet) func([]string, io.Writer, io.Writer) int {
		fl := declareBenchFlags(fs)
		return func(_ []string, stdout, stderr io.Writer) int {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				// The first signal stops the sweep, which keeps what it
				// measured; a second one ends the program at once.
				<-ctx.Done()
				stop()
			}()
			return runBenchFlags(ctx, fs, fl, stdout, stderr)
		}
	},
}

// The default sweep and the quick one.
var (
	defaultPlans      = []string{"scalable", "linux-2.6.35", "gvisor", bench.Private, bench.Host}
	defaultReps       = 5
	defaultDuration   = 48 * time.Millisecond
	quickWorkloads    = []string{"fork-exit", "threadspawn", "get", "semop-multi"}
	quickPlans        = []string{"scalable", bench.Private, bench.Host}
	quickReps         = 3
	quickDuration     = 30 * time.Millisecond
	benchSamples      = 3
	defaultReportDir  = "tasklist-report"
	progressLineEvery = 2 * time.Second
)

// benchMain runs `tasklist bench args` with ctx in place of the signals'
// context.
func benchMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := benchCommand
	c.setup = func(fs *flag.FlagSet) func([]string, io.Writer, io.Writer) int {
		fl := declareBenchFlags(fs)
		return func(_ []string, stdout, stderr io.Writer) int { return runBenchFlags(ctx, fs, fl, stdout, stderr) }
	}
	return c.run(args, stdout, stderr)
}

// benchOptions are the parsed command line.
type benchOptions struct {
	cfg    bench.Config
	format string
	out    string
	seeds  bool
}

// runBenchFlags runs the sweep the parsed flags of fs describe.
func runBenchFlags(ctx context.Context, fs *flag.FlagSet, fl *benchFlags, stdout, stderr io.Writer) int {
	opts, err := fl.options(fs)
	if err != nil {
		fmt.Fprintf(stderr, "tasklist: bench: %v\n", err)
		return 2
	}
	prog := newProgress(stderr)
	opts.cfg.Progress = prog.update
	res, err := bench.Run(ctx, opts.cfg)
	prog.finish()
	if err != nil && res == nil {
		fmt.Fprintf(stderr, "tasklist: bench: %v\n", err)
		return 2
	}
	if opts.seeds {
		res.Seeds = res.SeedResults()
	}
	status := 0
	if err != nil {
		fmt.Fprintf(stderr, "tasklist: bench: %v\n", err)
		status = 1
	}
	if res.Interrupted {
		fmt.Fprintln(stderr, "tasklist: bench: interrupted; keeping what was measured")
		status = 130
	}
	if werr := res.WriteFormat(stdout, opts.format); werr != nil {
		fmt.Fprintf(stderr, "tasklist: bench: %v\n", werr)
		return 1
	}
	if opts.out != "" {
		index, rerr := res.WriteReport(opts.out)
		if rerr != nil {
			fmt.Fprintf(stderr, "tasklist: bench: writing the report: %v\n", rerr)
			return 1
		}
		fmt.Fprintf(stderr, "tasklist: bench: report in %s\n", index)
	}
	return status
}

// benchFlags are bench's flags, declared on a flag set.
type benchFlags struct {
	workloads, plans, workers, format, out, mixFile *string
	reps, population                                *int
	duration                                        *time.Duration
	quick, seeds                                    *bool
	maxLoad                                         *float64
}

func declareBenchFlags(fs *flag.FlagSet) *benchFlags {
	return &benchFlags{
		workloads: fs.String("workloads", "", "comma-separated workloads (default: all: "+strings.Join(workload.Names(), ", ")+")"),
		plans: fs.String("plans", "", "comma-separated plans (default: "+strings.Join(defaultPlans, ",")+
			"; --quick: "+strings.Join(quickPlans, ",")+")"),
		workers:  fs.String("workers", "", "comma-separated worker counts (default: 1, 2 and twice the cores)"),
		reps:     fs.Int("reps", defaultReps, "repetitions of each point, interleaved across plans"),
		duration: fs.Duration("duration", defaultDuration, "measured time of one repetition, in 3 samples"),
		format:   fs.String("format", "table", "output format: "+strings.Join(bench.Formats, ", ")),
		out:      fs.String("out", defaultReportDir, "the report directory (\"\" for none)"),
		quick:    fs.Bool("quick", false, "a smoke run of under 20 seconds: "+strings.Join(quickWorkloads, ",")+", 1 and 2 workers"),
		seeds:    fs.Bool("seeds", false, "each seed's A/B on its workload, beside the seed's own claim"),
		population: fs.Int("population", workload.DefaultPopulation,
			"get's other tasks in the table"),
		mixFile: fs.String("mix", "", "the mix's workfile (default: workload/default.mix)"),
		maxLoad: fs.Float64("max-load", 0, "run a repetition again (up to 3 times, keeping the quietest) when other "+
			"programs kept more than this many CPUs busy beside it"),
	}
}

// options turns the flags of fs, parsed, into a sweep.
func (fl *benchFlags) options(fs *flag.FlagSet) (*benchOptions, error) {
	workloads, plans, workers, reps, duration := fl.workloads, fl.plans, fl.workers, fl.reps, fl.duration
	format, out, quick, seeds, population := fl.format, fl.out, fl.quick, fl.seeds, fl.population
	mixFile, maxLoad := fl.mixFile, fl.maxLoad
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *quick && *seeds {
		return nil, errors.New("--quick and --seeds do not go together")
	}
	if *seeds && set["plans"] {
		return nil, errors.New("--seeds chooses its plans: each seed's toggle off and on under " + bench.SeedBase)
	}
	if !slices.Contains(bench.Formats, *format) {
		return nil, fmt.Errorf("unknown format %q (formats: %s)", *format, strings.Join(bench.Formats, ", "))
	}
	opts := &benchOptions{format: *format, out: *out, seeds: *seeds}
	cfg := &opts.cfg
	cfg.Reps, cfg.Population, cfg.LockStats, cfg.MaxLoad = *reps, *population, true, *maxLoad
	if *maxLoad < 0 {
		return nil, fmt.Errorf("--max-load %v: want 0 (off) or more", *maxLoad)
	}
	switch {
	case *population < 0:
		return nil, fmt.Errorf("--population %d: want 0 or more", *population)
	case *population == 0:
		cfg.Population = -1 // workload.Env's "none"
	}
	if *quick && !set["reps"] {
		cfg.Reps = quickReps
	}
	d := *duration
	if *quick && !set["duration"] {
		d = quickDuration
	}
	if d <= 0 {
		return nil, fmt.Errorf("--duration %v: want a positive duration", d)
	}
	cfg.Timing = bench.Timing{Warmup: d / 4, Sample: d / time.Duration(benchSamples), Samples: benchSamples}
	if cfg.Timing.Sample <= 0 {
		return nil, fmt.Errorf("--duration %v is too short", d)
	}

	var err error
	if cfg.Workers, err = parseWorkers(*workers, *quick); err != nil {
		return nil, err
	}
	names := workload.Names()
	if *quick {
		names = quickWorkloads
	}
	if set["workloads"] {
		names = splitList(*workloads)
	}
	var planNames []string
	switch {
	case set["plans"]:
		if planNames, err = bench.SplitPlans(*plans); err != nil {
			return nil, err
		}
	case *quick:
		planNames = quickPlans
	default:
		planNames = defaultPlans
	}
	if *mixFile != "" {
		f, err := os.Open(*mixFile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if cfg.Mix, err = workload.ParseMix(f, *mixFile); err != nil {
			return nil, err
		}
	}
	if *seeds {
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
			cfg.Groups = append(cfg.Groups, bench.Group{Workload: w, Plans: planNames})
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return opts, nil
}

// parseWorkers reads --workers, or gives the default: 1, 2 and twice the
// cores (1 and 2 for --quick).
func parseWorkers(list string, quick bool) ([]int, error) {
	if list == "" {
		if quick {
			return []int{1, 2}, nil
		}
		ns := []int{1, 2, 2 * runtime.NumCPU()}
		slices.Sort(ns)
		return slices.Compact(ns), nil
	}
	var ns []int
	for _, item := range splitList(list) {
		n, err := strconv.Atoi(item)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--workers: %q is not a positive number", item)
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
