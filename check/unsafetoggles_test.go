//go:build tasklist_unsafe

package check

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"tasklist/plan"
)

// TestUnsafeToggleCaught requires the seed-002 race of pgrp-walk-unlocked
// to be found within a bounded number of rounds, and its report to name
// the racing calls.
func TestUnsafeToggleCaught(t *testing.T) {
	if raceEnabled {
		t.Skip("the unsafe plan reads a group's members without a lock on purpose")
	}
	rep, err := Run(context.Background(), Options{Plan: plan.MustParse("scalable,pgrp-walk-unlocked", true),
		Duration: time.Hour, Rounds: 200, Shrink: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	v := rep.Violation
	if v == nil {
		t.Fatalf("not found in %d rounds", rep.Rounds)
	}
	t.Logf("found in round %d after %s", v.Round, rep.FoundAfter)
	if !strings.Contains(v.Kind, "linearizability") {
		t.Errorf("kind %q, want a linearizability violation", v.Kind)
	}
	h := v.History()
	if !strings.Contains(h, "setpgid(0, ") || !strings.Contains(h, "priority(PRIO_PGRP") {
		t.Errorf("the history does not show the racing move and walk:\n%s", h)
	}
	html := t.TempDir() + "/v.html"
	if err := v.WriteHTML(html); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "PRIO_PGRP") {
		t.Errorf("the visualisation does not show the calls (%v)", err)
	}
}

// TestShrinkStopsOnInterrupt: an interrupt while a violation is shrunk
// ends the search at once; the violation is reported as shrunk so far,
// and the run as interrupted.
func TestShrinkStopsOnInterrupt(t *testing.T) {
	if raceEnabled {
		t.Skip("the unsafe plan reads a group's members without a lock on purpose")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := &cancelOn{word: "shrinking", cancel: cancel}
	var rep Report
	var err error
	returnsWithin(t, 2*time.Minute, func() {
		rep, err = Run(ctx, Options{Plan: plan.MustParse("scalable,pgrp-walk-unlocked", true), Duration: time.Hour,
			Rounds: 200, Shrink: time.Hour, Progress: progress})
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Violation == nil {
		t.Skipf("the race did not show in %d rounds", rep.Rounds)
	}
	if !rep.Interrupted {
		t.Fatal("a run interrupted while shrinking is not marked interrupted")
	}
}

// cancelOn is a progress writer that cancels a context when a line holds
// a word.
type cancelOn struct {
	mu     sync.Mutex
	word   string
	cancel context.CancelFunc
	seen   strings.Builder
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen.Write(p)
	if strings.Contains(c.seen.String(), c.word) {
		c.cancel()
	}
	return len(p), nil
}
