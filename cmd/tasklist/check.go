package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"tasklist/check"
	"tasklist/plan"
)

var checkCommand = command{
	name:    "check",
	summary: "run random concurrent schedules under a lock plan and check their results",
	details: `
Runs rounds until --duration is over or one breaks a rule; the first round runs whatever the
duration. Each round builds a fresh kernel under the plan and makes a setup one call at a
time, then a burst: races aimed at where the unsafe toggles break, then --workers goroutines
making random calls (clone, exit, wait, setpgid, setsid, kill, get/setpriority, ptrace,
semaphores). It checks the kernel's invariants, the linearizability of the calls' results and
of the final table against the reference model, lock order, and that no call hung. Past some
tens of workers the linearizability check may not decide a round in time.

On a violation it shrinks the failing round, prints what failed and the shortest failing
history, and writes porcupine's visualisation to --html (default: a temporary file). --seed
replays a run's rounds; the interleavings themselves differ from run to run.

Ctrl-C, SIGTERM or SIGHUP stops at once, dropping the round under way: the command says what
it checked and how to replay it.

Exit status: 0 when nothing was found and every round was decided, 1 on a violation, 2 on a
usage error, 3 when nothing was found but a round could not be decided in time (not a pass),
128 plus the signal's number when interrupted (130 for Ctrl-C, 143 for SIGTERM).`,
	interruptible: true,
	setup: func(fs *flag.FlagSet) runFunc {
		fl := &checkFlags{}
		fl.bind(fs)
		return fl.run
	},
}

// undecidedStatus is check's exit status for a run that proved nothing either way.
const undecidedStatus = 3

// checkFlags are check's command line.
type checkFlags struct {
	plan     string
	unsafe   bool
	duration time.Duration
	workers  int
	seed     uint64
	html     string
}

// bind declares the flags on fs, each bound to its field.
func (f *checkFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.plan, "plan", "scalable", "the lock plan: a preset and toggles (see tasklist plans)")
	fs.BoolVar(&f.unsafe, "unsafe", false, "allow the plan's unsafe toggles, which recreate races")
	fs.DurationVar(&f.duration, "duration", check.DefaultDuration, "how long to run; the check stops at the first violation")
	fs.IntVar(&f.workers, "workers", 0, fmt.Sprintf("goroutines making random calls in each round, at most %d (default 2×GOMAXPROCS)",
		check.MaxWorkers))
	fs.Uint64Var(&f.seed, "seed", 0, "replay the rounds of an earlier run (default: drawn from the clock)")
	fs.StringVar(&f.html, "html", "", "where to write the visualisation of a violation (default: a temporary file)")
}

func (f *checkFlags) run(ctx context.Context, _ []string, stdout, stderr io.Writer) int {
	if f.workers < 0 || f.workers > check.MaxWorkers {
		fmt.Fprintf(stderr, "tasklist: check: --workers %d: want 1 to %d, or 0 for the default\n", f.workers, check.MaxWorkers)
		return 2
	}
	if f.duration <= 0 {
		fmt.Fprintf(stderr, "tasklist: check: --duration %v: want a positive duration\n", f.duration)
		return 2
	}
	p, err := parsePlan(f.plan, f.unsafe)
	if err != nil {
		fmt.Fprintf(stderr, "tasklist: check: %v\n", planError("check", f.plan, err))
		return 2
	}
	opt := check.Options{Plan: p, Duration: f.duration, Workers: f.workers, Seed: f.seed, Progress: stderr}
	rep, err := check.Run(ctx, opt)
	if err != nil {
		fmt.Fprintf(stderr, "tasklist: check: %v\n", err)
		return 2
	}
	return reportCheck(ctx, &rep, p, f.html, stdout, stderr)
}

// parsePlan parses a plan given with --plan and --unsafe; --unsafe without an unsafe toggle
// to allow is a mistake, not a no-op.
func parsePlan(name string, unsafe bool) (*plan.Plan, error) {
	p, err := plan.Parse(name, unsafe)
	if err == nil && unsafe && !p.Unsafe() {
		return nil, fmt.Errorf("--unsafe: plan %s has no unsafe toggle to allow (tasklist plans lists them)", p.Name())
	}
	return p, err
}

// reportCheck prints what a check found, and how to replay it, and returns the exit status.
func reportCheck(ctx context.Context, rep *check.Report, p *plan.Plan, html string, stdout, stderr io.Writer) int {
	replay := fmt.Sprintf("tasklist check --plan %s", rep.Plan)
	if p.Unsafe() {
		replay += " --unsafe"
	}
	replay += fmt.Sprintf(" --workers %d --seed %d", rep.Workers, rep.Seed)
	covered := fmt.Sprintf("plan %s: %d rounds, %d operations checked in %s", rep.Plan, rep.Rounds, rep.Ops,
		rep.Elapsed.Round(time.Millisecond))
	v := rep.Violation
	if v == nil {
		status := 0
		switch {
		case rep.Interrupted:
			fmt.Fprintf(stdout, "%s, then %s: nothing found in those rounds", covered, interrupted(ctx))
			status = interruptStatus(ctx)
		case rep.Rounds == 0:
			fmt.Fprintf(stdout, "%s: no round was checked, which is not a pass", covered)
			status = undecidedStatus
		case rep.Undecided > 0:
			fmt.Fprintf(stdout, "%s: nothing found, but not a pass", covered)
			status = undecidedStatus
		default:
			fmt.Fprintf(stdout, "%s: nothing found", covered)
		}
		if rep.Undecided > 0 {
			fmt.Fprintf(stdout, "\n%d of the %d rounds undecided: the linearizability check ran out of time "+
				"(fewer --workers make smaller rounds)", rep.Undecided, rep.Rounds)
		}
		fmt.Fprintf(stdout, "\nthe same rounds again: %s\n", replay)
		return status
	}
	fmt.Fprintf(stdout, "plan %s: VIOLATION (%s) in round %d, found after %s\n\n%s\n\n", rep.Plan, v.Kind, v.Round,
		rep.FoundAfter.Round(time.Millisecond), strings.TrimSpace(v.Message))
	shortest := "the shortest failing history found"
	if rep.Interrupted {
		shortest = fmt.Sprintf("the shortest failing history found before shrinking was %s", interrupted(ctx))
	}
	fmt.Fprintf(stdout, "%s (%d goroutines, %d calls):\n%s\n", shortest, v.Goroutines, v.Calls, v.History())
	if html == "" {
		if f, err := os.CreateTemp("", "tasklist-check-*.html"); err == nil {
			html = f.Name()
			f.Close()
		}
	}
	if html != "" {
		if err := v.WriteHTML(html); err != nil {
			fmt.Fprintf(stderr, "tasklist: check: writing the visualisation: %v\n", err)
		} else {
			fmt.Fprintf(stdout, "visualisation: %s\n", html)
		}
	}
	fmt.Fprintf(stdout, "the same rounds again (the interleavings will differ): %s\n", replay)
	return 1
}
