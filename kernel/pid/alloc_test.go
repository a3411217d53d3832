package pid

import (
	"errors"
	"runtime"
	"sync"
	"syscall"
	"testing"
)

func newAlloc(t *testing.T, max int) *Allocator[int] {
	t.Helper()
	a, err := NewAllocator[int](max)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustAlloc(t *testing.T, a *Allocator[int], want int) {
	t.Helper()
	v := want
	nr, _, err := a.Alloc(&v)
	if err != nil || nr != want {
		t.Fatalf("Alloc = %d, %v; want %d", nr, err, want)
	}
}

func wantErr(t *testing.T, a *Allocator[int], want error) {
	t.Helper()
	v := 0
	if nr, _, err := a.Alloc(&v); !errors.Is(err, want) {
		t.Fatalf("Alloc = %d, %v; want %v", nr, err, want)
	}
}

// TestAllocBounds_A11: pid_max must lie in [RESERVED_PIDS+1, PID_MAX_LIMIT].
func TestAllocBounds_A11(t *testing.T) {
	for _, max := range []int{0, ReservedPIDs, Limit + 1} {
		if _, err := NewAllocator[int](max); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("NewAllocator(%d): %v, want EINVAL", max, err)
		}
	}
	a := newAlloc(t, MinMax)
	for _, max := range []int{ReservedPIDs, Limit + 1} {
		if err := a.SetMax(max); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("SetMax(%d): %v, want EINVAL", max, err)
		}
	}
	if a.Max() != MinMax {
		t.Fatal("a refused SetMax changed pid_max")
	}
}

// TestAllocCyclic_A11: numbers go up to pid_max-1, are not reused before the
// cursor wraps, and after the wrap restart at RESERVED_PIDS (checked on
// Linux 6.18 in a pid namespace with pid_max 301: only pid 300 is handed
// out again; the full range gives EAGAIN although lower pids are free).
func TestAllocCyclic_A11(t *testing.T) {
	a := newAlloc(t, 301)
	for nr := 1; nr <= 3; nr++ {
		mustAlloc(t, a, nr)
	}
	a.Free(2)
	mustAlloc(t, a, 4) // 2 is not reused before the wrap
	for nr := 5; nr <= 300; nr++ {
		mustAlloc(t, a, nr)
	}
	if a.Count() != 299 {
		t.Fatalf("count %d", a.Count())
	}
	wantErr(t, a, syscall.EAGAIN) // [300, 301) is full; 2 is below the restart point
	if a.Free(300); a.Count() != 298 {
		t.Fatalf("%d left after a free, want 298", a.Count())
	}
	mustAlloc(t, a, 300)
	for nr := 1; nr <= 300; nr++ {
		if nr != 2 {
			a.Free(nr)
		}
	}
	if a.Count() != 0 {
		t.Fatalf("count %d after freeing everything", a.Count())
	}
	mustAlloc(t, a, 300) // never back below RESERVED_PIDS once passed
	wantErr(t, a, syscall.EAGAIN)

	// With a larger range the wrap restarts at 300 and skips used numbers.
	b := newAlloc(t, 310)
	for nr := 1; nr <= 309; nr++ {
		mustAlloc(t, b, nr)
	}
	for _, nr := range []int{1, 299, 300, 302} {
		b.Free(nr)
	}
	mustAlloc(t, b, 300)
	mustAlloc(t, b, 302)
	wantErr(t, b, syscall.EAGAIN)
}

// TestAllocFirstFailureResetsCursor_A12: aborting the only allocation of a
// namespace resets its cursor, so the next one is pid 1 again; aborting
// when other numbers are in use does not.
func TestAllocFirstFailureResetsCursor_A12(t *testing.T) {
	a := newAlloc(t, DefaultMax)
	mustAlloc(t, a, 1)
	a.Abort(1)
	mustAlloc(t, a, 1)
	mustAlloc(t, a, 2)
	a.Abort(2)
	mustAlloc(t, a, 3)
	if a.Count() != 2 {
		t.Fatalf("count %d", a.Count())
	}
}

// TestAllocDisable_A13: once disabled, every allocation fails with ENOMEM;
// frees still work.
func TestAllocDisable_A13(t *testing.T) {
	a := newAlloc(t, DefaultMax)
	mustAlloc(t, a, 1)
	if a.Disabled() {
		t.Fatal("disabled from the start")
	}
	a.Disable()
	wantErr(t, a, syscall.ENOMEM)
	if !a.Disabled() {
		t.Fatal("Disabled")
	}
	if a.Free(1); a.Count() != 0 {
		t.Fatal("Free after Disable")
	}
	wantErr(t, a, syscall.ENOMEM)
}

// TestAllocSetMax_A11: raising pid_max extends the range at once; lowering
// it keeps numbers already handed out.
func TestAllocSetMax_A11(t *testing.T) {
	a := newAlloc(t, 400)
	for nr := 1; nr <= 399; nr++ {
		mustAlloc(t, a, nr)
	}
	wantErr(t, a, syscall.EAGAIN)
	if err := a.SetMax(1000); err != nil {
		t.Fatal(err)
	}
	mustAlloc(t, a, 400)
	if err := a.SetMax(350); err != nil {
		t.Fatal(err)
	}
	if v := a.Load(399); v == nil || *v != 399 {
		t.Fatal("a number above the new pid_max must stay valid")
	}
	a.Free(310)
	mustAlloc(t, a, 310)
	wantErr(t, a, syscall.EAGAIN)
}

// TestAllocPublication: Load and Range see exactly the allocated numbers,
// in increasing order; Alloc's sequence numbers increase.
func TestAllocPublication(t *testing.T) {
	a := newAlloc(t, DefaultMax)
	vals := make([]int, 1200)
	var last uint64
	for i := range vals {
		vals[i] = i + 1
		nr, seq, err := a.Alloc(&vals[i])
		if err != nil || nr != i+1 || seq <= last {
			t.Fatalf("Alloc = %d, seq %d, %v", nr, seq, err)
		}
		last = seq
	}
	for nr := 2; nr <= 1200; nr += 2 {
		a.Free(nr)
	}
	if a.Load(2) != nil || a.Load(0) != nil || a.Load(-1) != nil || a.Load(Limit) != nil || *a.Load(3) != 3 {
		t.Fatal("Load")
	}
	prev, n := 0, 0
	a.Range(func(nr int, v *int) bool {
		if nr <= prev || nr%2 == 0 || *v != nr {
			t.Fatalf("Range visited %d after %d", nr, prev)
		}
		prev = nr
		n++
		return true
	})
	if n != 600 || n != a.Count() {
		t.Fatalf("Range visited %d, count %d", n, a.Count())
	}
	stopped := 0
	a.Range(func(int, *int) bool { stopped++; return stopped < 3 })
	if stopped != 3 {
		t.Fatal("Range must stop when f returns false")
	}
}

// TestAllocFreeUnallocatedPanics: freeing a number not in use is a bug in
// the caller and must not be silently absorbed.
func TestAllocFreeUnallocatedPanics(t *testing.T) {
	a := newAlloc(t, DefaultMax)
	mustAlloc(t, a, 1)
	for _, nr := range []int{0, 2, -1, DefaultMax + 64} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Free(%d) did not panic", nr)
				}
			}()
			a.Free(nr)
		}()
	}
	if a.Count() != 1 {
		t.Fatal("a refused Free changed the count")
	}
}

// TestAllocConcurrent: concurrent allocations never hand out a number twice
// and the count returns to zero.
func TestAllocConcurrent(t *testing.T) {
	a := newAlloc(t, 2000)
	var mu sync.Mutex
	held := map[int]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []int
			for i := range 3000 {
				v := i
				nr, _, err := a.Alloc(&v)
				if err == nil {
					mu.Lock()
					if held[nr] {
						t.Errorf("number %d handed out twice", nr)
					}
					held[nr] = true
					mu.Unlock()
					mine = append(mine, nr)
				} else if !errors.Is(err, syscall.EAGAIN) {
					t.Error(err)
				}
				if len(mine) > 100 || err != nil {
					for _, nr := range mine {
						mu.Lock()
						delete(held, nr)
						mu.Unlock()
						a.Free(nr)
					}
					mine = mine[:0]
				}
			}
			for _, nr := range mine {
				mu.Lock()
				delete(held, nr)
				mu.Unlock()
				a.Free(nr)
			}
		}()
	}
	wg.Wait()
	if a.Count() != 0 {
		t.Fatalf("count %d after every number was freed", a.Count())
	}
}

// TestSharedSpace: allocators on one space hand out numbers in one cyclic
// order, never the same number twice; each publishes, counts and frees
// only its own, and the sequence numbers are the space's.
func TestSharedSpace(t *testing.T) {
	s, err := NewSpace(MinMax)
	if err != nil {
		t.Fatal(err)
	}
	a, b := NewSharedAllocator[int](s), NewSharedAllocator[int](s)
	mustAlloc(t, a, 1)
	mustAlloc(t, b, 2)
	mustAlloc(t, a, 3)
	v := 4
	_, seqA, _ := a.Alloc(&v) // 4
	if nr, seq, err := b.Alloc(&v); nr != 5 || seq <= seqA || err != nil {
		t.Fatalf("Alloc = %d, seq %d, %v; want 5, seq after a's %d", nr, seq, err, seqA)
	}
	if a.Count() != 3 || b.Count() != 2 {
		t.Fatalf("counts %d, %d; want 3, 2", a.Count(), b.Count())
	}
	if a.Load(2) != nil || b.Load(1) != nil || *a.Load(3) != 3 {
		t.Fatal("an allocator sees another's numbers")
	}
	var seen []int
	b.Range(func(nr int, _ *int) bool { seen = append(seen, nr); return true })
	if len(seen) != 2 || seen[0] != 2 || seen[1] != 5 {
		t.Fatalf("Range of b visited %v, want [2 5]", seen)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("freeing another allocator's number did not panic")
			}
		}()
		a.Free(2)
	}()
	if a.Free(1); a.Count() != 2 {
		t.Fatalf("Free left %d, want 2", a.Count())
	}
	mustAlloc(t, b, 6) // 1 is not reused before the wrap, whoever freed it
	if err := a.SetMax(400); err != nil || b.Max() != 400 || s.Max() != 400 {
		t.Fatal("pid_max is the space's")
	}
	a.Disable()
	wantErr(t, a, syscall.ENOMEM)
	mustAlloc(t, b, 8) // a's failed allocation moved the shared cursor past 7
}

// TestSharedSpaceConcurrent: allocators on one space, used from several
// goroutines at once, never hand out one number twice.
func TestSharedSpaceConcurrent(t *testing.T) {
	s, err := NewSpace(DefaultMax)
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 4, 2000
	got := make([][]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		a := NewSharedAllocator[int](s)
		wg.Go(func() {
			v := w
			for i := range each {
				nr, _, err := a.Alloc(&v)
				if err != nil {
					t.Error(err)
					return
				}
				got[w] = append(got[w], nr)
				if i%2 == 1 {
					a.Free(nr)
				}
			}
		})
	}
	wg.Wait()
	seen := map[int]bool{}
	for _, nrs := range got {
		for _, nr := range nrs {
			if seen[nr] {
				t.Fatalf("number %d handed out twice", nr)
			}
			seen[nr] = true
		}
	}
}

// TestAllocConcurrentNoEarlyReuse_A11: allocations racing on one cursor
// still hand out numbers in one cyclic order: a number freed at once is
// not handed out again before the cursor wraps, so 2,000 allocations in a
// space of 32,768 get 1..2000, each once.
func TestAllocConcurrentNoEarlyReuse_A11(t *testing.T) {
	a := newAlloc(t, DefaultMax)
	const workers, each = 4, 500
	got := make([][]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				v := i
				nr, _, err := a.Alloc(&v)
				if err != nil {
					t.Error(err)
					return
				}
				got[w] = append(got[w], nr)
				a.Free(nr)
			}
		})
	}
	wg.Wait()
	seen := map[int]bool{}
	for _, nrs := range got {
		for _, nr := range nrs {
			if seen[nr] || nr < 1 || nr > workers*each {
				t.Fatalf("number %d handed out twice or out of 1..%d", nr, workers*each)
			}
			seen[nr] = true
		}
	}
}

// TestAllocDisableSeenByWalk_A13: a walk that follows Disable sees every
// number whose allocation succeeded, however the two race.
func TestAllocDisableSeenByWalk_A13(t *testing.T) {
	for round := range 50 {
		a := newAlloc(t, DefaultMax)
		var mu sync.Mutex
		won := map[int]bool{}
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				for i := 0; ; i++ {
					v := i
					nr, _, err := a.Alloc(&v)
					if err != nil {
						return // ENOMEM: disabled
					}
					mu.Lock()
					won[nr] = true
					mu.Unlock()
				}
			})
		}
		for a.Count() < 20*(round%5+1) {
			runtime.Gosched()
		}
		a.Disable()
		walked := map[int]bool{}
		a.Range(func(nr int, _ *int) bool {
			walked[nr] = true
			return true
		})
		wg.Wait()
		for nr := range won {
			if !walked[nr] {
				t.Fatalf("round %d: number %d was allocated but the walk after Disable missed it", round, nr)
			}
		}
	}
}
