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

// The cursor is one word: the number of times it has wrapped (its lap)
// above posBits bits of position, the next number to try (idr_next).
// Every move takes it forward as a 64-bit number, wraps included, so its
// value after an allocation's move orders that allocation among all of
// the space's: it is the allocation's sequence number, and no second
// shared counter is needed.
const (
	posBits = 23 // more than Limit needs, so that a few adds past pid_max never reach the lap
	posMask = 1<<posBits - 1
)

// Space is what allocators drawing from one numbering share: the numbers
// in use, the cursor (idr_next) and pid_max. An allocator made by
// NewAllocator has a space of its own, as every namespace level has in
// Linux. Allocators made by NewSharedAllocator on one Space hand out
// numbers in a single cyclic order and never the same number twice, each
// publishing only its own; a benchmark control uses it to give
// independent kernels one pid cursor, the one thing a table that keeps
// Linux's global pid order cannot stop sharing.
//
// Neither allocation nor freeing takes a lock (pidmap_lock serialises both
// in Linux), and the only word every allocation writes is the cursor,
// alone on its cache line; a free writes only its number's own lines.
// An allocation takes the number the cursor points at by adding one to
// it, the common case, or else scans for the next free number and moves
// the cursor past it with a compare-and-swap from the value it scanned
// from; then it sets that number's bit. Allocations are ordered by their
// cursor moves, so the cursor never goes back and a number is not reused
// before the cursor wraps, as under a lock. Freeing clears the bit. The
// lock orders only changes of pid_max; it is a leaf: nothing else is
// acquired while it is held.
type Space struct {
	// The fields up to the padding are read by every allocation and
	// written only when pid_max changes.
	mu lockstat.Mutex
	// used holds the bits of the numbers in [0, max) and their counts
	// (usedGroup), in groups that never move once made: a set bit is
	// allocated. Alloc sets bits and Free clears them with atomic
	// operations. SetMax replaces the slice, keeping the groups, so an
	// operation that loaded the old slice uses the same bits.
	used atomic.Pointer[[]*usedGroup]
	// max is pid_max: the largest number handed out is max-1. It changes
	// under mu, after used has grown to cover it.
	max atomic.Int64
	_   [64]byte
	// cursor is the lap and the next number to try (see posBits).
	cursor atomic.Uint64
	_      [56]byte
}

// growUsed makes used cover numbers below max.
//
// Preconditions: s.mu is held.
//
// +checklocks:s.mu
func (s *Space) growUsed(max int) {
	var groups []*usedGroup
	if old := s.used.Load(); old != nil {
		groups = *old
	}
	if need := groupsFor(max); need > len(groups) {
		grown := make([]*usedGroup, need)
		copy(grown, groups)
		for i := len(groups); i < need; i++ {
			grown[i] = new(usedGroup)
		}
		s.used.Store(&grown)
	}
}

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
	space  *Space
	shared bool
	// disabled is set once the namespace's init has died: every later
	// allocation fails with ENOMEM (disable_pid_allocation).
	disabled atomic.Bool
	_        [64]byte
	// count is the number of numbers this allocator has allocated
	// (pid_allocated), kept only by an allocator that shares its space;
	// one with a space of its own counts in the space's lines.
	count atomic.Int64
	_     [56]byte
	table table[T]
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
// sequence number, which is larger than that of every allocation the
// space made before. Errors:
// EAGAIN when every number in range is taken, ENOMEM when allocation has
// been disabled. A disabled allocator still moves its cursor past the
// number it would have handed out: alloc_pid takes a number from the IDR
// at every level before it checks PIDNS_ADDING, and gives it back when the
// check fails, so a fork into a dead namespace uses up a number (A13).
func (a *Allocator[T]) Alloc(v *T) (nr int, seq uint64, err error) {
	nr, seq, slot, err := a.space.claim()
	if err != nil {
		return 0, 0, err
	}
	a.table.store(nr, v)
	if a.disabled.Load() {
		// Published before the check: a walk after Disable may have
		// seen v, as one sees an embryo whose clone then fails.
		a.table.store(nr, nil)
		slot.clear()
		return 0, 0, syscall.ENOMEM
	}
	slot.line.count.Add(1)
	if a.shared {
		a.count.Add(1)
	}
	return nr, seq, nil
}

// claim takes the first free number at or after the cursor, cyclically:
// it moves the cursor past it and sets its bit. It returns the number,
// the cursor's value after the move and the number's slot. Errors: EAGAIN
// when every number in range is taken.
func (s *Space) claim() (int, uint64, usedSlot, error) {
	groups := *s.used.Load()
	to := min(int(s.max.Load()), len(groups)*groupNumbers)
	// One add takes the number the cursor points at, which is free
	// unless the cursor has wrapped into numbers still in use: the
	// cursor's line is then all that is shared. Position 0 and the
	// positions past pid_max need the scan, which finds where to go.
	c := s.cursor.Add(1) - 1
	if pos := int(c & posMask); pos > 0 && pos < to {
		if slot := slotOf(groups, pos); slot.set() {
			return pos, c + 1, slot, nil
		}
	}
	for {
		nr, cur, next, err := s.scan()
		if err != nil {
			// Nothing free: put the cursor back where the add found
			// it, as a failed alloc_pid leaves idr_next, unless
			// another allocation has moved it since.
			s.cursor.CompareAndSwap(c+1, c)
			return 0, 0, usedSlot{}, err
		}
		if !s.cursor.CompareAndSwap(cur, next) {
			continue
		}
		if slot := slotOf(*s.used.Load(), nr); slot.set() {
			return nr, next, slot, nil
		}
		// The cursor wrapped round to nr meanwhile: claim again.
	}
}

// scan finds the first free number at or after the cursor, cyclically
// (idr_alloc_cyclic from pid_min). It returns the number, the cursor it
// scanned from and the cursor's value once past the number. Errors:
// EAGAIN when every number in range is taken.
func (s *Space) scan() (nr int, cur, next uint64, err error) {
	groups := *s.used.Load()
	to := min(int(s.max.Load()), len(groups)*groupNumbers)
	cur = s.cursor.Load()
	pos, lap := int(cur&posMask), cur>>posBits
	lowest := 1
	if pos > ReservedPIDs {
		lowest = ReservedPIDs
	}
	start := max(pos, lowest)
	nr = findFree(groups, start, to)
	if nr < 0 && start > lowest {
		nr = findFree(groups, lowest, to)
		lap++
	}
	if nr < 0 {
		return 0, 0, 0, syscall.EAGAIN
	}
	return nr, cur, lap<<posBits | uint64(nr+1), nil
}

// Load returns the object published for nr, or nil. It takes no lock.
func (a *Allocator[T]) Load(nr int) *T { return a.table.load(nr) }

// Range calls f for every published object in increasing pid order until f
// returns false. It takes no lock: it sees every object published before it
// began and may or may not see one published concurrently.
func (a *Allocator[T]) Range(f func(nr int, v *T) bool) { a.table.rangeAll(f) }

// Free unpublishes nr and returns it to the allocator. It takes no lock
// and writes only nr's own slot in the table and its line of used bits.
func (a *Allocator[T]) Free(nr int) { a.free(nr) }

// Abort returns a number whose allocation was not completed (a later
// namespace level failed). If that leaves the space empty, the cursor is
// reset so that the next attempt gets pid 1 again, as alloc_pid does for a
// namespace whose first allocation failed.
func (a *Allocator[T]) Abort(nr int) {
	s := a.space
	a.free(nr)
	if s.count() != 0 {
		return
	}
	// Unless another allocation has moved the cursor since. The reset
	// starts a lap, so the cursor still only goes forward.
	if cur := s.cursor.Load(); int(cur&posMask) == nr+1 {
		s.cursor.CompareAndSwap(cur, (cur>>posBits+1)<<posBits)
	}
}

// free unpublishes nr and clears its bit. The table entry goes first, so
// a number is never seen free while its object is still published.
func (a *Allocator[T]) free(nr int) {
	groups := *a.space.used.Load()
	if nr <= 0 || nr >= len(groups)*groupNumbers || a.table.load(nr) == nil {
		panic("pid: freeing a number that is not allocated")
	}
	slot := slotOf(groups, nr)
	if !slot.isUsed() {
		panic("pid: freeing a number that is not allocated")
	}
	a.table.store(nr, nil)
	slot.line.count.Add(-1)
	slot.clear()
	if a.shared {
		a.count.Add(-1)
	}
}

// Disable makes every later Alloc fail with ENOMEM (after it has moved the
// cursor, as a failed alloc_pid does).
func (a *Allocator[T]) Disable() { a.disabled.Store(true) }

// Disabled reports whether Disable has been called.
func (a *Allocator[T]) Disabled() bool { return a.disabled.Load() }

// Count returns the number of numbers this allocator has allocated. An
// allocator with a space of its own sums its lines' counts, each read at
// its own moment: a count read while numbers are allocated and freed is
// exact only once they stop, but one read after a free sees that free.
func (a *Allocator[T]) Count() int {
	if a.shared {
		return int(a.count.Load())
	}
	return a.space.count()
}

// count returns how many numbers the space has allocated, over all its
// allocators.
func (s *Space) count() int { return countIn(*s.used.Load()) }

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
// cursor's position does not move, so cyclic allocation goes on where it
// was and skips nr while it is taken; its lap count does, so that the
// allocation's sequence number, the cursor's new value, is larger than
// every earlier one, as Alloc's is. Errors: EEXIST when nr is taken;
// ENOMEM when allocation has been disabled, once nr has been published and
// taken back, as Alloc does.
func (a *Allocator[T]) AllocAt(nr int, v *T) (seq uint64, err error) {
	s := a.space
	groups := *s.used.Load()
	if nr <= 0 || nr >= len(groups)*groupNumbers {
		return 0, syscall.EEXIST
	}
	slot := slotOf(groups, nr)
	if !slot.set() {
		return 0, syscall.EEXIST
	}
	a.table.store(nr, v)
	if a.disabled.Load() {
		a.table.store(nr, nil)
		slot.clear()
		return 0, syscall.ENOMEM
	}
	slot.line.count.Add(1)
	if a.shared {
		a.count.Add(1)
	}
	return s.cursor.Add(1 << posBits), nil
}
