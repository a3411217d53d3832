package lockstat

import (
	"math/bits"
	"sort"
	"sync/atomic"
	"time"
	"unsafe"
)

// Acquisition modes, indexing a stripe's counters.
const (
	exclusive = iota // Mutex, and RWMutex for writing
	shared           // RWMutex for reading
	numModes
)

// NumBuckets is the number of buckets in a [Timing] histogram.
const NumBuckets = 40

// numStripes is how many counter sets each class spreads its locks over, so
// that unrelated locks of one hot class rarely update the same cache line.
const numStripes = 32

// timingCounters accumulate one kind of duration, in nanoseconds.
type timingCounters struct {
	total, max atomic.Uint64
	// minInv is the bitwise complement of the minimum, so that 0 means "no
	// sample yet" and the minimum is lowered by raising minInv.
	minInv atomic.Uint64
	hist   [NumBuckets]atomic.Uint64
}

// modeCounters are the counters of one acquisition mode.
type modeCounters struct {
	acquisitions, contentions, bounces atomic.Uint64
	wait, hold                         timingCounters
}

// stripe is one counter set. The padding keeps the counters of neighbouring
// stripes more than a cache line apart whatever the array's alignment.
type stripe struct {
	modes [numModes]modeCounters
	_     [64]byte
}

// SetStats turns statistics collection on or off for all locks and returns
// the previous setting. Statistics start off.
//
// A hold that began while statistics were off is not timed; one that ends
// after they are turned off is not recorded.
func SetStats(on bool) (previous bool) { return setMode(modeStats, on) }

// Stats returns c's statistics. The counters are read one by one, so
// statistics read while c's locks are in use need not be consistent across
// fields: a contention may be counted whose wait is not yet timed.
func (c *Class) Stats() ClassStats {
	s := ClassStats{Name: c.name, class: c}
	for m, ms := range [numModes]*ModeStats{exclusive: &s.Write, shared: &s.Read} {
		var waitMinInv, holdMinInv uint64
		for i := range c.stripes {
			mc := &c.stripes[i].modes[m]
			ms.Acquisitions += mc.acquisitions.Load()
			ms.Contentions += mc.contentions.Load()
			ms.Bounces += mc.bounces.Load()
			waitMinInv = max(waitMinInv, mc.wait.addTo(&ms.Wait))
			holdMinInv = max(holdMinInv, mc.hold.addTo(&ms.Hold))
		}
		ms.Wait.setMin(waitMinInv)
		ms.Hold.setMin(holdMinInv)
	}
	s.HottestHold = time.Duration(c.hottest.Load())
	return s
}

// addTo adds t's counters to s except for the minimum, whose complement it
// returns.
func (t *timingCounters) addTo(s *Timing) (minInv uint64) {
	s.Total += time.Duration(t.total.Load())
	s.Max = max(s.Max, time.Duration(t.max.Load()))
	for i := range t.hist {
		s.Hist[i] += t.hist[i].Load()
	}
	return t.minInv.Load()
}

func (t *Timing) setMin(minInv uint64) {
	if minInv != 0 {
		t.Min = time.Duration(^minInv)
	}
}

// Snapshot returns the statistics of every class that has had an
// acquisition or contention since statistics were last reset, sorted by
// name; classes of the same name stay in registration order.
func Snapshot() []ClassStats {
	var out []ClassStats
	for _, c := range Classes() {
		if s := c.Stats(); s.active() {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ResetStats zeroes the statistics of every class, including each lock's
// own hold total behind [ClassStats.HottestHold]. Acquisitions and releases
// in progress may still add to them afterwards, and a hold in progress is
// recorded in full when it ends.
func ResetStats() {
	for _, c := range Classes() {
		c.generation.Add(1)
		c.hottest.Store(0)
		for i := range c.stripes {
			for m := range c.stripes[i].modes {
				mc := &c.stripes[i].modes[m]
				mc.acquisitions.Store(0)
				mc.contentions.Store(0)
				mc.bounces.Store(0)
				mc.wait.reset()
				mc.hold.reset()
			}
		}
	}
}

func (t *timingCounters) reset() {
	t.total.Store(0)
	t.max.Store(0)
	t.minInv.Store(0)
	for i := range t.hist {
		t.hist[i].Store(0)
	}
}

// add records a duration of d nanoseconds.
func (t *timingCounters) add(d uint64) {
	t.hist[bucket(d)].Add(1)
	t.total.Add(d)
	raise(&t.max, d)
	raise(&t.minInv, ^d)
}

// bucket returns the histogram bucket of a duration of d nanoseconds.
func bucket(d uint64) int {
	return min(max(bits.Len64(d)-1, 0), NumBuckets-1)
}

// raise sets a to v if v is larger.
func raise(a *atomic.Uint64, v uint64) {
	for old := a.Load(); v > old; old = a.Load() {
		if a.CompareAndSwap(old, v) {
			return
		}
	}
}

// slot returns the stripe that s, which has a class, counts in, chosen by
// hashing its address so that a lock needs no field for it. The hash is
// MurmurHash3's finalizer: a single multiplication maps the strides of
// some object sizes onto a few stripes. A lock on a goroutine's stack may
// move and change stripes; that is harmless, as stripes are summed.
func (s *lockState) slot() *stripe {
	h := uint64(uintptr(unsafe.Pointer(s)))
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return &s.class.stripes[h%numStripes]
}

// blocker is the acquiring side of a lock: sync.Mutex, sync.RWMutex, or the
// read side of a sync.RWMutex.
type blocker interface {
	Lock()
	TryLock() bool
}

// timedLock acquires l for s in mode m, counting the acquisition and, if
// the fast path fails, the contention and the time spent blocked.
// Contention is counted before blocking so that it is visible while the
// caller waits.
func (s *lockState) timedLock(l blocker, m int) {
	mc := &s.slot().modes[m]
	if !l.TryLock() {
		mc.contentions.Add(1)
		start := now()
		l.Lock()
		mc.wait.add(uint64(now() - start))
	}
	mc.acquisitions.Add(1)
}

// noteCPU counts an acquisition of rw in mode m as a bounce if the lock
// was last acquired on another CPU, and records this one: the acquisition
// wrote the lock's word (a reader its reader count) on this CPU after
// another had, so the line moved between them, whether or not anyone
// waited (acq-bounces in Linux's lock_stat).
func (rw *RWMutex) noteCPU(m int) {
	here := cpu()
	if last := rw.lastCPU.Load(); last != here {
		rw.lastCPU.Store(here)
		if last != 0 {
			rw.st.slot().modes[m].bounces.Add(1)
		}
	}
}

// A lock's held word packs, in its top heldGenBits bits, the class's
// generation (modulo 2^heldGenBits) when the lock was last released, and
// below them the lock's exclusive hold total in that generation, in
// nanoseconds, saturating at about 78 hours. Packing keeps lockState at
// five words. A lock that was last released exactly a multiple of
// 2^heldGenBits resets ago mistakes its old total for a current one.
const (
	heldGenBits   = 16
	heldTotalBits = 64 - heldGenBits
	heldTotalMask = 1<<heldTotalBits - 1
)

// recordHold adds the exclusive hold that is ending to the statistics, if
// it was timed and statistics are still on: to the class's hold times, to
// the lock's own total, restarted if the class was reset since the lock's
// last release, and to the class's hottest total.
//
// Preconditions: the caller holds s exclusively.
func (s *lockState) recordHold() {
	if s.since == 0 {
		return
	}
	if mode.Load()&modeStats != 0 {
		d := uint64(now() - s.since)
		s.slot().modes[exclusive].hold.add(d)
		c := s.class
		gen := uint64(c.generation.Load()) << heldTotalBits
		total := d
		if s.held&^heldTotalMask == gen {
			total = min(total+s.held&heldTotalMask, heldTotalMask)
		}
		s.held = gen | total
		raise(&c.hottest, total)
	}
	s.since = 0
}

// The occupancy word of an RWMutex packs the number of timed read holds
// outstanding into its low bits and, above them, when the first of them
// began, modulo 2^occStartBits nanoseconds. One word lets a reader open or
// close an occupied interval with a single compare-and-swap, without a
// window in which another reader could see the count and the start
// disagree. Intervals are timed correctly up to 2^occStartBits ns (about
// 4.9 hours); beyond 2^occCountBits-1 concurrent timed readers, further
// readers are not counted and the interval may be closed early.
const (
	occCountBits = 20
	occCountMask = 1<<occCountBits - 1
	occStartBits = 64 - occCountBits
	occStartMask = 1<<occStartBits - 1
)

// beginRead counts a timed read hold of rw, opening an occupied interval if
// it is the only one.
//
// Preconditions: the caller has just read-locked rw.
func (rw *RWMutex) beginRead() {
	for {
		old := rw.occupancy.Load()
		next := old + 1
		switch old & occCountMask {
		case 0:
			next = uint64(now())<<occCountBits | 1
		case occCountMask:
			return
		}
		if rw.occupancy.CompareAndSwap(old, next) {
			return
		}
	}
}

// endRead uncounts a timed read hold of rw and, if it was the last, records
// the occupied interval as a read hold when statistics are on. A read hold
// that was not timed (statistics were turned on while it was held) may
// close the interval early; the count never drops below zero, so the word
// returns to 0 once every reader has left.
//
// Preconditions: the caller read-holds rw.
func (rw *RWMutex) endRead() {
	for {
		old := rw.occupancy.Load()
		if old == 0 {
			return
		}
		last := old&occCountMask == 1
		next := old - 1
		if last {
			next = 0
		}
		if !rw.occupancy.CompareAndSwap(old, next) {
			continue
		}
		if last && mode.Load()&modeStats != 0 {
			d := (uint64(now()) - old>>occCountBits) & occStartMask
			rw.st.slot().modes[shared].hold.add(d)
		}
		return
	}
}

var epoch = time.Now()

// now returns monotonic nanoseconds, never 0 so that 0 can mean "not timed".
func now() int64 { return int64(time.Since(epoch)) + 1 }
