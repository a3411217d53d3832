// Command tasklist runs the tasklist laboratory: scenario files on the
// model of the Linux process-lifecycle subsystem.
//
//	tasklist run FILE     run a scenario on the model
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"tasklist/scenario"
	"tasklist/scenario/modelrun"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: tasklist COMMAND [ARGS]

commands:
  run FILE    run a scenario file on the model and print one line per statement
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return runScenario(args[1:], stdout, stderr)
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
	fs.Usage = func() { fmt.Fprint(stderr, "usage: tasklist run FILE\n") }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	return scenario.RunFile(fs.Arg(0), func() (scenario.Backend, error) { return modelrun.New() }, stdout, stderr)
}
