package replay

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/traces/*.golden from the replays")

// The recorded workloads replay with no divergence but those their golden file lists (each a
// model difference with a scenario in testdata/found), and compare at least the share of
// their calls in scope that the golden file records.
func TestTraces(t *testing.T) {
	files, err := filepath.Glob("../testdata/traces/*.strace")
	if err != nil || len(files) == 0 {
		t.Fatalf("no traces: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".strace")
		t.Run(name, func(t *testing.T) {
			got, err := ReplayFile(file, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got.File = filepath.Base(file)
			golden := strings.TrimSuffix(file, ".strace") + ".golden"
			if *update {
				var buf bytes.Buffer
				if err := WriteJSON(&buf, []*Summary{got}); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want := readGolden(t, golden)
			checkAgainstGolden(t, got, want)
		})
	}
}

func readGolden(t *testing.T, path string) *Summary {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./replay/ -run TestTraces -update writes it)", err)
	}
	var g struct{ Traces []*Summary }
	if err := json.Unmarshal(data, &g); err != nil || len(g.Traces) != 1 {
		t.Fatalf("%s: %v", path, err)
	}
	return g.Traces[0]
}

func checkAgainstGolden(t *testing.T, got, want *Summary) {
	t.Helper()
	if got.Calls != want.Calls || got.EndsChecked != want.EndsChecked {
		t.Errorf("%d calls and %d end lines, the golden file %d and %d: the trace changed without it",
			got.Calls, got.EndsChecked, want.Calls, want.EndsChecked)
	}
	for _, d := range got.Divergences {
		if !slices.ContainsFunc(want.Divergences, func(w Divergence) bool {
			return w.Line == d.Line && w.Call == d.Call && w.TraceResult == d.TraceResult && w.ModelResult == d.ModelResult
		}) {
			t.Errorf("line %d: %s: trace %s, model %s", d.Line, d.Call, d.TraceResult, d.ModelResult)
		}
	}
	if share(got) < share(want) {
		t.Errorf("compared %d of %d calls in scope, fewer than the golden file's %d of %d",
			got.Compared, got.InScope(), want.Compared, want.InScope())
	}
	if share(got) > share(want) || len(got.Divergences) < len(want.Divergences) {
		t.Logf("better than the golden file (%d of %d compared, %d divergences): update it with -update",
			got.Compared, got.InScope(), len(got.Divergences))
	}
}

func share(s *Summary) float64 {
	if s.InScope() == 0 {
		return 1
	}
	return float64(s.Compared) / float64(s.InScope())
}
