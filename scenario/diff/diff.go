// Package diff runs scenario files on two backends, the model and the host kernel, and reports
// the statements whose printed results differ: the differences are where the model and Linux
// disagree (or where a scenario depends on something the two runners treat differently).
package diff

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"tasklist/scenario"
)

// NewBackend makes a fresh backend for one run.
type NewBackend func() (scenario.Backend, error)

// Line is one statement whose results differ. Model or Kernel is empty when that run printed
// nothing for the line (a statement skipped because a name it uses was never bound).
type Line struct {
	Line          int
	Source        string
	Model, Kernel string
}

// result is one printed line, "LINE: SOURCE = RESULT", taken apart.
type result struct {
	source, value string
}

// parseOutput takes a run's standard output apart by line number. The result is what follows
// the last " = ": a source may bind a name ("B = A.fork()"), a result never holds " = ".
func parseOutput(out string) map[int]result {
	m := map[int]result{}
	for _, l := range strings.Split(out, "\n") {
		num, rest, ok := strings.Cut(l, ": ")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil {
			continue
		}
		i := strings.LastIndex(rest, " = ")
		if i < 0 {
			continue
		}
		m[n] = result{source: rest[:i], value: rest[i+3:]}
	}
	return m
}

// Compare returns the lines where two runs' standard outputs differ, in line order.
func Compare(model, kernel string) []Line {
	a, b := parseOutput(model), parseOutput(kernel)
	var lines []Line
	for n, ra := range a {
		if rb, ok := b[n]; !ok || ra.value != rb.value {
			lines = append(lines, Line{Line: n, Source: ra.source, Model: ra.value, Kernel: rb.value})
		}
	}
	for n, rb := range b {
		if _, ok := a[n]; !ok {
			lines = append(lines, Line{Line: n, Source: rb.source, Kernel: rb.value})
		}
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].Line < lines[j].Line })
	return lines
}

// File runs src, the scenario called name, on a fresh model backend and a fresh kernel backend
// and returns the lines whose results differ. It fails when src does not parse (a
// *scenario.Error), a backend cannot be made or closed, or a runner could not tell what a call
// did (the run's FILE:LINE message); expectations written in the scenario
// do not matter here.
func File(name string, src []byte, model, kernel NewBackend) ([]Line, error) {
	s, err := scenario.Parse(name, src)
	if err != nil {
		return nil, err
	}
	outModel, err := runOn(s, name, model)
	if err != nil {
		return nil, err
	}
	outKernel, err := runOn(s, name, kernel)
	if err != nil {
		return nil, err
	}
	return Compare(outModel, outKernel), nil
}

func runOn(s *scenario.Script, name string, newBackend NewBackend) (string, error) {
	b, err := newBackend()
	if err != nil {
		return "", fmt.Errorf("%s: cannot run: %w", name, err)
	}
	var out, errs bytes.Buffer
	status := scenario.Run(s, b, &out, &errs)
	if err := b.Close(); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if status == 2 {
		// The runner could not tell what a call did: what it printed is no result to compare.
		lines := strings.Split(strings.TrimSpace(errs.String()), "\n")
		return "", errors.New(lines[len(lines)-1])
	}
	return out.String(), nil
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
