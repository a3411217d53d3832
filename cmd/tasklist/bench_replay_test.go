package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchReplay: --workloads replay:FILE replays the trace on the model plans; the host,
// which cannot, is left out with a note, and the figure is in calls per second.
func TestBenchReplay(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := benchMain(context.Background(), []string{"--workloads", "replay:../../testdata/traces/timeout.strace",
		"--plans", "scalable,linux-2.6.35,private,host", "--workers", "1,2", "--reps", "1", "--duration", "6ms",
		"--format", "json", "--out", ""}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "tasklist: bench: replay:timeout runs on the model only") {
		t.Errorf("no note that the host is left out:\n%s", stderr.String())
	}
	var doc struct {
		Results []struct {
			Workload, Plan, Unit string
			Values               []float64
		} `json:"results"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if len(doc.Results) != 3*2 {
		t.Fatalf("%d results, want 3 plans at 2 worker counts: %+v", len(doc.Results), doc.Results)
	}
	for _, r := range doc.Results {
		if r.Workload != "replay:timeout" || r.Plan == "host" || r.Unit != "calls/s" || len(r.Values) != 1 || !(r.Values[0] > 0) {
			t.Errorf("%+v", r)
		}
	}
}

// TestBenchReplayRefusals: a trace that cannot be read, one that does not parse (FILE:LINE:
// message) and a replay with no plan but the host are refused with exit status 2 before
// anything is measured.
func TestBenchReplayRefusals(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.strace")
	if err := os.WriteFile(bad, []byte("10 getpid() = 10\n10 getpid(\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workloads", "replay:/nonexistent/x.strace"}, "tasklist: bench: open /nonexistent/x.strace: no such file or directory\n"},
		{[]string{"--workloads", "replay:" + bad}, bad + ":2: "},
		{[]string{"--workloads", "replay:../../testdata/traces/nice.strace", "--plans", "host"}, "tasklist: bench: replay:nice does not run on host"},
		{[]string{"--workloads", "replay:../../testdata/traces/nice.strace,replay:../../testdata/traces/nice.strace"}, "tasklist: bench: --workloads: replay:nice named twice"},
	} {
		var stdout, stderr bytes.Buffer
		if code := benchMain(context.Background(), append(tc.args, "--out", ""), &stdout, &stderr); code != 2 || stdout.Len() != 0 ||
			!strings.HasPrefix(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %q", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
}
