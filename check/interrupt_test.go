package check

import (
	"context"
	"strings"
	"testing"
	"time"
)

// returnsWithin runs f and fails the test if it has not returned after
// bound: a bound only a run that ignores its context reaches.
func returnsWithin(t *testing.T, bound time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		f()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(bound):
		t.Fatalf("still running after %v", bound)
	}
}

// TestRunStopsInsideARound: a context cancelled while a large round is
// under way ends the run with nothing counted, the round dropped, and
// the report marked interrupted; the duration would have allowed an hour.
func TestRunStopsInsideARound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var rep Report
	var err error
	returnsWithin(t, time.Minute, func() {
		rep, err = Run(ctx, Options{Duration: time.Hour, Workers: MaxWorkers, Seed: 3, Shrink: -1})
	})
	if err != nil {
		t.Fatal(err)
	}
	// The round takes seconds at this many workers: it was cut short,
	// not counted.
	if !rep.Interrupted || rep.Passed() || rep.Rounds != 0 || rep.Violation != nil {
		t.Fatalf("report %+v: want interrupted in its first round, nothing counted", rep)
	}
}

// TestRunCancelledBeforeAnyRound: a context already done gives an
// interrupted report of no rounds, not an error and not a pass.
func TestRunCancelledBeforeAnyRound(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := Run(ctx, Options{Seed: 1})
	if err != nil || !rep.Interrupted || rep.Rounds != 0 || rep.Passed() {
		t.Fatalf("Run = %+v, %v; want an interrupted report of no rounds", rep, err)
	}
}

// TestRunMakesOneRound: a duration shorter than any round still runs one,
// which passes.
func TestRunMakesOneRound(t *testing.T) {
	rep, err := Run(context.Background(), Options{Duration: time.Nanosecond, Seed: 5, Shrink: -1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rounds != 1 || rep.Interrupted {
		t.Fatalf("%d rounds, interrupted %v; want 1 round", rep.Rounds, rep.Interrupted)
	}
	if rep.Violation == nil && rep.Undecided == 0 && !rep.Passed() {
		t.Fatalf("a decided round with nothing found is not a pass: %+v", rep)
	}
}

// TestRunBoundsWorkers: more than MaxWorkers is refused before anything
// runs.
func TestRunBoundsWorkers(t *testing.T) {
	for _, n := range []int{-1, MaxWorkers + 1, 10000} {
		if _, err := Run(context.Background(), Options{Workers: n, Rounds: 1}); err == nil ||
			!strings.Contains(err.Error(), "workers") {
			t.Errorf("%d workers: err %v, want a refusal", n, err)
		}
	}
}

// TestPassed: only a run that checked rounds, found nothing, decided
// them all and ran to its end passes.
func TestPassed(t *testing.T) {
	for _, tc := range []struct {
		rep  Report
		want bool
	}{
		{Report{Rounds: 3}, true},
		{Report{}, false},
		{Report{Rounds: 3, Undecided: 1}, false},
		{Report{Rounds: 3, Interrupted: true}, false},
		{Report{Rounds: 3, Violation: &Violation{}}, false},
	} {
		if got := tc.rep.Passed(); got != tc.want {
			t.Errorf("%+v: Passed() = %v, want %v", tc.rep, got, tc.want)
		}
	}
}

// TestTracemeDescribed: the history names PTRACE_TRACEME as ptrace's
// request, with the call's other arguments.
func TestTracemeDescribed(t *testing.T) {
	if got, want := describe(call{kind: kTraceme, caller: 12}, outcome{}), "12: ptrace(PTRACE_TRACEME, 0, 0, 0) = 0"; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
}
