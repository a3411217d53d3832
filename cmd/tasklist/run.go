package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"tasklist/lockstat"
	"tasklist/scenario"
	"tasklist/scenario/kernelrun"
	"tasklist/scenario/modelrun"
)

var runCommand = command{
	name:    "run",
	summary: "run a scenario file on the model (or with --kernel on the host kernel)",
	args:    "FILE",
	minArgs: 1,
	maxArgs: 1,
	details: `
Each statement that runs prints "LINE: SOURCE = RESULT" on standard output. A failed
expectation is reported on standard error as "FILE:LINE: expected X, got Y", a statement
that cannot run (a name whose creating statement failed) as "FILE:LINE:COL: message".

FILE - reads the scenario from standard input, named <stdin> in messages. A file larger
than 64 MiB is refused.

--plan runs the model under a lock plan (tasklist plans lists them): a preset and toggles,
such as linux-2.6.35,prio-without-tasklist. A plan changes how calls wait for each other,
never what they return. --lockstat prints, after the scenario's lines, the lock statistics
of the run in /proc/lock_stat's columns.

With --kernel, a call that stays blocked while every task of the run sleeps is reported
stuck (EDEADLK) once --stall has passed: only a timer could still end it. A shorter stall
runs such files faster, at the risk of calling a slow call stuck on a loaded machine.

Exit status: 0 when every expectation held, 1 when one did not, 2 when the file cannot be
read or parsed ("FILE:LINE:COL: message", before anything runs) or the run cannot start.`,
	setup: func(fs *flag.FlagSet) runFunc {
		onKernel := fs.Bool("kernel", false, "run on the host kernel instead of the model (needs root and a C compiler)")
		planName := fs.String("plan", "scalable", "run the model under this lock plan: a preset and toggles")
		unsafe := fs.Bool("unsafe", false, "allow the plan's unsafe toggles, which recreate races")
		stats := fs.Bool("lockstat", false, "print the run's lock statistics after the scenario")
		stall := declareStall(fs, "run")
		return func(_ context.Context, args []string, stdout, stderr io.Writer) int {
			if err := stall.apply(); err != nil {
				return fail(stderr, err)
			}
			p, err := parsePlan(*planName, *unsafe)
			if err != nil {
				return fail(stderr, planError("run", *planName, err))
			}
			newBackend := func() (scenario.Backend, error) { return modelrun.NewWithPlan(p) }
			if *onKernel {
				if p != nil || *stats {
					return fail(stderr, errors.New("--plan and --lockstat apply to the model; the kernel runs as it is"))
				}
				newBackend = newKernel
			}
			name, src, err := scenario.ReadFile(args[0], os.Stdin)
			if err != nil {
				return fail(stderr, err)
			}
			if *stats {
				defer lockstat.SetStats(lockstat.SetStats(true))
				lockstat.ResetStats()
			}
			status, err := scenario.RunSource(name, src, newBackend, stdout, stderr)
			if err != nil {
				return fail(stderr, err)
			}
			if *stats {
				fmt.Fprintf(stdout, "\nlock statistics of %s under plan %s:\n", name, p.Name())
				if err := lockstat.WriteTable(stdout, lockstat.Snapshot(), 0); err != nil {
					return fail(stderr, err)
				}
			}
			return status
		}
	},
}

// stallFlag is --stall, the kernel runner's kernelrun.StallTimeout.
type stallFlag struct {
	command string
	d       *time.Duration
}

func declareStall(fs *flag.FlagSet, command string) stallFlag {
	return stallFlag{command, fs.Duration("stall", kernelrun.StallTimeout,
		"on the kernel, how long a call may stay blocked while every task sleeps before it is reported stuck")}
}

// apply sets the kernel runner's stall timeout, which must be positive.
func (f stallFlag) apply() error {
	if *f.d <= 0 {
		return fmt.Errorf("%s: --stall %v: the stall timeout must be positive", f.command, *f.d)
	}
	kernelrun.StallTimeout = *f.d
	return nil
}

func newModel() (scenario.Backend, error)  { return modelrun.New() }
func newKernel() (scenario.Backend, error) { return kernelrun.New() }
