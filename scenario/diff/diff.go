// Package diff runs scenario files on two backends, the model and the host kernel, and reports
// the statements whose printed results differ: the differences are where the model and Linux
// disagree (or where a scenario depends on something the two runners treat differently). It
// compares the runs' outcomes (scenario.Outcomes), not their printed text.
package diff

import (
	"fmt"
	"io"
	"sort"

	"tasklist/scenario"
)

// Line is one statement whose results differ. Model or Kernel is empty when that run printed
// nothing for the line (a statement skipped because a name it uses was never bound).
type Line struct {
	Line          int
	Source        string
	Model, Kernel string
}

// Compare returns the lines where two runs' printed results differ, in line order.
func Compare(model, kernel []scenario.Outcome) []Line {
	a, b := printed(model), printed(kernel)
	var lines []Line
	for n, oa := range a {
		if ob, ok := b[n]; !ok || oa.Text != ob.Text {
			lines = append(lines, Line{Line: n, Source: oa.Source, Model: oa.Text, Kernel: ob.Text})
		}
	}
	for n, ob := range b {
		if _, ok := a[n]; !ok {
			lines = append(lines, Line{Line: n, Source: ob.Source, Kernel: ob.Text})
		}
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].Line < lines[j].Line })
	return lines
}

// printed indexes the outcomes that printed a result by their line.
func printed(outcomes []scenario.Outcome) map[int]scenario.Outcome {
	m := map[int]scenario.Outcome{}
	for _, o := range outcomes {
		if o.Printed() {
			m[o.Line] = o
		}
	}
	return m
}

// File runs src, the scenario called name, on a fresh model backend and a fresh kernel backend
// and returns the lines whose results differ. It fails when src does not parse (a
// *scenario.Error), a backend cannot be made or closed, or a runner could not tell what a call
// did (the run's FILE:LINE message); expectations written in the scenario do not matter here.
func File(name string, src []byte, model, kernel scenario.NewBackend) ([]Line, error) {
	outModel, err := run(name, src, model)
	if err != nil {
		return nil, err
	}
	outKernel, err := run(name, src, kernel)
	if err != nil {
		return nil, err
	}
	return Compare(outModel, outKernel), nil
}

// run runs src on a fresh backend and returns its outcomes. A run that ended because its
// backend could not tell what a call did printed no results to compare: it is an error.
func run(name string, src []byte, newBackend scenario.NewBackend) ([]scenario.Outcome, error) {
	var outcomes []scenario.Outcome
	collect := func(o scenario.Outcome) { outcomes = append(outcomes, o) }
	if err := scenario.ExecSource(name, src, newBackend, collect); err != nil {
		return nil, err
	}
	if n := len(outcomes); n > 0 {
		if err := outcomes[n-1].FatalError(); err != nil {
			return nil, err
		}
	}
	return outcomes, nil
}

// Print writes the differences File found in the scenario called name: a line saying how many
// statements differ, or that none do, then each with both results.
func Print(w io.Writer, name string, lines []Line) {
	if len(lines) == 0 {
		fmt.Fprintf(w, "%s: no differences\n", name)
		return
	}
	fmt.Fprintf(w, "%s: %d lines differ\n", name, len(lines))
	for _, l := range lines {
		fmt.Fprintf(w, "  %d: %s\n    model:  %s\n    kernel: %s\n", l.Line, l.Source, orNothing(l.Model), orNothing(l.Kernel))
	}
}

func orNothing(s string) string {
	if s == "" {
		return "(nothing printed)"
	}
	return s
}
