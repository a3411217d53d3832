package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const semTrace = "../../testdata/traces/sem.strace"

func TestReplayJSON(t *testing.T) {
	out, errs, status := tasklist(t, "replay", "--format", "json", "--plan", "linux-2.6.35", semTrace)
	if status != 0 || errs != "" {
		t.Fatalf("status %d, stderr %q", status, errs)
	}
	var doc map[string][]map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	traces := doc["traces"]
	if len(doc) != 1 || len(traces) != 1 {
		t.Fatalf("output:\n%s", out)
	}
	var keys []string
	for k := range traces[0] {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"agree", "calls", "compared", "disagree", "divergences", "ends_agree", "ends_checked",
		"file", "not_compared", "outside", "unsupported"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
}

// A trace whose results the model does not give exits 1 and names the line; a line that
// is not strace's exits 2 with FILE:LINE.
func TestReplayStatus(t *testing.T) {
	data, err := os.ReadFile(semTrace)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	changed := filepath.Join(dir, "changed.strace")
	text := strings.Replace(string(data), "0xc /* GETVAL */, NULL) = 1", "0xc /* GETVAL */, NULL) = 2", 1)
	if err := os.WriteFile(changed, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, status := tasklist(t, "replay", "--explain", "2", changed)
	if status != 1 || !strings.Contains(out, "changed.strace:34: semctl(") || !strings.Contains(out, "trace 2, model 1") ||
		!strings.Contains(out, "model: ") {
		t.Errorf("status %d, output:\n%s", status, out)
	}
	bad := filepath.Join(dir, "bad.strace")
	if err := os.WriteFile(bad, []byte("1 getpid() = 1\nnonsense\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, status := tasklist(t, "replay", bad, semTrace)
	if status != 2 || errs != bad+":2: not a line of strace's output\n" {
		t.Errorf("status %d, stderr %q", status, errs)
	}
	if _, errs, status := tasklist(t, "replay", "--format", "xml", semTrace); status != 2 || errs == "" {
		t.Errorf("--format xml: status %d, stderr %q", status, errs)
	}
}

func TestTraceWithoutStrace(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, errs, status := tasklist(t, "trace", "-o", filepath.Join(t.TempDir(), "t.strace"), "true")
	if status != 2 || !strings.Contains(errs, "strace package") {
		t.Errorf("status %d, stderr %q", status, errs)
	}
}

// trace records a command, flags ending at the command, its status passed on; the trace
// replays with nothing disagreeing.
func TestTraceRecords(t *testing.T) {
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("no strace")
	}
	file := filepath.Join(t.TempDir(), "t.strace")
	_, errs, status := tasklist(t, "trace", "-o", file, "sh", "-c", "sleep 0.01 & wait; exit 3")
	if status != 3 {
		if strings.Contains(errs, "Operation not permitted") {
			t.Skip("ptrace is not permitted here")
		}
		t.Fatalf("status %d, stderr %q", status, errs)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "# tasklist trace: \"sh -c sleep 0.01 & wait; exit 3\"\n# kernel: ") ||
		!strings.Contains(string(data), "+++ exited with 3 +++") {
		t.Fatalf("trace:\n%s", data)
	}
	out, errs, status := tasklist(t, "replay", file)
	if status != 0 || errs != "" {
		t.Errorf("replay: status %d, stderr %q\n%s", status, errs, out)
	}
}
