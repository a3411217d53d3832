package pid

import (
	"errors"
	"syscall"
	"testing"
)

// TestAllocAt_A32: a chosen number is taken and published without moving
// the cursor's position, which then skips it, with a sequence number
// between those of the allocations before and after; a number in use
// gives EEXIST, and a disabled allocator ENOMEM with the number left free.
func TestAllocAt_A32(t *testing.T) {
	a := newAlloc(t, 400)
	one := 1
	_, before, err := a.Alloc(&one)
	if err != nil {
		t.Fatal(err)
	}
	v := 3
	seq, err := a.AllocAt(3, &v)
	if err != nil || seq <= before || a.Load(3) != &v || a.Count() != 2 {
		t.Fatalf("AllocAt(3) = %d (after %d), %v; Load(3) = %v, Count %d", seq, before, err, a.Load(3), a.Count())
	}
	if _, err := a.AllocAt(3, &v); !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("AllocAt of a number in use: %v, want EEXIST", err)
	}
	two := 2
	if nr, after, err := a.Alloc(&two); err != nil || nr != 2 || after <= seq {
		t.Fatalf("Alloc after AllocAt = %d, seq %d (AllocAt's %d), %v; want 2 with a larger seq", nr, after, seq, err)
	}
	mustAlloc(t, a, 4) // 3 is skipped
	a.Free(3)
	a.Disable()
	if _, err := a.AllocAt(3, &v); !errors.Is(err, syscall.ENOMEM) || a.Load(3) != nil {
		t.Fatalf("AllocAt on a disabled allocator: %v, Load %v", err, a.Load(3))
	}
	a.Free(1)
	a.Free(2)
	a.Free(4)
	if a.Count() != 0 {
		t.Fatalf("Count %d after freeing everything", a.Count())
	}
}
