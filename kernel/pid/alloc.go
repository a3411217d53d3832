// Package pid allocates process ids for one pid-namespace level and maps
// them to objects without locks on the lookup side.
//
// An Allocator mirrors what alloc_pid does with a namespace's IDR in Linux
// (kernel/pid.c): numbers are handed out cyclically in [pid_min, pid_max),
// where pid_min is 1 until the cursor has passed RESERVED_PIDS (300) and 300
// afterwards, and a number is not reused until the cursor wraps. A Table
// publishes the object behind each number with atomic stores so that lookups
// (find_pid_ns) take no lock.
package pid

import (
	"math/bits"
	"sync/atomic"
	"syscall"

	"tasklist/lockstat"
)

const (
	// ReservedPIDs is RESERVED_PIDS: after the first wrap, allocation
	// restarts here rather than at 1, keeping low numbers for daemons.
	ReservedPIDs = 300
	// DefaultMax is the default pid_max.
	DefaultMax = 32768
	// MinMax is the smallest pid_max Linux accepts (RESERVED_PIDS + 1).
	MinMax = ReservedPIDs + 1
	// Limit is PID_MAX_LIMIT on 64-bit systems: no pid_max may exceed it.
	Limit = 4 * 1024 * 1024
)

var allocatorClass = lockstat.NewClass("pid.Allocator.mu")

// Space is what allocators drawing from one numbering share: the numbers
// in use, the cursor (idr_next), pid_max and the allocation sequence. An
// allocator made by NewAllocator has a space of its own, as every
// namespace level has in Linux. Allocators made by NewSharedAllocator on
// one Space hand out numbers in a single cyclic order and never the same
// number twice, each publishing only its own; a benchmark control uses it
// to give independent kernels one pid cursor, the one thing a table that
// keeps Linux's global pid order cannot stop sharing.
//
// Neither allocation nor freeing takes a lock (pidmap_lock serialises both
// in Linux). An allocation claims the numbers from the cursor up to the
// one it takes by moving the cursor past them with a compare-and-swap from
// the value it scanned from, then sets that number's bit: allocations are
// ordered by their cursor moves, so the cursor never goes back and a
// number is not reused before the cursor wraps, as under a lock. Freeing
// clears a bit and the counts. The lock orders only changes of pid_max;
// it is a leaf: nothing else is acquired while it is held.
type Space struct {
	mu lockstat.Mutex
	// used has one bit per number in [0, max), in words that never move
	// once made: a set bit is allocated. Alloc sets bits and Free clears
	// them with atomic operations. SetMax replaces the slice, keeping the
	// words, so an operation that loaded the old slice uses the same word.
	used atomic.Pointer[[]*atomic.Uint64]
	// count is the number of allocated numbers, over all allocators.
	count atomic.Int64
	// cursor is the next number to try (idr_next).
	cursor atomic.Int64
	// max is pid_max: the largest number handed out is max-1. It changes
	// under mu, after used has grown to cover it.
	max atomic.Int64
	// seq counts successful allocations since creation.
	seq atomic.Uint64
}

// growUsed makes used cover numbers below max.
//
// Preconditions: s.mu is held.
//
// +checklocks:s.mu
func (s *Space) growUsed(max int) {
	var words []*atomic.Uint64
	if old := s.used.Load(); old != nil {
		words = *old
	}
	if need := (max + 63) / 64; need > len(words) {
		grown := make([]*atomic.Uint64, need)
		copy(grown, words)
		block := make([]atomic.Uint64, need-len(words))
		for i := range block {
			grown[len(words)+i] = &block[i]
		}
		s.used.Store(&grown)
	}
}

// word returns the word that holds nr's bit.
func (s *Space) word(nr int) *atomic.Uint64 { return (*s.used.Load())[nr/64] }

// NewSpace returns an empty number space with the given pid_max, which
// must be in [MinMax, Limit].
func NewSpace(max int) (*Space, error) {
	if max < MinMax || max > Limit {
		return nil, syscall.EINVAL
	}
	s := &Space{}
	s.mu.Init(allocatorClass, 0)
	s.mu.Lock()
	s.growUsed(max)
	s.max.Store(int64(max))
	s.mu.Unlock()
	return s, nil
}

// Allocator hands out the pid numbers of one namespace level and maps each
// allocated number to an object. Nothing takes a lock but SetMax. An
// allocation publishes its object before it checks for Disable, and
// Disable is set before the walk that follows it, so that walk sees every
// number whose allocation succeeds.
type Allocator[T any] struct {
	space *Space
	table table[T]

	// count is the number of numbers this allocator has allocated
	// (pid_allocated), kept only by an allocator that shares its space:
	// one with a space of its own counts in the space's count, so that
	// an allocation and a release write one shared count, not two.
	count  atomic.Int64
	shared bool
	// disabled is set once the namespace's init has died: every later
	// allocation fails with ENOMEM (disable_pid_allocation).
	disabled atomic.Bool
}

// NewAllocator returns an allocator with a space of its own and the given
// pid_max, which must be in [MinMax, Limit].
func NewAllocator[T any](max int) (*Allocator[T], error) {
	s, err := NewSpace(max)
	if err != nil {
		return nil, err
	}
	return &Allocator[T]{space: s}, nil
}

// NewSharedAllocator returns an allocator that draws its numbers from s,
// which other allocators may share: pid_max, the cursor, the wrap and the
// sequence numbers are then theirs in common, while each allocator
// publishes, counts, ranges over and disables only its own numbers.
func NewSharedAllocator[T any](s *Space) *Allocator[T] { return &Allocator[T]{space: s, shared: true} }

// Alloc takes the next free number, cyclically, and publishes v, which
// must not be nil, for it. It returns the number and the allocation's
// sequence number (how many allocations the allocator's space has made,
// this one included). Errors:
// EAGAIN when every number in range is taken, ENOMEM when allocation has
// been disabled. A disabled allocator still moves its cursor past the
// number it would have handed out: alloc_pid takes a number from the IDR
// at every level before it checks PIDNS_ADDING, and gives it back when the
// check fails, so a fork into a dead namespace uses up a number (A13).
func (a *Allocator[T]) Alloc(v *T) (nr int, seq uint64, err error) {
	s := a.space
	for {
		nr, err = s.claim()
		if err != nil {
			return 0, 0, err
		}
		bit := uint64(1) << (nr % 64)
		if !s.setBit(nr, bit) {
			continue // the cursor wrapped round to nr meanwhile: claim again
		}
		a.table.store(nr, v)
		if a.disabled.Load() {
			// Published before the check: a walk after Disable may have
			// seen v, as one sees an embryo whose clone then fails.
			a.table.store(nr, nil)
			s.word(nr).And(^bit)
			return 0, 0, syscall.ENOMEM
		}
		s.count.Add(1)
		if a.shared {
			a.count.Add(1)
		}
		return nr, s.seq.Add(1), nil
	}
}

// claim picks the first free number at or after the cursor, cyclically,
// and moves the cursor past it. Errors: EAGAIN when every number in range
// is taken.
func (s *Space) claim() (int, error) {
	for {
		words := *s.used.Load()
		to := min(int(s.max.Load()), len(words)*64)
		cursor := s.cursor.Load()
		lowest := 1
		if cursor > ReservedPIDs {
			lowest = ReservedPIDs
		}
		start := max(int(cursor), lowest)
		nr := findFree(words, start, to)
		if nr < 0 && start > lowest {
			nr = findFree(words, lowest, to)
		}
		if nr < 0 {
			return 0, syscall.EAGAIN
		}
		if s.cursor.CompareAndSwap(cursor, int64(nr)+1) {
			return nr, nil
		}
	}
}

// setBit marks nr allocated and reports whether it was free.
func (s *Space) setBit(nr int, bit uint64) bool {
	w := s.word(nr)
	for {
		old := w.Load()
		if old&bit != 0 {
			return false
		}
		if w.CompareAndSwap(old, old|bit) {
			return true
		}
	}
}

// findFree returns the first clear bit in [from, to) of words, or -1.
func findFree(words []*atomic.Uint64, from, to int) int {
	for from < to {
		w := from / 64
		free := ^words[w].Load() >> (from % 64)
		if free != 0 {
			nr := from + bits.TrailingZeros64(free)
			if nr < to {
				return nr
			}
			return -1
		}
		from = (w + 1) * 64
	}
	return -1
}

// Load returns the object published for nr, or nil. It takes no lock.
func (a *Allocator[T]) Load(nr int) *T { return a.table.load(nr) }

// Range calls f for every published object in increasing pid order until f
// returns false. It takes no lock: it sees every object published before it
// began and may or may not see one published concurrently.
func (a *Allocator[T]) Range(f func(nr int, v *T) bool) { a.table.rangeAll(f) }

// Free unpublishes nr, returns it to the allocator and reports how many
// numbers remain allocated. It takes no lock.
func (a *Allocator[T]) Free(nr int) int { return a.free(nr) }

// Abort returns a number whose allocation was not completed (a later
// namespace level failed). If that leaves the space empty, the cursor is
// reset so that the next attempt gets pid 1 again, as alloc_pid does for a
// namespace whose first allocation failed.
func (a *Allocator[T]) Abort(nr int) {
	s := a.space
	a.free(nr)
	if s.count.Load() == 0 {
		// Unless another allocation has moved the cursor since.
		s.cursor.CompareAndSwap(int64(nr)+1, 0)
	}
}

// free unpublishes nr and clears its bit; it returns the allocator's
// count after it. The table entry goes first, so a number is never seen
// free while its object is still published.
func (a *Allocator[T]) free(nr int) int {
	s := a.space
	bit := uint64(1) << (nr % 64)
	if nr <= 0 || nr/64 >= len(*s.used.Load()) || s.word(nr).Load()&bit == 0 || a.table.load(nr) == nil {
		panic("pid: freeing a number that is not allocated")
	}
	a.table.store(nr, nil)
	s.word(nr).And(^bit)
	n := s.count.Add(-1)
	if a.shared {
		n = a.count.Add(-1)
	}
	return int(n)
}

// Disable makes every later Alloc fail with ENOMEM (after it has moved the
// cursor, as a failed alloc_pid does).
func (a *Allocator[T]) Disable() { a.disabled.Store(true) }

// Disabled reports whether Disable has been called.
func (a *Allocator[T]) Disabled() bool { return a.disabled.Load() }

// Count returns the number of numbers this allocator has allocated.
func (a *Allocator[T]) Count() int {
	if a.shared {
		return int(a.count.Load())
	}
	return int(a.space.count.Load())
}

// Max returns pid_max.
func (a *Allocator[T]) Max() int { return a.space.Max() }

// SetMax changes pid_max, for every allocator of the space. Numbers
// already handed out above the new maximum stay valid until freed.
// Errors: EINVAL outside [MinMax, Limit].
func (a *Allocator[T]) SetMax(max int) error {
	if max < MinMax || max > Limit {
		return syscall.EINVAL
	}
	s := a.space
	// The lock orders concurrent changes: used grows before max does.
	s.mu.Lock()
	defer s.mu.Unlock()
	s.growUsed(max)
	s.max.Store(int64(max))
	return nil
}

// Max returns the space's pid_max.
func (s *Space) Max() int { return int(s.max.Load()) }

// AllocAt takes the number nr, which the caller has checked to be in
// [1, pid_max), and publishes v, which must not be nil, for it: alloc_pid's
// idr_alloc(nr, nr+1) for a number that clone3's set_tid chooses. The
// cursor does not move, so cyclic allocation goes on where it was and skips
// nr while it is taken. It returns the allocation's sequence number, as
// Alloc does. Errors: EEXIST when nr is taken; ENOMEM when allocation has
// been disabled, once nr has been published and taken back, as Alloc does.
func (a *Allocator[T]) AllocAt(nr int, v *T) (seq uint64, err error) {
	s := a.space
	bit := uint64(1) << (nr % 64)
	if nr <= 0 || nr/64 >= len(*s.used.Load()) || !s.setBit(nr, bit) {
		return 0, syscall.EEXIST
	}
	a.table.store(nr, v)
	if a.disabled.Load() {
		a.table.store(nr, nil)
		s.word(nr).And(^bit)
		return 0, syscall.ENOMEM
	}
	s.count.Add(1)
	if a.shared {
		a.count.Add(1)
	}
	return s.seq.Add(1), nil
}
