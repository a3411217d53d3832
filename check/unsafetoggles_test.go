//go:build tasklist_unsafe

package check

import (
	"context"
	"os"
	"strings"
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
