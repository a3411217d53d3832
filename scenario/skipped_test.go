package scenario_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tasklist/scenario"
	"tasklist/scenario/kernelrun"
	"tasklist/scenario/modelrun"
)

// The skipped corpus: every testdata/skipped/NAME.scn has statements the driver refuses at run
// time (a name whose creating statement failed or did not run). NAME.out is the standard output
// of `tasklist run --kernel` on the file, recorded from Linux, and NAME.err its standard error;
// both runners must print both and exit with status 1, since the driver they share decides what
// is refused.
const skippedDir = "../testdata/skipped"

func TestSkippedModel(t *testing.T) {
	runSkipped(t, func() (scenario.Backend, error) { return modelrun.New() })
}

func TestSkippedKernel(t *testing.T) {
	needKernelRunner(t)
	runSkipped(t, func() (scenario.Backend, error) { return kernelrun.New() })
}

func runSkipped(t *testing.T, newBackend func() (scenario.Backend, error)) {
	paths, err := filepath.Glob(filepath.Join(skippedDir, "*.scn"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenarios in %s: %v", skippedDir, err)
	}
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".scn")
		t.Run(name, func(t *testing.T) {
			wantOut := readFile(t, strings.TrimSuffix(p, ".scn")+".out")
			wantErr := readFile(t, strings.TrimSuffix(p, ".scn")+".err")
			b, err := newBackend()
			if err != nil {
				t.Fatal(err)
			}
			out, errs, status := runScenario(t, name+".scn", []byte(readFile(t, p)), b)
			if out != wantOut {
				t.Errorf("stdout differs from %s.out (- golden, + this run):\n%s", name, lineDiff(wantOut, out))
			}
			if errs != wantErr {
				t.Errorf("stderr differs from %s.err (- golden, + this run):\n%s", name, lineDiff(wantErr, errs))
			}
			if status != 1 {
				t.Errorf("status %d, want 1", status)
			}
		})
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
