package check

import (
	"context"
	"slices"
	"time"

	"tasklist/plan"
)

// Shrinking: concurrency cannot be replayed, so a smaller schedule is
// kept if any of shrinkTries runs of it fails. A time budget bounds the
// search; what is reported is the failing round with the fewest
// operations seen.
const shrinkTries = 20

// shrink looks for a smaller schedule than the one drawn from seed that
// still fails, dropping workers, sleepers, and steps, and returns the
// smallest failing round it ran. It stops early when ctx is done.
func shrink(ctx context.Context, p *plan.Plan, seed uint64, workers, steps int, v *Violation, locks *lockWatch, budget time.Duration) *Violation {
	s := newSchedule(seed, workers, steps)
	best := v
	deadline := time.Now().Add(budget)
	for progress := true; progress && time.Now().Before(deadline) && ctx.Err() == nil; {
		progress = false
		for _, c := range smaller(s, best.races) {
			found := failing(ctx, p, c, locks, deadline)
			if found == nil {
				continue
			}
			s, progress = c, true
			if len(found.burst) <= len(best.burst) {
				found.Round, found.RoundSeed = v.Round, v.RoundSeed
				found.Goroutines, found.Calls = goroutines(found.burst), len(found.burst)
				best = found
			}
			break
		}
	}
	return best
}

// failing runs s up to shrinkTries times and returns the first violation.
func failing(ctx context.Context, p *plan.Plan, s schedule, locks *lockWatch, deadline time.Time) *Violation {
	for range shrinkTries {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil
		}
		if res := round(ctx, p, s, locks, checkTimeout); res.violation != nil {
			return res.violation
		}
	}
	return nil
}

// smaller lists schedules smaller than s, the likeliest to keep a failure
// first: the phases of the suspect races alone; without the workers; the
// first half of the phases of races alone, then the second (a bisection,
// since a failure usually needs one race); each phase alone; without the
// races; without one worker, racer or sleeper; without the second half of
// a worker's steps; without one step.
func smaller(s schedule, suspects []int) []schedule {
	var out []schedule
	with := func(f func(*schedule)) {
		c := s
		c.workers, c.racers, c.sleepers = slices.Clone(s.workers), slices.Clone(s.racers), slices.Clone(s.sleepers)
		f(&c)
		if c.size() < s.size() {
			out = append(out, c)
		}
	}
	// Only the races of the phases keep says to, with no workers.
	only := func(keep func(phase int) bool) {
		with(func(c *schedule) {
			clear(c.workers)
			for i := range c.racers {
				if !keep(s.phase[i]) {
					c.racers[i] = nil
				}
			}
			for i := range c.sleepers {
				if !keep(s.phase[len(s.racers)+i]) {
					c.sleepers[i] = nil
				}
			}
		})
	}
	phases := func(from, to int) { only(func(p int) bool { return p >= from && p < to }) }
	if suspect := s.phasesOf(suspects); len(suspect) > 0 {
		only(func(p int) bool { return slices.Contains(suspect, p) })
	}
	with(func(c *schedule) { clear(c.workers) })
	// The phases that still have racers.
	var live []int
	for i, steps := range s.racers {
		if len(steps) > 0 && !slices.Contains(live, s.phase[i]) {
			live = append(live, s.phase[i])
		}
	}
	slices.Sort(live)
	if len(live) > 1 {
		half := live[len(live)/2]
		phases(0, half)
		phases(half, live[len(live)-1]+1)
	}
	for _, p := range live {
		phases(p, p+1)
	}
	with(func(c *schedule) { clear(c.racers); clear(c.sleepers) })
	for _, lists := range []func(*schedule) [][]step{
		func(c *schedule) [][]step { return c.workers },
		func(c *schedule) [][]step { return c.racers },
		func(c *schedule) [][]step { return c.sleepers },
	} {
		for i := range lists(&s) {
			with(func(c *schedule) { lists(c)[i] = nil })
		}
	}
	for w, steps := range s.workers {
		if len(steps) > 1 {
			with(func(c *schedule) { c.workers[w] = steps[:len(steps)/2] })
		}
		for i := range steps {
			with(func(c *schedule) { c.workers[w] = slices.Delete(slices.Clone(steps), i, i+1) })
		}
	}
	return out
}

// phasesOf returns the phases of the races numbered races.
func (s schedule) phasesOf(races []int) []int {
	var out []int
	for i, steps := range append(slices.Clone(s.racers), s.sleepers...) {
		for _, st := range steps {
			if st.rendezvous != 0 && slices.Contains(races, st.rendezvous) && !slices.Contains(out, s.phase[i]) {
				out = append(out, s.phase[i])
			}
		}
	}
	return out
}

// size counts the steps of the burst.
func (s schedule) size() int {
	n := 0
	for _, lists := range [][][]step{s.workers, s.racers, s.sleepers} {
		for _, steps := range lists {
			n += len(steps)
		}
	}
	return n
}

// goroutines counts the goroutines that made the calls of a burst.
func goroutines(burst []record) int {
	seen := map[int]bool{}
	for _, r := range burst {
		seen[r.client] = true
	}
	return len(seen)
}
