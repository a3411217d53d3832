package main

import (
	"flag"
	"io"
	"os"

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

Exit status: 0 when every expectation held, 1 when one did not, 2 when the file cannot be
read or parsed ("FILE:LINE:COL: message", before anything runs) or the run cannot start.`,
	setup: func(fs *flag.FlagSet) func([]string, io.Writer, io.Writer) int {
		onKernel := fs.Bool("kernel", false, "run on the host kernel instead of the model (needs root and a C compiler)")
		return func(args []string, stdout, stderr io.Writer) int {
			newBackend := newModel
			if *onKernel {
				newBackend = newKernel
			}
			name, src, err := scenario.ReadFile(args[0], os.Stdin)
			if err != nil {
				return fail(stderr, err)
			}
			status, err := scenario.RunSource(name, src, newBackend, stdout, stderr)
			if err != nil {
				return fail(stderr, err)
			}
			return status
		}
	},
}

func newModel() (scenario.Backend, error)  { return modelrun.New() }
func newKernel() (scenario.Backend, error) { return kernelrun.New() }
