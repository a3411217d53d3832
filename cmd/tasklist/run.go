package main

import (
	"flag"
	"fmt"
	"io"

	"tasklist/plan"
	"tasklist/scenario"
	"tasklist/scenario/kernelrun"
	"tasklist/scenario/modelrun"
)

var runCommand = command{
	name:    "run",
	summary: "run a scenario file on the model (or with --kernel on the host kernel)",
	run:     runScenario,
}

func runScenario(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, "usage: tasklist run [--kernel | --plan PLAN [--unsafe]] FILE\n") }
	onKernel := fs.Bool("kernel", false, "run on the host kernel instead of the model")
	planName := fs.String("plan", "scalable", "run the model under this lock plan: a preset and toggles (see tasklist plans)")
	unsafe := fs.Bool("unsafe", false, "allow the plan's unsafe toggles, which recreate races")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	p, err := plan.Parse(*planName, *unsafe)
	if err != nil {
		fmt.Fprintf(stderr, "tasklist: %v\n", err)
		return 2
	}
	newBackend := func() (scenario.Backend, error) { return modelrun.NewWithPlan(p) }
	if *onKernel {
		if p != nil {
			fmt.Fprintln(stderr, "tasklist: --plan applies to the model; the kernel runs as it is")
			return 2
		}
		newBackend = newKernel
	}
	return scenario.RunFile(fs.Arg(0), newBackend, stdout, stderr)
}

func newModel() (scenario.Backend, error)  { return modelrun.New() }
func newKernel() (scenario.Backend, error) { return kernelrun.New() }
