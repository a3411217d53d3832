package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"tasklist/internal/scengen"
	"tasklist/scenario"
)

var genCommand = command{
	name:    "gen",
	summary: "write random scenario files for differential testing with tasklist diff",
	details: `
Writes --n files, OUT/AREA-SEED.scn for the consecutive seeds from --seed, each a random
scenario of the area (exec: exec × threads × ptrace; wait: wait selectors × reparenting;
creds: credentials × limits; sem: semaphores × signals; mixed; killrace: sleeping calls
× kills that come out of the same step as their news; pidfd: vfork, clone3, pidfds and
prlimit × exits, exec and ptrace), bounded in size and written
to avoid races the runners cannot order. Each file is checked to parse. The same area and
seed always give the same file. Compare them with tasklist diff:

  tasklist gen --area exec --n 200 --seed 1 --out /tmp/gen
  sudo tasklist diff --stall 500ms /tmp/gen/*.scn`,
	setup: func(fs *flag.FlagSet) runFunc {
		fl := &genFlags{}
		fl.bind(fs)
		return fl.run
	},
}

// genFlags are gen's command line.
type genFlags struct {
	area string
	n    int
	seed uint64
	out  string
}

// bind declares the flags on fs, each bound to its field.
func (f *genFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.area, "area", "mixed", "area: "+strings.Join(scengen.Areas, ", "))
	fs.IntVar(&f.n, "n", 100, "number of files")
	fs.Uint64Var(&f.seed, "seed", 1, "first seed")
	fs.StringVar(&f.out, "out", ".", "directory to write to")
}

func (f *genFlags) run(_ context.Context, _ []string, _, stderr io.Writer) int {
	switch {
	case !slices.Contains(scengen.Areas, f.area):
		fmt.Fprintf(stderr, "tasklist: gen: unknown area %q (areas: %s)\n", f.area, strings.Join(scengen.Areas, ", "))
		return 2
	case f.n < 1:
		fmt.Fprintf(stderr, "tasklist: gen: --n %d: want 1 or more\n", f.n)
		return 2
	}
	if err := f.generate(); err != nil {
		fmt.Fprintf(stderr, "tasklist: gen: %v\n", err)
		return 2
	}
	return 0
}

// generate writes the files.
func (f *genFlags) generate() error {
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	for i := range uint64(f.n) {
		seed := f.seed + i
		src, err := scengen.Generate(f.area, seed)
		if err != nil {
			return err
		}
		path := filepath.Join(f.out, fmt.Sprintf("%s-%d.scn", f.area, seed))
		if _, err := scenario.Parse(path, []byte(src)); err != nil {
			return fmt.Errorf("generated file does not parse: %w", err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			return err
		}
	}
	return nil
}
