package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"tasklist/check"
	"tasklist/plan"
)

var checkCommand = command{
	name:    "check",
	summary: "run random concurrent schedules under a lock plan and check their results",
	details: `
Runs rounds until --duration is over or one breaks a rule. Each round builds a fresh kernel
under the plan and makes a setup one call at a time, then a burst: races aimed at where the
unsafe toggles break, then --workers goroutines making random calls (clone, exit, wait,
setpgid, setsid, kill, get/setpriority, ptrace, semaphores). It checks the kernel's
invariants, the linearizability of the calls' results and of the final table against the
reference model, lock order, and that no call hung.

On a violation it shrinks the failing round, prints what failed and the shortest failing
history, and writes porcupine's visualisation to --html (default: a temporary file). --seed
replays a run's rounds; the interleavings themselves differ from run to run.

Exit status: 0 when nothing was found, 1 on a violation, 2 on a usage error.`,
	setup: func(fs *flag.FlagSet) func([]string, io.Writer, io.Writer) int {
		planName := fs.String("plan", "scalable", "the lock plan: a preset and toggles (see tasklist plans)")
		unsafe := fs.Bool("unsafe", false, "allow the plan's unsafe toggles, which recreate races")
		duration := fs.Duration("duration", check.DefaultDuration, "how long to run; the check stops at the first violation")
		workers := fs.Int("workers", 0, "goroutines making random calls in each round (default 2×GOMAXPROCS)")
		seed := fs.Uint64("seed", 0, "replay the rounds of an earlier run (default: drawn from the clock)")
		html := fs.String("html", "", "where to write the visualisation of a violation (default: a temporary file)")
		return func(_ []string, stdout, stderr io.Writer) int {
			if *workers < 0 || *duration <= 0 {
				fmt.Fprintln(stderr, "tasklist: check: --workers must be positive or 0, --duration positive")
				return 2
			}
			p, err := plan.Parse(*planName, *unsafe)
			if err != nil {
				fmt.Fprintf(stderr, "tasklist: check: %v\n", planError("check", *planName, err))
				return 2
			}
			opt := check.Options{Plan: p, Duration: *duration, Workers: *workers, Seed: *seed, Progress: stderr}
			return runCheck(opt, *html, stdout, stderr)
		}
	},
}

// runCheck runs the checker and prints its report.
func runCheck(opt check.Options, html string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := check.Run(ctx, opt)
	if err != nil {
		fmt.Fprintf(stderr, "tasklist: check: %v\n", err)
		return 2
	}
	replay := fmt.Sprintf("tasklist check --plan %s", rep.Plan)
	if opt.Plan.Unsafe() {
		replay += " --unsafe"
	}
	replay += fmt.Sprintf(" --workers %d --seed %d", rep.Workers, rep.Seed)
	v := rep.Violation
	if v == nil {
		fmt.Fprintf(stdout, "plan %s: %d rounds, %d operations checked in %s: nothing found", rep.Plan,
			rep.Rounds, rep.Ops, rep.Elapsed.Round(time.Millisecond))
		if rep.Undecided > 0 {
			fmt.Fprintf(stdout, " (%d rounds undecided: porcupine ran out of time)", rep.Undecided)
		}
		fmt.Fprintf(stdout, "\nthe same rounds again: %s\n", replay)
		return 0
	}
	fmt.Fprintf(stdout, "plan %s: VIOLATION (%s) in round %d, found after %s\n\n%s\n\n", rep.Plan, v.Kind, v.Round,
		rep.FoundAfter.Round(time.Millisecond), strings.TrimSpace(v.Message))
	fmt.Fprintf(stdout, "the shortest failing history found (%d goroutines, %d calls):\n%s\n", v.Goroutines, v.Calls, v.History())
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
