package main

import (
	"context"
	"flag"
	"io"
	"os"
	"strings"

	"tasklist/replay"
)

var traceCommand = command{
	name:        "trace",
	summary:     "record a command's process calls with strace, for tasklist replay",
	args:        "[--] CMD [ARGS...]",
	minArgs:     1,
	maxArgs:     -1,
	commandLine: true,
	details: `
Runs CMD under strace (Debian's strace package) and writes one file, every thread's lines
in one global order, each line with its thread id:

  strace -f -q -ttt -T -X verbose -s 96 --decode-pids=pidns --seccomp-bpf -A -o FILE
         -e trace=` + strings.Join(replay.TracedCalls, ",") + `
         -e signal=all -- CMD ARGS...

The calls traced are the process-lifecycle calls of the scenario language, the signal calls
that decide what they return, the calls programs make in their place (vfork, clone3,
prlimit64, the pidfd calls) and restart_syscall. Before strace's lines the file starts with
comment lines saying what CMD inherits and the model's init must give the traced process:
the nice value, the real, effective and saved ids, the capability sets, every resource
limit, and the kernel's release.

Flags end at CMD; "--" may come before it. Standard input, output and error are CMD's.

Exit status: CMD's, as strace passes it on; 2 when strace is missing or cannot run.`,
	setup: func(fs *flag.FlagSet) runFunc {
		out := fs.String("o", "tasklist.strace", "write the trace to this file")
		return func(_ context.Context, args []string, stdout, stderr io.Writer) int {
			status, err := replay.Record(*out, args, os.Stdin, stdout, stderr)
			if err != nil {
				return fail(stderr, err)
			}
			return status
		}
	},
}
