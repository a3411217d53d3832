package scenario_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tasklist/plan"
	"tasklist/scenario"
	"tasklist/scenario/kernelrun"
	"tasklist/scenario/modelrun"
)

// The corpus: every testdata/scenarios/NNN-name.scn has a golden NNN-name.out, the standard
// output of `tasklist run --kernel` on the file, recorded from Linux. The model must print the
// same text; where the kernel runner can run, Linux must still print it too, so that a golden
// file that stops matching the kernel is caught rather than trusted.
const corpusDir = "../testdata/scenarios"

// corpusStallTimeout shortens the kernel runner's wait before it declares a background call
// that nothing can complete stalled (EDEADLK): the corpus has such joins, and every task of a
// scenario is asleep then, so a short timeout cannot misfire.
const corpusStallTimeout = 2 * time.Second

type corpusFile struct {
	name string // file name without .scn
	src  []byte
	want string
}

func loadCorpus(t *testing.T) []corpusFile {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(corpusDir, "*.scn"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no scenarios in %s", corpusDir)
	}
	var files []corpusFile
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(strings.TrimSuffix(p, ".scn") + ".out")
		if err != nil {
			t.Fatalf("%s has no golden output: %v", p, err)
		}
		files = append(files, corpusFile{
			name: strings.TrimSuffix(filepath.Base(p), ".scn"),
			src:  src,
			want: string(want),
		})
	}
	return files
}

// runCorpusFile runs one scenario on b and compares what it prints with the golden output.
func runCorpusFile(t *testing.T, f corpusFile, b scenario.Backend) {
	t.Helper()
	got, errs, status := runScenario(t, f.name+".scn", f.src, b)
	if got != f.want {
		t.Errorf("output differs from %s.out (- golden, + this run):\n%s", f.name, lineDiff(f.want, got))
	}
	if status != 0 || errs != "" {
		t.Errorf("status %d, stderr:\n%s", status, errs)
	}
}

// runScenario parses src as the file name, runs it on b and closes b. It returns what the run
// printed on standard output and standard error and its status.
func runScenario(t *testing.T, name string, src []byte, b scenario.Backend) (stdout, stderr string, status int) {
	t.Helper()
	s, err := scenario.Parse(name, src)
	if err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	status = scenario.Run(s, b, &out, &errs)
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return out.String(), errs.String(), status
}

// runCorpusOnModel runs one scenario on a fresh model under p (nil: tasklist's own locking)
// and checks the kernel's invariants after it.
func runCorpusOnModel(t *testing.T, f corpusFile, p *plan.Plan) {
	t.Helper()
	b, err := modelrun.NewWithPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	k := b.Kernel()
	runCorpusFile(t, f, b)
	if err := k.CheckInvariants(); err != nil {
		t.Errorf("invariants after the scenario: %v", err)
	}
}

// TestCorpusModel runs every corpus scenario on the model.
func TestCorpusModel(t *testing.T) {
	for _, f := range loadCorpus(t) {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			runCorpusOnModel(t, f, nil)
		})
	}
}

// TestCorpusPlans runs every corpus scenario on the model under every preset lock plan: a
// plan only adds a table lock where a historical design took one, so every output must still
// be the golden one. -short runs one preset.
func TestCorpusPlans(t *testing.T) {
	presets := plan.PresetNames()[1:] // after scalable, which TestCorpusModel runs
	if testing.Short() {
		presets = presets[:1]
	}
	files := loadCorpus(t)
	for _, name := range presets {
		t.Run(name, func(t *testing.T) {
			for _, f := range files {
				t.Run(f.name, func(t *testing.T) {
					t.Parallel()
					runCorpusOnModel(t, f, plan.MustParse(name, false))
				})
			}
		})
	}
}

// TestCorpusKernel runs every corpus scenario on the host kernel, where the kernel runner can
// create pid namespaces (root), and checks that Linux still prints the golden output.
func TestCorpusKernel(t *testing.T) {
	needKernelRunner(t)
	for _, f := range loadCorpus(t) {
		t.Run(f.name, func(t *testing.T) {
			// RLIMIT_NPROC counts a uid's processes over the whole host,
			// so a file that tests it runs alone: the others, which
			// switch to the same uids, wait until it is done.
			if !bytes.Contains(f.src, []byte("RLIMIT_NPROC")) {
				t.Parallel()
			}
			b, err := kernelrun.New()
			if err != nil {
				t.Fatal(err)
			}
			runCorpusFile(t, f, b)
		})
	}
}

// needKernelRunner skips t unless the kernel runner can run here (root, not -short, a C
// compiler), saying why, and shortens its stall timeout for the rest of t.
func needKernelRunner(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the kernel runs are skipped")
	}
	if os.Geteuid() != 0 {
		t.Skip("the kernel runner needs root to create pid and IPC namespaces; golden outputs not checked against Linux")
	}
	// Probe once, so that a host without the privilege or a C compiler skips with the reason.
	probe, err := kernelrun.New()
	switch {
	case errors.Is(err, kernelrun.ErrNeedRoot):
		t.Skip("the kernel runner cannot create namespaces here: ", err)
	case errors.Is(err, kernelrun.ErrNoCompiler):
		t.Skip("the kernel runner cannot build its agent: ", err)
	case err != nil:
		t.Fatal(err)
	}
	if err := probe.Close(); err != nil {
		t.Fatal(err)
	}
	old := kernelrun.StallTimeout
	kernelrun.StallTimeout = corpusStallTimeout
	t.Cleanup(func() { kernelrun.StallTimeout = old })
}

// TestCorpusCovers checks that every scenario names the spec items it covers on its first
// line.
func TestCorpusCovers(t *testing.T) {
	for _, f := range loadCorpus(t) {
		first, _, _ := strings.Cut(string(f.src), "\n")
		if !strings.HasPrefix(first, "# covers: ") || len(strings.Fields(first)) < 3 {
			t.Errorf("%s.scn: first line %q does not say what it covers", f.name, first)
		}
	}
}

// lineDiff returns a line diff of want and got: common lines prefixed with two spaces,
// lines only in want with "- ", lines only in got with "+ " (longest common subsequence).
func lineDiff(want, got string) string {
	a := strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	b := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var sb strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			fmt.Fprintf(&sb, "  %s\n", a[i])
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] > lcs[i+1][j]):
			fmt.Fprintf(&sb, "+ %s\n", b[j])
			j++
		default:
			fmt.Fprintf(&sb, "- %s\n", a[i])
			i++
		}
	}
	return sb.String()
}
