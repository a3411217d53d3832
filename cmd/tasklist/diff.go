package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"tasklist/scenario"
	"tasklist/scenario/diff"
)

var diffCommand = command{
	name:    "diff",
	summary: "run each scenario file on the model and on the kernel and print where they differ",
	args:    "FILE...",
	minArgs: 1,
	maxArgs: -1,
	details: `
Runs each FILE on a fresh model and on the host kernel (which needs root and a C compiler)
and prints, per file, "FILE: no differences" or each statement whose results differ with
both results. Expectations written in the files do not matter here.

A FILE of - reads standard input, once. A file larger than 64 MiB is refused. --stall is
as for tasklist run --kernel.

Exit status: 0 when no statement differs, 1 when some do, 2 when a file cannot be read,
parsed or run (the other files are still compared).`,
	setup: func(fs *flag.FlagSet) runFunc {
		stall := declareStall(fs, "diff")
		return func(_ context.Context, paths []string, stdout, stderr io.Writer) int {
			if err := stall.apply(); err != nil {
				return fail(stderr, err)
			}
			return diffFiles(paths, stdout, stderr)
		}
	},
}

func diffFiles(paths []string, stdout, stderr io.Writer) int {
	if n := len(slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return p != "-" })); n > 1 {
		fmt.Fprintf(stderr, "tasklist: diff: standard input (-) is named %d times; it can be read once\n", n)
		return 2
	}
	status := 0
	for _, path := range paths {
		name, src, err := scenario.ReadFile(path, os.Stdin)
		var lines []diff.Line
		if err == nil {
			lines, err = diff.File(name, src, newModel, newKernel)
		}
		if err != nil {
			status = fail(stderr, err)
			continue
		}
		diff.Print(stdout, name, lines)
		if len(lines) > 0 && status == 0 {
			status = 1
		}
	}
	return status
}
