package pid

import (
	"math/bits"
	"sync/atomic"
)

// The used bits of a space are laid out so that numbers handed out one
// after another sit on different cache lines. One cursor hands its numbers
// to whichever allocation wins it, so two workers forking side by side get
// neighbouring numbers; were those on one line, each allocation and each
// free would take the line from the other worker. Here a line holds
// numbers groupLines apart, which the cursor hands out groupLines
// allocations apart: the line moves at most once per allocation of one of
// its numbers, never back and forth while two workers each take one.
//
// Each line also counts its allocated numbers, so that an allocation and a
// free write only the line of their own number: there is no shared count.
// Counting is then a sum over the lines, which only rare paths need.
const (
	// lineWords is how many words of bits a line holds; its eighth word
	// is the line's count.
	lineWords = 7
	// lineNumbers is how many numbers a line holds.
	lineNumbers = lineWords * 64
	// groupLines is how many lines a group interleaves: number j of a
	// group is on line j%groupLines.
	groupLines = 64
	// groupNumbers is how many numbers a group holds.
	groupNumbers = groupLines * lineNumbers
)

// usedLine is one cache line of used bits and its count.
type usedLine struct {
	// bits has bit k%64 of word k/64 set when the line's k-th number,
	// number k*groupLines+l of the group for line l, is allocated.
	bits [lineWords]atomic.Uint64
	// count is how many of the line's numbers are allocated and counted
	// (an allocation that fails after setting its bit is not).
	count atomic.Int64
}

// usedGroup is groupNumbers consecutive numbers, interleaved over its
// lines. At 4 KiB it is page-aligned by the allocator, so its lines are
// whole cache lines.
type usedGroup [groupLines]usedLine

// usedSlot locates one number's bit.
type usedSlot struct {
	line *usedLine
	word *atomic.Uint64
	bit  uint64
}

// groupsFor returns how many groups cover the numbers below max.
func groupsFor(max int) int { return (max + groupNumbers - 1) / groupNumbers }

// slotOf returns where nr's bit is; nr must be covered by groups.
func slotOf(groups []*usedGroup, nr int) usedSlot {
	j := nr % groupNumbers
	line := &groups[nr/groupNumbers][j%groupLines]
	k := j / groupLines
	return usedSlot{line: line, word: &line.bits[k/64], bit: 1 << (k % 64)}
}

// isUsed reports whether the slot's bit is set.
func (u usedSlot) isUsed() bool { return u.word.Load()&u.bit != 0 }

// set sets the slot's bit and reports whether it was clear.
func (u usedSlot) set() bool {
	for {
		old := u.word.Load()
		if old&u.bit != 0 {
			return false
		}
		if u.word.CompareAndSwap(old, old|u.bit) {
			return true
		}
	}
}

// clear clears the slot's bit.
func (u usedSlot) clear() { u.word.And(^u.bit) }

// countIn sums the lines' counts, each read at its own moment.
func countIn(groups []*usedGroup) int {
	n := int64(0)
	for _, g := range groups {
		for l := range g {
			n += g[l].count.Load()
		}
	}
	return int(n)
}

// findFree returns the first number in [from, to) whose bit is clear, or
// -1; to must not exceed what groups cover. It tries the numbers one by
// one first, each on its own line, as a cursor over a sparse range finds
// a free one at once; past groupLines numbers in a group it looks for the
// first clear bit of each line instead, a word at a time.
func findFree(groups []*usedGroup, from, to int) int {
	for from < to {
		base := from / groupNumbers * groupNumbers
		end := min(base+groupNumbers, to)
		for stop := min(end, from+groupLines); from < stop; from++ {
			if !slotOf(groups, from).isUsed() {
				return from
			}
		}
		if from < end {
			if j := groups[base/groupNumbers].firstFree(from-base, end-base); j >= 0 {
				return base + j
			}
		}
		from = end
	}
	return -1
}

// firstFree returns the smallest j in [lo, hi) whose bit is clear in g,
// or -1.
func (g *usedGroup) firstFree(lo, hi int) int {
	best := hi
	for l := range g {
		// Line l holds j = l + groupLines*k; its candidates are the k
		// from the first j ≥ lo up to the last j < best.
		if l >= best {
			break
		}
		k := 0
		if lo > l {
			k = (lo - l + groupLines - 1) / groupLines
		}
		last := (best - 1 - l) / groupLines
		for k <= last {
			free := ^g[l].bits[k/64].Load() >> (k % 64)
			if free == 0 {
				k = (k/64 + 1) * 64
				continue
			}
			if k += bits.TrailingZeros64(free); k <= last {
				best = l + groupLines*k
			}
			break
		}
	}
	if best == hi {
		return -1
	}
	return best
}
