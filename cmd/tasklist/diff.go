package main

import (
	"fmt"
	"io"

	"tasklist/scenario/diff"
)

var diffCommand = command{
	name:    "diff",
	summary: "run each scenario file on the model and on the kernel and print where they differ",
	run:     diffScenarios,
}

func diffScenarios(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, "usage: tasklist diff FILE...\n")
		return 2
	}
	return diff.Files(args, newModel, newKernel, stdout, stderr)
}
