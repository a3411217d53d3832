package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"tasklist/plan"
	"tasklist/replay"
)

var replayCommand = command{
	name:    "replay",
	summary: "replay recorded process calls on the model and compare every result with the trace",
	args:    "TRACE...",
	minArgs: 1,
	maxArgs: -1,
	details: `
Each TRACE is strace's output as tasklist trace records it, or a plain strace file of the
same form (strace -f -ttt -X verbose --decode-pids=pidns ...). The traced process becomes a
child of the model's init, which stands for everything outside the trace, with the nice
value, ids and limits of the trace's header (or of its first reads of them). Every call is
made at its entry line, in file order, on the model under --plan; its result is compared
with the trace's, pids as task identities. A call the model lacks is counted unsupported,
by reason; one outside its scope (memory and futex calls, an execve that fails on the file
system, rt_sigreturn) outside, by reason. After a divergence the task is out of step and
its later calls are not compared.

The table gives, per trace, the calls, those compared, agreeing and disagreeing, the reasons,
the calls not compared, the +++ lines checked and each divergence as FILE:LINE. --explain N
adds to each divergence the N trace lines either side of it and the model's view of the
task. --format json prints {"traces": [{"file", "calls", "compared", "agree", "disagree",
"outside", "unsupported", "not_compared", "ends_checked", "ends_agree", "divergences"}]}.

Exit status: 0 when nothing disagrees, 1 when something does, 2 when a trace cannot be read
or parsed ("FILE:LINE: message"; the other traces are still replayed).`,
	setup: func(fs *flag.FlagSet) runFunc {
		planName := fs.String("plan", "scalable", "replay on the model under this lock plan: a preset and toggles")
		unsafe := fs.Bool("unsafe", false, "allow the plan's unsafe toggles, which recreate races")
		format := fs.String("format", "table", "output format: table or json")
		explain := fs.Int("explain", 0, "show this many trace lines around each divergence, and the model's view")
		return func(_ context.Context, paths []string, stdout, stderr io.Writer) int {
			if *format != "table" && *format != "json" {
				return fail(stderr, fmt.Errorf("replay: --format %q: want table or json", *format))
			}
			if *explain < 0 {
				return fail(stderr, errors.New("replay: --explain must not be negative"))
			}
			p, err := plan.Parse(*planName, *unsafe)
			if err != nil {
				return fail(stderr, err)
			}
			return replayTraces(paths, replay.Options{Plan: p, Explain: *explain}, *format, stdout, stderr)
		}
	},
}

// replayTraces replays each trace and prints the summaries; it returns the exit status.
func replayTraces(paths []string, opts replay.Options, format string, stdout, stderr io.Writer) int {
	status := 0
	var sums []*replay.Summary
	for _, path := range paths {
		s, err := replay.ReplayFile(path, opts)
		if err != nil {
			var serr *replay.SyntaxError
			if errors.As(err, &serr) {
				fmt.Fprintln(stderr, err)
			} else {
				fmt.Fprintf(stderr, "tasklist: %v\n", err)
			}
			status = 2
			continue
		}
		sums = append(sums, s)
		if len(s.Divergences) > 0 && status == 0 {
			status = 1
		}
	}
	var err error
	if format == "json" {
		err = replay.WriteJSON(stdout, sums)
	} else {
		err = replay.WriteTable(stdout, sums)
	}
	if err != nil {
		return fail(stderr, err)
	}
	return status
}
