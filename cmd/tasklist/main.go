// Command tasklist runs the tasklist laboratory: scenario files on the
// model of the Linux process-lifecycle subsystem.
//
//	tasklist run FILE           run a scenario on the model
//	tasklist run --kernel FILE  run a scenario on the host kernel (needs root)
//	tasklist diff FILE...       run each scenario on both and print where they differ
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"tasklist/scenario"
	"tasklist/scenario/diff"
	"tasklist/scenario/kernelrun"
	"tasklist/scenario/modelrun"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: tasklist COMMAND [ARGS]

commands:
  run FILE           run a scenario file on the model and print one line per statement
  run --kernel FILE  run it on the host kernel instead (needs root)
  diff FILE...       run each file on the model and on the kernel and print the lines
                     whose results differ
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return runScenario(args[1:], stdout, stderr)
	case "diff":
		return diffScenarios(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "tasklist: unknown command %q\n%s", args[0], usage)
	return 2
}

func runScenario(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, "usage: tasklist run [--kernel] FILE\n") }
	onKernel := fs.Bool("kernel", false, "run on the host kernel instead of the model")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	newBackend := newModel
	if *onKernel {
		newBackend = newKernel
	}
	return scenario.RunFile(fs.Arg(0), newBackend, stdout, stderr)
}

func newModel() (scenario.Backend, error)  { return modelrun.New() }
func newKernel() (scenario.Backend, error) { return kernelrun.New() }

func diffScenarios(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, "usage: tasklist diff FILE...\n")
		return 2
	}
	return diff.Files(args, newModel, newKernel, stdout, stderr)
}
