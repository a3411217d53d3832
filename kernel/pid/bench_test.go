package pid

import (
	"fmt"
	"testing"

	"tasklist/internal/parbench"
)

// The benchmarks measure each structure of a pid space on its own, at one
// and two goroutines: b.N operations split over the goroutines, which
// start together, so ns/op is wall time per operation of the whole
// machine (half at two goroutines if nothing is shared). Nothing is
// asserted about timings.
//
// Neighbouring numbers are what one cursor hands out: consecutive
// numbers, each going to either goroutine at random (taken from a fixed
// pseudo-random sequence, so that runs are alike). Spread numbers are
// goroutine g's own range, far from the other's: the cost of the
// structure with nothing shared.

// benchWindow is how many numbers a layout benchmark cycles through: a
// default pid_max's worth, so that a number is reused as often as in a
// space whose cursor wraps.
const benchWindow = DefaultMax - ReservedPIDs

// numbering gives each goroutine its sequence of numbers for a layout
// benchmark.
type numbering struct {
	// own[g] lists goroutine g's numbers, in the order it uses them.
	own [][]int
}

// neighbours deals the numbers of the window, in order, to n goroutines
// at random.
func neighbours(n int) numbering {
	nb := numbering{own: make([][]int, n)}
	x := uint64(0x9e3779b97f4a7c15)
	for k := range benchWindow {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		g := int(x % uint64(n))
		nb.own[g] = append(nb.own[g], ReservedPIDs+k)
	}
	return nb
}

// spread gives each of n goroutines a window of its own, a quarter of the
// 4M range apart.
func spread(n int) numbering {
	nb := numbering{own: make([][]int, n)}
	for g := range n {
		for k := range benchWindow / n {
			nb.own[g] = append(nb.own[g], ReservedPIDs+g*Limit/4+k)
		}
	}
	return nb
}

// at returns goroutine g's number for its operation i.
func (nb numbering) at(g, i int) int {
	own := nb.own[g]
	return own[(i/len(nb.own))%len(own)]
}

// layouts are the numberings the layout benchmarks run with.
var layouts = []struct {
	name string
	of   func(n int) numbering
}{{"neighbouring", neighbours}, {"spread", spread}}

// benchLayout runs op, given a goroutine's number, for every layout and
// goroutine count.
func benchLayout(b *testing.B, op func(nr int)) {
	for _, l := range layouts {
		for _, n := range parbench.Counts {
			b.Run(fmt.Sprintf("%s/goroutines=%d", l.name, n), func(b *testing.B) {
				nb := l.of(n)
				parbench.Split(b, n, func(g, i int) { op(nb.at(g, i)) })
			})
		}
	}
}

// BenchmarkTable publishes an object for a number and unpublishes it:
// what Alloc and Free write in an allocator's table.
func BenchmarkTable(b *testing.B) {
	var t table[int]
	v := 1
	benchLayout(b, func(nr int) {
		t.store(nr, &v)
		t.store(nr, nil)
	})
}

// BenchmarkUsed marks a number used and counted, then free: what Alloc
// and Free write in the space beside its cursor.
func BenchmarkUsed(b *testing.B) {
	s, err := NewSpace(Limit)
	if err != nil {
		b.Fatal(err)
	}
	benchLayout(b, func(nr int) {
		benchMarkUsed(s, nr)
		benchMarkFree(s, nr)
	})
}

// BenchmarkAllocFree is Alloc then Free on one allocator with a space of
// its own, the numbers coming from its one cursor: a fork and a release
// in one kernel.
func BenchmarkAllocFree(b *testing.B) {
	for _, n := range parbench.Counts {
		b.Run(fmt.Sprintf("goroutines=%d", n), func(b *testing.B) {
			a, err := NewAllocator[int](DefaultMax)
			if err != nil {
				b.Fatal(err)
			}
			benchAllocFree(b, n, func(int) *Allocator[int] { return a })
		})
	}
}

// BenchmarkSharedSpaceAllocFree is Alloc then Free with an allocator per
// goroutine on one space: private kernels that share only the pid
// numbering (the private+cursor control).
func BenchmarkSharedSpaceAllocFree(b *testing.B) {
	for _, n := range parbench.Counts {
		b.Run(fmt.Sprintf("goroutines=%d", n), func(b *testing.B) {
			s, err := NewSpace(DefaultMax)
			if err != nil {
				b.Fatal(err)
			}
			as := make([]*Allocator[int], n)
			for g := range as {
				as[g] = NewSharedAllocator[int](s)
			}
			benchAllocFree(b, n, func(g int) *Allocator[int] { return as[g] })
		})
	}
}

// benchAllocFree allocates and frees a number b.N times over n
// goroutines, goroutine g on allocator of(g).
func benchAllocFree(b *testing.B, n int, of func(g int) *Allocator[int]) {
	v := 1
	failed := make([]error, n)
	parbench.Split(b, n, func(g, _ int) {
		a := of(g)
		nr, _, err := a.Alloc(&v)
		if err != nil {
			failed[g] = err
			return
		}
		a.Free(nr)
	})
	for _, err := range failed {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// benchMarkUsed and benchMarkFree are what an allocation and a free of
// nr write in the space, the cursor aside.
func benchMarkUsed(s *Space, nr int) {
	slot := slotOf(*s.used.Load(), nr)
	slot.set()
	slot.line.count.Add(1)
}

func benchMarkFree(s *Space, nr int) {
	slot := slotOf(*s.used.Load(), nr)
	slot.line.count.Add(-1)
	slot.clear()
}
