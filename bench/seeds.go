package bench

import (
	"fmt"

	"tasklist/workload"
)

// SeedBase is the plan every seed's A/B runs under: Linux before the
// seeds' changes.
const SeedBase = "linux-2.6.35"

// Claim is a seed thread's own measurement of its change.
type Claim struct {
	// Seed is the seed thread ("000" … "004") or the Linux release.
	Seed string
	// Toggle is the plan toggle that makes the seed's change.
	Toggle string
	// Workload is the workload that reproduces the seed's benchmark.
	Workload string
	// Claim is what the seed reported, in its words.
	Claim string
}

// Claims are the seeds' measurements (docs/seeds.md quotes each), each
// reproduced by its toggle on its workload. Every claim is an improvement;
// seed 002 also reports a loss at one thread, which is the cost the table
// shows at one worker.
var Claims = []Claim{
	{Seed: "000", Toggle: "exit-ptrace-fastpath", Workload: "fork-exit", Claim: ">10% on AIM7 fork on 8 sockets"},
	{Seed: "001", Toggle: "release-tracees-in-reaper", Workload: "pthread-create", Claim: "23 vs 42 µs/call"},
	{Seed: "002", Toggle: "prio-without-tasklist", Workload: "get", Claim: "+9% at 2, +35% at 32 threads, −3.76% at 1"},
	{Seed: "003", Toggle: "sem-lockless-perm", Workload: "semop-multi", Claim: "1.7× ops/s"},
	{Seed: "004", Toggle: "entropy-outside-lock", Workload: "threadspawn", Claim: "+4% on 24 cores"},
	{Seed: "6.15", Toggle: "free-pid-outside-lock", Workload: "threadspawn", Claim: "+23% stress-ng pthread"},
}

// Plan returns the plan with the claim's change: SeedBase and its toggle.
func (c Claim) Plan() string { return SeedBase + "," + c.Toggle }

// SeedGroups returns the groups that measure every claim: each claim's
// workload on SeedBase and on SeedBase with the toggle, claims of one
// workload sharing its base.
func SeedGroups() ([]Group, error) {
	var groups []Group
	index := map[string]int{}
	for _, c := range Claims {
		w, err := workload.Named(c.Workload)
		if err != nil {
			return nil, err
		}
		i, ok := index[c.Workload]
		if !ok {
			i = len(groups)
			index[c.Workload] = i
			groups = append(groups, Group{Workload: w, Plans: []string{SeedBase}})
		}
		groups[i].Plans = append(groups[i].Plans, c.Plan())
	}
	return groups, nil
}

// SeedResult is one claim beside what this sweep measured.
type SeedResult struct {
	Claim
	// At holds the comparison at each worker count measured, in the
	// sweep's order.
	At []SeedPoint
	// Matches says whether the direction agrees with the claim at the
	// largest worker count: "yes" (a significant improvement), "no" (a
	// significant loss) or "n.s." (no significant change).
	Matches string
}

// SeedPoint is a claim's A/B at one worker count.
type SeedPoint struct {
	Workers int
	Comparison
	Off, On Summary
}

// SeedResults compares, for each claim, its toggle's plan with the base
// at every worker count that both have values for.
func (r *Results) SeedResults() []SeedResult {
	var out []SeedResult
	for _, c := range Claims {
		sr := SeedResult{Claim: c, Matches: "n.s."}
		for _, n := range r.Workers {
			off, on := r.Point(c.Workload, SeedBase, n), r.Point(c.Workload, c.Plan(), n)
			if off == nil || on == nil || len(off.Values) == 0 || len(on.Values) == 0 {
				continue
			}
			sr.At = append(sr.At, SeedPoint{Workers: n, Comparison: Compare(off.Values, on.Values, on.HigherIsBetter),
				Off: off.Summary(), On: on.Summary()})
		}
		if len(sr.At) == 0 {
			continue
		}
		switch last := sr.At[len(sr.At)-1]; {
		case !last.Significant:
		case last.ChangePct > 0:
			sr.Matches = "yes"
		default:
			sr.Matches = "no"
		}
		out = append(out, sr)
	}
	return out
}

// String describes a seed point as "+12.3%* (p=0.008)".
func (p SeedPoint) String() string {
	mark := ""
	if p.Significant {
		mark = "*"
	}
	return fmt.Sprintf("%+.1f%%%s (p=%.3f)", p.ChangePct, mark, p.P)
}
