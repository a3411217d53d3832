package main

import (
	"flag"
	"fmt"
	"io"

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
