// Command tasklist runs the tasklist laboratory: scenario files on the
// model of the Linux process-lifecycle subsystem and on the host kernel.
//
//	tasklist run FILE           run a scenario on the model
//	tasklist run --kernel FILE  run a scenario on the host kernel (needs root)
//	tasklist diff FILE...       run each scenario on both and print where they differ
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// command is one subcommand: its name, a one-line summary for the usage
// text, and the function that runs it with the arguments after its name
// and returns the exit status.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands in the order the usage text shows them.
// Each lives in a file of its own.
var commands = []command{
	runCommand,
	diffCommand,
	benchCommand,
}

func usage(w io.Writer) {
	fmt.Fprint(w, "usage: tasklist COMMAND [ARGS]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "tasklist: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}
