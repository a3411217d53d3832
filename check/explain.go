package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// explain says where a history that is not linearizable gets stuck: for
// each partition the model cannot order in full, the longest order of its
// calls the model accepts, and what the model would return for each call
// that could come next. It also returns the races whose calls are in
// those partitions, the likeliest culprits.
func explain(init *state, ops []porcupine.Operation, info porcupine.LinearizationInfo) (string, []int) {
	var b strings.Builder
	var races []int
	parts := partition(init, ops)
	partials := info.PartialLinearizationsOperations()
	for i, part := range parts {
		if i >= len(partials) {
			break
		}
		var longest []porcupine.Operation
		for _, l := range partials[i] {
			if len(l) > len(longest) {
				longest = l
			}
		}
		if len(longest) == len(part) {
			continue
		}
		for _, op := range part {
			if race, _ := op.Metadata.(int); race != 0 && !slices.Contains(races, race) {
				races = append(races, race)
			}
		}
		name := "task calls"
		if part[0].Input.(call).kind.semaphore() {
			name = "semaphore calls"
		}
		fmt.Fprintf(&b, "\n%s: the model accepts at most %d of %d calls in an order their times allow", name, len(longest), len(part))
		s := init
		placed := map[opKey]bool{}
		for _, op := range longest {
			_, s = s.step(op.Input.(call), op.Output.(outcome))
			placed[keyOf(op)] = true
		}
		var rest []porcupine.Operation
		for _, op := range part {
			if !placed[keyOf(op)] {
				rest = append(rest, op)
			}
		}
		firstReturn := slices.MinFunc(rest, func(a, b porcupine.Operation) int { return int(a.Return - b.Return) }).Return
		b.WriteString("; then none of these can come next:")
		for _, op := range rest {
			if op.Call > firstReturn {
				continue
			}
			c, o := op.Input.(call), op.Output.(outcome)
			fmt.Fprintf(&b, "\n  %s", describe(c, o))
			if c.kind.semaphore() {
				continue
			}
			want, _ := s.tasks.apply(c, o)
			switch {
			case c.kind == kObserve && want.obs != nil:
				fmt.Fprintf(&b, "\n    differs from the model's: %s", o.obs.diff(want.obs))
			case c.kind != kObserve:
				fmt.Fprintf(&b, "\n    the model returns %s", want)
			}
		}
	}
	return b.String(), races
}

// opKey tells a history's operations apart: two that share their times
// (a clone and its copy of nice, a sleeper and its sighting) differ in
// kind.
type opKey struct {
	call, ret int64
	kind      kind
}

func keyOf(op porcupine.Operation) opKey {
	return opKey{op.Call, op.Return, op.Input.(call).kind}
}
