package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"tasklist/plan"
)

var plansCommand = command{
	name:    "plans",
	summary: "list the lock plans: presets and the toggles that model each seed's change",
	run:     listPlans,
}

func listPlans(args []string, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		fmt.Fprint(stderr, "usage: tasklist plans\n")
		return 2
	}
	w := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "PRESET\tSEEDS ON\tDESIGN")
	for _, p := range plan.Presets() {
		var seeds []string
		for _, name := range p.Toggles() {
			for _, t := range plan.Toggles() {
				if t.Name == name {
					seeds = append(seeds, t.Seed)
				}
			}
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
			summary = "UNSAFE (needs --unsafe): " + summary + "; races: " + t.Races
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.Name, t.Seed, t.Function, summary)
	}
	w.Flush()
	fmt.Fprint(stdout, "\nA plan is a preset followed by toggles: --plan linux-2.6.35,prio-without-tasklist\n")
	return 0
}
