package pid

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"
)

// TestTableSlotIndex: slotIndex is a permutation of a chunk's slots that
// puts every run of chunkLines consecutive numbers on as many different
// cache lines.
func TestTableSlotIndex(t *testing.T) {
	perLine := 64 / int(unsafe.Sizeof(uintptr(0)))
	seen := make([]bool, chunkSize)
	for j := range chunkSize {
		i := slotIndex(j)
		if i < 0 || i >= chunkSize || seen[i] {
			t.Fatalf("slotIndex(%d) = %d: outside the chunk or taken twice", j, i)
		}
		seen[i] = true
	}
	for j := range chunkSize - chunkLines + 1 {
		lines := map[int]bool{}
		for k := j; k < j+chunkLines; k++ {
			lines[slotIndex(k)/perLine] = true
		}
		if len(lines) != chunkLines {
			t.Fatalf("numbers %d..%d of a chunk share lines: %d lines", j, j+chunkLines-1, len(lines))
		}
	}
	var tab table[int]
	vals := []int{1, chunkSize - 1, chunkSize, chunkSize + 1, 3*chunkSize + 77}
	for i := range vals {
		tab.store(vals[i], &vals[i])
	}
	var got []int
	tab.rangeAll(func(nr int, v *int) bool {
		if *v != nr {
			t.Fatalf("slot of %d holds %d", nr, *v)
		}
		got = append(got, nr)
		return true
	})
	if len(got) != len(vals) {
		t.Fatalf("rangeAll visited %v, want %v", got, vals)
	}
	for i := range got {
		if got[i] != vals[i] {
			t.Fatalf("rangeAll visited %v, want %v in that order", got, vals)
		}
	}
}

// TestUsedSlots: every number of a space has a bit of its own; a group's
// consecutive numbers are on different lines, and its lines are whole
// cache lines, with the count in the same line as the bits it counts.
func TestUsedSlots(t *testing.T) {
	if unsafe.Sizeof(usedLine{}) != 64 || unsafe.Sizeof(usedGroup{}) != 4096 {
		t.Fatalf("a line is %d bytes and a group %d, want 64 and 4096", unsafe.Sizeof(usedLine{}), unsafe.Sizeof(usedGroup{}))
	}
	s, err := NewSpace(3 * groupNumbers)
	if err != nil {
		t.Fatal(err)
	}
	groups := *s.used.Load()
	if len(groups) != 3 {
		t.Fatalf("%d groups for pid_max %d, want 3", len(groups), 3*groupNumbers)
	}
	type bitAt struct {
		word *uint64
		bit  uint64
	}
	seen := map[bitAt]int{}
	for nr := range 3 * groupNumbers {
		u := slotOf(groups, nr)
		if uintptr(unsafe.Pointer(u.line))%64 != 0 {
			t.Fatalf("number %d's line is not aligned to a cache line", nr)
		}
		if w := uintptr(unsafe.Pointer(u.word)) - uintptr(unsafe.Pointer(u.line)); w >= 64 || u.bit == 0 || u.bit&(u.bit-1) != 0 {
			t.Fatalf("number %d: word at offset %d of its line, bit %#x", nr, w, u.bit)
		}
		key := bitAt{(*uint64)(unsafe.Pointer(u.word)), u.bit}
		if other, ok := seen[key]; ok {
			t.Fatalf("numbers %d and %d share a bit", other, nr)
		}
		seen[key] = nr
	}
	for nr := 0; nr+groupLines <= groupNumbers; nr += 97 {
		lines := map[*usedLine]bool{}
		for k := nr; k < nr+groupLines; k++ {
			lines[slotOf(groups, k).line] = true
		}
		if len(lines) != groupLines {
			t.Fatalf("numbers %d..%d share lines", nr, nr+groupLines-1)
		}
	}
}

// TestFindFree: the scan finds the first clear bit of a range, checked
// against a number-by-number search, over sparse and dense patterns and
// ranges that start and end anywhere in a group.
func TestFindFree(t *testing.T) {
	s, err := NewSpace(3 * groupNumbers)
	if err != nil {
		t.Fatal(err)
	}
	groups := *s.used.Load()
	size := 3 * groupNumbers
	used := make([]bool, size)
	reference := func(from, to int) int {
		for nr := from; nr < to; nr++ {
			if !used[nr] {
				return nr
			}
		}
		return -1
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, density := range []float64{0, 0.5, 0.99, 0.9999, 1} {
		for nr := range size {
			u := slotOf(groups, nr)
			if used[nr] = rng.Float64() < density; used[nr] {
				u.set()
			} else {
				u.clear()
			}
		}
		for range 300 {
			from := rng.IntN(size)
			to := from + rng.IntN(size-from+1)
			if got, want := findFree(groups, from, to), reference(from, to); got != want {
				t.Fatalf("density %v: findFree(%d, %d) = %d, want %d", density, from, to, got, want)
			}
		}
	}
}

// TestAllocAcrossGroups: in a range spanning several groups, the cursor
// hands out numbers in order, and after a wrap into a full range finds
// the few free numbers in order, wherever they are in their groups.
func TestAllocAcrossGroups(t *testing.T) {
	max := groupNumbers + 11300
	a := newAlloc(t, max)
	for nr := 1; nr < max; nr++ {
		mustAlloc(t, a, nr)
	}
	wantErr(t, a, syscall.EAGAIN)
	freed := []int{299, 300, 301 + groupLines, groupNumbers - 1, groupNumbers, groupNumbers + 1, max - 1}
	for _, nr := range freed {
		a.Free(nr)
	}
	for _, nr := range freed[1:] {
		mustAlloc(t, a, nr)
	}
	wantErr(t, a, syscall.EAGAIN) // 299 is below the restart point
	if a.Count() != max-2 {
		t.Fatalf("count %d, want %d", a.Count(), max-2)
	}
}

// TestAllocFailureKeepsCursor_A11: an allocation that finds the range full
// leaves the cursor where it was, as alloc_pid's failed idr_alloc_cyclic
// does: of two numbers freed afterwards, the one at the cursor comes
// first, not the one after the wrap.
func TestAllocFailureKeepsCursor_A11(t *testing.T) {
	a := newAlloc(t, 1000)
	for nr := 1; nr < 1000; nr++ {
		mustAlloc(t, a, nr)
	}
	for nr := 300; nr < 700; nr++ {
		a.Free(nr)
		mustAlloc(t, a, nr) // the wrap fills them again; the cursor stops at 700
	}
	wantErr(t, a, syscall.EAGAIN)
	wantErr(t, a, syscall.EAGAIN)
	a.Free(400)
	a.Free(700)
	mustAlloc(t, a, 700)
	mustAlloc(t, a, 400)
}

// TestSequenceAcrossWraps: sequence numbers keep increasing across wraps
// and the reset of A12, and no two allocations share one.
func TestSequenceAcrossWraps(t *testing.T) {
	a := newAlloc(t, MinMax+20)
	v := 0
	last := uint64(0)
	next := func() int {
		t.Helper()
		nr, seq, err := a.Alloc(&v)
		if err != nil || seq <= last {
			t.Fatalf("Alloc = %d, seq %d after %d, %v", nr, seq, last, err)
		}
		last = seq
		return nr
	}
	a.Abort(next()) // pid 1 again next
	if nr := next(); nr != 1 {
		t.Fatalf("got %d after the reset, want 1", nr)
	}
	for range 5 * MinMax {
		a.Free(next())
	}
}
