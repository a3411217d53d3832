package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tasklist/bench"
)

// TestBenchQuickEndToEnd: `tasklist bench --quick`, with a tiny duration,
// prints a JSON object with a result for every workload, plan and worker
// count of the quick sweep, and writes the report.
func TestBenchQuickEndToEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	var stdout, stderr bytes.Buffer
	code := benchMain(context.Background(), []string{"--quick", "--duration", "3ms", "--format", "json", "--out", dir}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	var doc struct {
		Results []struct {
			Workload string    `json:"workload"`
			Plan     string    `json:"plan"`
			Workers  int       `json:"workers"`
			Values   []float64 `json:"values"`
			Error    string    `json:"error"`
		} `json:"results"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if want := len(quickWorkloads) * len(quickPlans) * 2; len(doc.Results) != want {
		t.Fatalf("%d results, want %d", len(doc.Results), want)
	}
	for _, r := range doc.Results {
		if !slices.Contains(quickWorkloads, r.Workload) || !slices.Contains(quickPlans, r.Plan) || r.Workers < 1 || r.Workers > 2 {
			t.Errorf("unexpected result %+v", r)
		}
		if r.Error == "" && len(r.Values) != quickReps {
			t.Errorf("%s on %s at %d: %d values, want %d", r.Workload, r.Plan, r.Workers, len(r.Values), quickReps)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "index.html")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "report in "+filepath.Join(dir, "index.html")) {
		t.Errorf("stderr does not say where the report is:\n%s", stderr.String())
	}
}

// TestBenchSeeds: --seeds runs each seed's toggle off and on under
// linux-2.6.35 and prints the claim beside the result.
func TestBenchSeeds(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := benchMain(context.Background(), []string{"--seeds", "--workloads", "get", "--workers", "1,2", "--reps", "2",
		"--duration", "3ms", "--out", ""}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"linux-2.6.35,prio-without-tasklist", "Seeds:", "002", "+9% at 2, +35% at 32 threads"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestBenchSeedGroups: --seeds measures every claim, each under the
// seed base with and without its toggle.
func TestBenchSeedGroups(t *testing.T) {
	fs := benchCommand.flagSet()
	fl := declareBenchFlags(fs)
	if err := fs.Parse([]string{"--seeds"}); err != nil {
		t.Fatal(err)
	}
	opts, err := fl.options(fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range bench.Claims {
		found := false
		for _, g := range opts.cfg.Groups {
			if g.Workload.Name == c.Workload && g.Plans[0] == bench.SeedBase && slices.Contains(g.Plans, c.Plan()) {
				found = true
			}
		}
		if !found {
			t.Errorf("seed %s: no group runs %s on %s", c.Seed, c.Plan(), c.Workload)
		}
	}
}

// TestBenchBadUsage: bad flags and arguments are refused with a message
// and exit status 2, before anything runs.
func TestBenchBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--format", "xml"}, {"--workers", "0"}, {"--workers", "two"}, {"--plans", "nosuch"},
		{"--workloads", "nosuch"}, {"--reps", "0"}, {"--duration", "-1s"}, {"--seeds", "--plans", "scalable"},
		{"--quick", "--seeds"}, {"extra"}, {"--nosuchflag"}, {"--population", "-1"}, {"--mix", "/nonexistent/file"},
		{"--plans", "prio-without-tasklist"}, {"--max-load", "-1"},
	} {
		var stdout, stderr bytes.Buffer
		if code := benchMain(context.Background(), args, &stdout, &stderr); code != 2 || stdout.Len() != 0 ||
			!strings.HasPrefix(stderr.String(), "tasklist: bench: ") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout.String(), stderr.String())
		}
	}
	var help bytes.Buffer
	if code := benchMain(context.Background(), []string{"--help"}, &help, &bytes.Buffer{}); code != 0 || !strings.Contains(help.String(), "usage: tasklist bench") {
		t.Errorf("--help: exit %d, %q", code, help.String())
	}
}

// TestBenchInterrupted: a run stopped by its context still prints what
// it measured and writes the report, and exits 130.
func TestBenchInterrupted(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := benchMain(ctx, []string{"--workloads", "get", "--plans", "scalable", "--workers", "1", "--reps", "1000",
		"--duration", "3ms", "--out", dir}, &stdout, &stderr)
	if code != 130 || !strings.Contains(stdout.String(), "interrupted") || !strings.Contains(stderr.String(), "interrupted") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "index.html")); err != nil {
		t.Fatal(err)
	}
}
