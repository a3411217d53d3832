// Command tasklist runs the tasklist laboratory: scenario files on the model of the Linux
// process-lifecycle subsystem and on the host kernel, benchmarks of the lock plans, the race
// checker and the scenario generator.
//
//	tasklist run FILE           run a scenario on the model
//	tasklist run --kernel FILE  run a scenario on the host kernel (needs root)
//	tasklist diff FILE...       run each scenario on both and print where they differ
//	tasklist bench              run the benchmark workloads on the plans and the host; write a report
//	tasklist plans              list the lock plans: presets and toggles
//	tasklist check              check random concurrent schedules under a lock plan
//	tasklist gen                write random scenario files for tasklist diff
//	tasklist trace CMD...       record CMD's process calls with strace
//	tasklist replay TRACE...    replay recorded calls on the model and compare the results
//	tasklist version            print the module and Go versions
//	tasklist help [COMMAND]     print the commands, or one command's flags
//
// FILE may be - for standard input. Every command takes -h or --help. Errors go to standard
// error prefixed "tasklist:", except those that point into a scenario ("FILE:LINE:COL: ..."),
// which keep the form editors jump to. A command whose standard output cannot be written says
// so and exits 2. bench and check stop on SIGINT, SIGTERM or SIGHUP, say what they did and exit
// 128 plus the signal's number; a second signal ends them at once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"tasklist/scenario"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// command is one subcommand. Declaring its flags in setup is all it takes to get -h/--help,
// `tasklist help NAME`, flags anywhere among the arguments and usage errors.
type command struct {
	name    string
	summary string // one line for the list of commands
	// args is the synopsis of the arguments after the flags ("FILE", "FILE..."); minArgs and
	// maxArgs bound their number, maxArgs -1 for no bound.
	args             string
	minArgs, maxArgs int
	// details is the rest of the help text, paragraphs separated by blank lines; may be empty.
	details string
	// interruptible commands get a context that the stop signals end (withInterrupts); the
	// others keep the signals' default actions.
	interruptible bool
	// commandLine marks a command whose arguments are a command line of their own: its flags
	// end at the first argument, as env's and nice's do.
	commandLine bool
	// setup declares the command's flags on fs and returns the function that runs it with the
	// arguments left after the flags; that function returns the exit status.
	setup func(fs *flag.FlagSet) runFunc
}

// runFunc runs a command with the arguments left after its flags and returns its exit status.
type runFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// commands lists the subcommands in the order the usage text shows them. Each lives in a file
// of its own; help is the dispatcher's.
var commands = []command{
	runCommand,
	diffCommand,
	benchCommand,
	plansCommand,
	checkCommand,
	genCommand,
	traceCommand,
	replayCommand,
	versionCommand,
}

// run runs the command line args and returns the exit status: 0 for success, 1 when a command
// found what it looks for (a failed expectation, a difference, a violation), 2 for a usage
// error or a failure, lost output included, and what interruptStatus says for an interrupted
// command.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out := &outputWriter{w: stdout}
	status := dispatch(ctx, args, out, stderr)
	if out.err != nil {
		fmt.Fprintf(stderr, "tasklist: writing standard output: %v\n", out.err)
		if status < 2 {
			status = 2
		}
	}
	return status
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch name := args[0]; name {
	case "help", "-h", "-help", "--help":
		return help(args[1:], stdout, stderr)
	default:
		c, ok := lookup(name)
		if !ok {
			return unknownCommand(name, stderr)
		}
		return c.run(ctx, args[1:], stdout, stderr)
	}
}

// outputWriter passes writes on to w and keeps the first error, so that output lost on the
// way (a full disk, /dev/full) is reported once the command is done.
type outputWriter struct {
	w   io.Writer
	err error
}

func (o *outputWriter) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(p)
	if err != nil {
		o.err = err
	}
	return n, err
}

// run parses the command's flags, which may come before, between or after its arguments, and
// runs it.
func (c *command) run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := c.flagSet()
	runFunc := c.setup(fs)
	parse := parseInterspersed
	if c.commandLine {
		parse = parseLeading
	}
	operands, err := parse(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.help(stdout)
		return 0
	case err != nil:
		return c.usageError(stderr, "%v", err)
	case len(operands) < c.minArgs:
		return c.usageError(stderr, "missing %s", c.args)
	case c.maxArgs >= 0 && len(operands) > c.maxArgs:
		return c.usageError(stderr, "unexpected argument %q", operands[c.maxArgs])
	}
	if c.interruptible {
		var stop func()
		ctx, stop = withInterrupts(ctx)
		defer stop()
	}
	return runFunc(ctx, operands, stdout, stderr)
}

// flagSet returns a fresh flag set for c that reports nothing itself: run says what is wrong.
func (c *command) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseInterspersed parses args with fs, letting flags follow the arguments as well as precede
// them, and returns the arguments that are not flags. After "--" everything is an argument.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var operands []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return operands, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(operands, rest...), nil
		}
		operands = append(operands, rest[0])
		args = rest[1:]
	}
}

// parseLeading parses the flags at the head of args and returns the arguments after them.
func parseLeading(fs *flag.FlagSet, args []string) ([]string, error) {
	err := fs.Parse(args)
	return fs.Args(), err
}

// usageError reports a mistake in c's command line with c's usage line, and returns status 2.
func (c *command) usageError(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "tasklist: %s: %s\n", c.name, fmt.Sprintf(format, args...))
	fmt.Fprintf(stderr, "usage: %s\nRun 'tasklist help %s' for details.\n", c.synopsis(), c.name)
	return 2
}

// fail reports err, which ended a command, and returns status 2. An error that points into a
// scenario is printed as it is, in the form editors jump to; any other is prefixed "tasklist:".
func fail(stderr io.Writer, err error) int {
	var perr *scenario.Error
	if errors.As(err, &perr) {
		fmt.Fprintln(stderr, err)
	} else {
		fmt.Fprintf(stderr, "tasklist: %v\n", err)
	}
	return 2
}
