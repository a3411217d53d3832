package bench

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestReportReplacesAWholeReport: a report replaces an earlier one as a
// whole, stale charts included, and leaves nothing beside it.
func TestReportReplacesAWholeReport(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "report")
	r := synthetic(t)
	if _, err := r.WriteReport(dir); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "throughput-gone.svg")
	if err := os.WriteFile(stale, []byte("<svg/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	index, err := r.WriteReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	if index != filepath.Join(dir, "index.html") {
		t.Errorf("index %s", index)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("a chart of the earlier report is still there")
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Errorf("beside the report: %v", entries)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("the report directory: %v, %v", st.Mode(), err)
	}
}

// TestReportDirRefused: what is not a directory, or a directory holding
// anything but a report's files, is refused, and left as it was.
func TestReportDirRefused(t *testing.T) {
	parent := t.TempDir()
	file := filepath.Join(parent, "file")
	mine := filepath.Join(parent, "mine")
	for path, data := range map[string]string{file: "x", filepath.Join(mine, "notes.txt"): "keep me"} {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for dir, want := range map[string]string{
		"/dev/full":                   "not a directory",
		file:                          "not a directory",
		filepath.Join(file, "report"): "not a directory",
		"/proc/tasklist-report":       "/proc",
		mine:                          "holds notes.txt",
		".":                           "name the directory itself",
		"/":                           "name the directory itself",
	} {
		if err := CheckReportDir(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckReportDir(%s) = %v, want %q", dir, err, want)
		}
	}
	if _, err := synthetic(t).WriteReport(mine); err == nil {
		t.Error("a report replaced a directory of other files")
	}
	if data, err := os.ReadFile(filepath.Join(mine, "notes.txt")); err != nil || string(data) != "keep me" {
		t.Errorf("the refused directory changed: %q, %v", data, err)
	}
	for _, ok := range []string{filepath.Join(parent, "new"), filepath.Join(parent, "a", "b", "new"), t.TempDir()} {
		if err := CheckReportDir(ok); err != nil {
			t.Errorf("CheckReportDir(%s) = %v", ok, err)
		}
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 3 { // file, mine, a
		t.Errorf("the checks left %v", entries)
	}
}

// TestReportsWrittenAtOnce: two runs writing one report directory at once
// leave one whole report, not a mix of the two.
func TestReportsWrittenAtOnce(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "report")
	var wg sync.WaitGroup
	for _, kernel := range []string{"kernel-one", "kernel-two"} {
		r := synthetic(t)
		r.Env.Kernel = kernel
		wg.Go(func() {
			for range 4 {
				if _, err := r.WriteReport(dir); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	index, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	results, err := os.ReadFile(filepath.Join(dir, "results.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, kernel := range []string{"kernel-one", "kernel-two"} {
		if strings.Contains(string(index), kernel) != strings.Contains(string(results), kernel) {
			t.Errorf("index.html and results.txt come from different runs")
		}
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Errorf("beside the report: %v", entries)
	}
}
