// Command scengen writes random scenario files for one area (internal/scengen):
//
//	go run ./internal/scengen/cmd/scengen -area exec -n 200 -seed 1 -out DIR
//
// writes DIR/exec-SEED.scn for n consecutive seeds from -seed; each file is checked to parse.
// Compare them with `tasklist diff DIR/*.scn`.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"tasklist/internal/scengen"
	"tasklist/scenario"
)

func main() {
	area := flag.String("area", "mixed", "area: "+strings.Join(scengen.Areas, ", "))
	n := flag.Int("n", 100, "number of files")
	seed := flag.Uint64("seed", 1, "first seed")
	out := flag.String("out", ".", "directory to write to")
	flag.Parse()
	if err := run(*area, *n, *seed, *out); err != nil {
		fmt.Fprintln(os.Stderr, "scengen:", err)
		os.Exit(2)
	}
}

func run(area string, n int, seed uint64, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := range uint64(n) {
		src, err := scengen.Generate(area, seed+i)
		if err != nil {
			return err
		}
		path := filepath.Join(dir, fmt.Sprintf("%s-%d.scn", area, seed+i))
		if _, err := scenario.Parse(path, []byte(src)); err != nil {
			return fmt.Errorf("generated file does not parse: %w", err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			return err
		}
	}
	return nil
}
