package main

import (
	"bytes"
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/check"
	"tasklist/plan"
)

// TestCheckUsage: bad flags, unknown plans and unsafe toggles without
// --unsafe are usage errors, exit status 2.
func TestCheckUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--bogus"},
		{"extra"},
		{"--plan", "no-such-preset"},
		{"--plan", "scalable,zhang-v1"},
		{"--workers", "-1"},
		{"--workers", "1025"},
		{"--workers", "10000"},
		{"--duration", "0s"},
		{"--unsafe"},
		{"--plan", "linux-2.6.35", "--unsafe"},
	} {
		var out, errs bytes.Buffer
		if code := run(context.Background(), append([]string{"check"}, args...), &out, &errs); code != 2 {
			t.Errorf("check %v: exit %d, want 2 (stderr %q)", args, code, errs.String())
		}
	}
}

// TestCheckNothingFound: a short check of the default plan exits 0 and
// says how to replay it.
func TestCheckNothingFound(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"check", "--duration", "1s", "--seed", "5"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errs.String())
	}
	if s := out.String(); !strings.Contains(s, "nothing found") || !strings.Contains(s, "--seed 5") {
		t.Errorf("output:\n%s", s)
	}
}

// TestCheckReport: what a check prints and its exit status, for each way
// a run can end.
func TestCheckReport(t *testing.T) {
	sigterm, cancel := context.WithCancelCause(context.Background())
	cancel(interruption{syscall.SIGTERM})
	p := plan.MustParse("scalable", false)
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		rep    check.Report
		status int
		want   []string
	}{
		{"a pass", context.Background(), check.Report{Rounds: 3, Ops: 40}, 0, []string{"3 rounds, 40 operations", ": nothing found\n"}},
		{"undecided", context.Background(), check.Report{Rounds: 3, Ops: 40, Undecided: 2}, 3,
			[]string{"nothing found, but not a pass", "2 of the 3 rounds undecided"}},
		{"no round", context.Background(), check.Report{}, 3, []string{"no round was checked, which is not a pass"}},
		{"interrupted", sigterm, check.Report{Rounds: 2, Interrupted: true}, 143,
			[]string{"2 rounds", "then interrupted by SIGTERM: nothing found in those rounds"}},
		{"interrupted, undecided", sigterm, check.Report{Rounds: 2, Undecided: 1, Interrupted: true}, 143,
			[]string{"interrupted by SIGTERM", "1 of the 2 rounds undecided"}},
	} {
		tc.rep.Plan, tc.rep.Workers, tc.rep.Seed = "scalable", 4, 77
		var out, errs bytes.Buffer
		status := reportCheck(tc.ctx, &tc.rep, p, "", &out, &errs)
		if status != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, status, tc.status)
		}
		for _, want := range append(tc.want, "the same rounds again: tasklist check --plan scalable --workers 4 --seed 77\n") {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, want, out.String())
			}
		}
		if tc.status != 0 && strings.HasSuffix(strings.SplitN(out.String(), "\n", 2)[0], ": nothing found") {
			t.Errorf("%s: a run that is no pass reads as one:\n%s", tc.name, out.String())
		}
	}
}

// TestCheckInterrupted: a check stopped by a signal says what it covered
// and how to replay it, and exits 128 plus the signal's number.
func TestCheckInterrupted(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		ctx, cancel := context.WithCancelCause(context.Background())
		go func() {
			time.Sleep(300 * time.Millisecond)
			cancel(interruption{sig})
		}()
		var out, errs bytes.Buffer
		status := run(ctx, []string{"check", "--duration", "1h", "--seed", "5"}, &out, &errs)
		if status != 128+int(sig) || !strings.Contains(out.String(), "interrupted by "+unix.SignalName(sig)) ||
			!strings.Contains(out.String(), "--seed 5") {
			t.Errorf("%v: status %d\nstdout:\n%s\nstderr:\n%s", sig, status, out.String(), errs.String())
		}
	}
}
