package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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
	if want := len(quickSweep.Workloads) * len(quickSweep.Plans) * 2; len(doc.Results) != want {
		t.Fatalf("%d results, want %d", len(doc.Results), want)
	}
	for _, r := range doc.Results {
		if !slices.Contains(quickSweep.Workloads, r.Workload) || !slices.Contains(quickSweep.Plans, r.Plan) || r.Workers < 1 || r.Workers > 2 {
			t.Errorf("unexpected result %+v", r)
		}
		if r.Error == "" && len(r.Values) != quickSweep.Reps {
			t.Errorf("%s on %s at %d: %d values, want %d", r.Workload, r.Plan, r.Workers, len(r.Values), quickSweep.Reps)
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
	fl := &benchFlags{}
	fl.bind(fs)
	if err := fs.Parse([]string{"--seeds"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := fl.config(fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range bench.Claims {
		found := false
		for _, g := range cfg.Groups {
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
		{"--plans", "prio-without-tasklist"}, {"--max-load", "-1"}, {"--max-load", "NaN"}, {"--max-load", "+Inf"},
		{"--population", "40000"}, {"--workers", "1025"}, {"--out", "/dev/full"}, {"--out", "/proc/tasklist-report"},
		{"--plans", "scalable,zhang-v1"},
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

// benchMain runs `tasklist bench args` with ctx.
func benchMain(ctx context.Context, args []string, stdout, stderr *bytes.Buffer) int {
	return run(ctx, append([]string{"bench"}, args...), stdout, stderr)
}

// TestBenchRefusalsSayWhy: the messages name the bound, and a refused
// toggle is not followed by the controls, which take none.
func TestBenchRefusalsSayWhy(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		want, not string
	}{
		{[]string{"--population", "40000"}, "at most 16000", ""},
		{[]string{"--max-load", "NaN"}, "NaN", ""},
		{[]string{"--plans", "scalable,zhang-v1"}, "a sweep runs safe plans only", "controls:"},
		{[]string{"--plans", "scalable,privat"}, "controls: private", ""},
		{[]string{"--out", "/dev/full"}, "not a directory", ""},
	} {
		var stdout, stderr bytes.Buffer
		benchMain(context.Background(), tc.args, &stdout, &stderr)
		if msg := stderr.String(); !strings.Contains(msg, tc.want) || tc.not != "" && strings.Contains(msg, tc.not) {
			t.Errorf("%q: %q; want %q, not %q", tc.args, msg, tc.want, tc.not)
		}
	}
}

// TestBenchOutCheckedFirst: a report directory that holds other files is
// refused before anything is measured, and left as it was.
func TestBenchOutCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := benchMain(context.Background(), []string{"--workloads", "get", "--plans", "scalable", "--workers", "1",
		"--reps", "1", "--duration", "3ms", "--out", dir}, &stdout, &stderr)
	if code != 2 || stdout.Len() != 0 || strings.Contains(stderr.String(), "runs done") || !strings.Contains(stderr.String(), "notes.txt") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	if data, err := os.ReadFile(notes); err != nil || string(data) != "mine" {
		t.Fatalf("the directory changed: %q, %v", data, err)
	}
}

// TestBenchInterruptedBeforeMeasuring: an interrupt before anything was
// measured leaves an earlier report as it was.
func TestBenchInterruptedBeforeMeasuring(t *testing.T) {
	dir := t.TempDir()
	index := filepath.Join(dir, "index.html")
	if err := os.WriteFile(index, []byte("an earlier report"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(interruption{syscall.SIGTERM})
	var stdout, stderr bytes.Buffer
	code := benchMain(ctx, []string{"--workloads", "get", "--plans", "scalable", "--workers", "1", "--reps", "1",
		"--duration", "3ms", "--out", dir}, &stdout, &stderr)
	if code != 143 || !strings.Contains(stderr.String(), "interrupted by SIGTERM") || !strings.Contains(stderr.String(), "left as it was") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if data, err := os.ReadFile(index); err != nil || string(data) != "an earlier report" {
		t.Fatalf("the earlier report changed: %q, %v", data, err)
	}
}

// TestBenchHangup: SIGHUP stops a sweep as SIGTERM does: the table of
// what was measured is printed, the report written, and the exit status
// is 129.
func TestBenchHangup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var stdout, stderr bytes.Buffer
	args := []string{"--workloads", "get", "--plans", "scalable", "--workers", "1", "--reps", "1000", "--duration", "3ms", "--out", dir}
	go func() {
		time.Sleep(500 * time.Millisecond) // some repetitions in
		cancel(interruption{syscall.SIGHUP})
	}()
	code := benchMain(ctx, args, &stdout, &stderr)
	if code != 129 || !strings.Contains(stdout.String(), "Hmean") || !strings.Contains(stderr.String(), "interrupted by SIGHUP") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "index.html")); err != nil {
		t.Fatal(err)
	}
}
