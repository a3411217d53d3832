package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"tasklist/plan"
)

var plansCommand = command{
	name:    "plans",
	summary: "list the lock plans: presets and the toggles that model each seed's change",
	details: `
A plan says where the table lock of a historical design is taken, on top of the per-object
locks tasklist always takes. A plan is a preset followed by toggles, comma-separated:
--plan linux-2.6.35,prio-without-tasklist. Unsafe toggles recreate the races the seed
threads found and are refused unless --unsafe is given too, and only a build with the
tasklist_unsafe tag has them (go run -tags tasklist_unsafe ./cmd/tasklist ...).`,
	setup: func(*flag.FlagSet) runFunc { return listPlans },
}

func listPlans(_ context.Context, _ []string, stdout, _ io.Writer) int {
	w := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "PRESET\tSEEDS ON\tDESIGN")
	seedOf := map[string]string{}
	for _, t := range plan.Toggles() {
		seedOf[t.Name] = t.Seed
	}
	for _, p := range plan.Presets() {
		var seeds []string
		for _, name := range p.Toggles() {
			seeds = append(seeds, seedOf[name])
		}
		on := strings.Join(seeds, " ")
		if on == "" {
			on = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", p.Name, on, p.Summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "TOGGLE\tSEED\tLINUX FUNCTION\tCHANGE")
	for _, t := range plan.Toggles() {
		summary := t.Summary
		if t.Unsafe {
			summary = "UNSAFE (needs --unsafe and a build with -tags tasklist_unsafe): " + summary + "; races: " + t.Races
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.Name, t.Seed, t.Function, summary)
	}
	w.Flush()
	return 0
}

// planError is plan.Parse's error for --plan spec of command cmd; for an
// unsafe toggle in a build that leaves them out, it says how to run one
// that has them.
func planError(cmd, spec string, err error) error {
	if errors.Is(err, plan.ErrUnsafeNotBuilt) {
		return fmt.Errorf("%w: go run -tags tasklist_unsafe ./cmd/tasklist %s --unsafe --plan %s ...", err, cmd, spec)
	}
	return err
}
