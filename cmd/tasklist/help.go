package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// usage prints the list of commands.
func usage(w io.Writer) {
	fmt.Fprint(w, "tasklist runs scenario files on the model of the Linux process-lifecycle subsystem\n"+
		"and on the host kernel, benchmarks its lock plans and checks them for races.\n\n"+
		"usage: tasklist COMMAND [ARGS]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-8s %s\n", "help", "print this list, or a command's help and flags")
	fmt.Fprint(w, "\nRun 'tasklist help COMMAND' or 'tasklist COMMAND -h' for a command's flags.\n")
}

// help is `tasklist help [COMMAND]`.
func help(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		usage(stdout)
		return 0
	case len(args) > 1:
		fmt.Fprintf(stderr, "tasklist: help: unexpected argument %q\nusage: tasklist help [COMMAND]\n", args[1])
		return 2
	}
	if args[0] == "help" {
		usage(stdout)
		return 0
	}
	c, ok := lookup(args[0])
	if !ok {
		return unknownCommand(args[0], stderr)
	}
	c.help(stdout)
	return 0
}

// help prints c's usage line, what it does and its flags.
func (c *command) help(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\n%s.\n", c.synopsis(), capitalize(c.summary))
	if c.details != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.details))
	}
	fs := c.flagSet()
	c.setup(fs)
	if hasFlags(fs) {
		fmt.Fprint(w, "\nflags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}

// synopsis is c's usage line: "tasklist run [flags] FILE".
func (c *command) synopsis() string {
	fs := c.flagSet()
	c.setup(fs)
	parts := []string{"tasklist", c.name}
	if hasFlags(fs) {
		parts = append(parts, "[flags]")
	}
	if c.args != "" {
		parts = append(parts, c.args)
	}
	return strings.Join(parts, " ")
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func lookup(name string) (*command, bool) {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i], true
		}
	}
	return nil, false
}

// unknownCommand reports a name that is no command, suggesting the one it was likely meant to
// be, and returns status 2.
func unknownCommand(name string, stderr io.Writer) int {
	fmt.Fprintf(stderr, "tasklist: unknown command %q", name)
	if s := suggest(name); s != "" {
		fmt.Fprintf(stderr, "; did you mean %s?", s)
	}
	fmt.Fprint(stderr, "\nRun 'tasklist help' for the list of commands.\n")
	return 2
}

// suggest returns the command name closest to name when it is close enough to be a slip: at
// most two edits away (an adjacent swap counting as one) and fewer edits than letters typed.
func suggest(name string) string {
	best, bestDist := "", 3
	for _, c := range append(commandNames(), "help") {
		if d := editDistance(strings.ToLower(name), c); d < bestDist && d < len(name) {
			best, bestDist = c, d
		}
	}
	return best
}

func commandNames() []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return names
}

// editDistance is the optimal string alignment distance of a and b, counted in bytes: the
// fewest insertions, deletions, substitutions and swaps of adjacent letters that make one the
// other, no letter edited twice.
func editDistance(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j].
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
