// Package diff runs scenario files on two backends, the model and the host kernel, and reports
// the statements whose printed results differ: the differences are where the model and Linux
// disagree (or where a scenario depends on something the two runners treat differently).
package diff

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
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

// File runs the scenario at path on a fresh model backend and a fresh kernel backend and
// returns the lines whose results differ. It fails when the file cannot be read or parsed, a
// backend cannot be made or closed, or it could not tell what a call did (the run's FILE:LINE
// message); expectations written in the file do not matter here.
func File(path string, model, kernel NewBackend) ([]Line, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := scenario.Parse(path, src)
	if err != nil {
		return nil, err
	}
	outModel, err := runOn(s, path, model)
	if err != nil {
		return nil, err
	}
	outKernel, err := runOn(s, path, kernel)
	if err != nil {
		return nil, err
	}
	return Compare(outModel, outKernel), nil
}

func runOn(s *scenario.Script, path string, newBackend NewBackend) (string, error) {
	b, err := newBackend()
	if err != nil {
		return "", fmt.Errorf("%s: cannot run: %w", path, err)
	}
	var out, errs bytes.Buffer
	status := scenario.Run(s, b, &out, &errs)
	if err := b.Close(); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if status == 2 {
		// The runner could not tell what a call did: what it printed is no result to compare.
		lines := strings.Split(strings.TrimSpace(errs.String()), "\n")
		return "", errors.New(lines[len(lines)-1])
	}
	return out.String(), nil
}

// Files compares every file and prints, per file, each differing line with both results. It
// returns 0 when no line differs, 1 when some do, 2 when a file cannot be parsed or run.
func Files(paths []string, model, kernel NewBackend, stdout, stderr io.Writer) int {
	status := 0
	for _, path := range paths {
		lines, err := File(path, model, kernel)
		if err != nil {
			fmt.Fprintln(stderr, err)
			status = 2
			continue
		}
		if len(lines) == 0 {
			fmt.Fprintf(stdout, "%s: no differences\n", path)
			continue
		}
		if status == 0 {
			status = 1
		}
		fmt.Fprintf(stdout, "%s: %d lines differ\n", path, len(lines))
		for _, l := range lines {
			fmt.Fprintf(stdout, "  %d: %s\n    model:  %s\n    kernel: %s\n", l.Line, l.Source, orNothing(l.Model), orNothing(l.Kernel))
		}
	}
	return status
}

func orNothing(s string) string {
	if s == "" {
		return "(nothing printed)"
	}
	return s
}
