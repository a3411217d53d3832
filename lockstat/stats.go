package lockstat

import (
	"sync/atomic"
	"time"
)

// Stats are the counters of a lock class, summed over all its locks. They
// cover only acquisitions and releases made while statistics were on.
type Stats struct {
	// Acquisitions counts successful Lock, RLock and TryLock calls.
	Acquisitions uint64
	// Contended counts the Lock and RLock calls that found the lock
	// taken and had to block.
	Contended uint64
	// WaitTime is the total time contended calls spent blocked.
	WaitTime time.Duration
	// HoldTime is the total time exclusive holds lasted, from acquisition
	// to Unlock; read holds are not timed.
	HoldTime time.Duration
}

// numStripes is how many counter sets each class spreads its locks over, so
// that unrelated locks of one hot class rarely update the same cache line.
const numStripes = 32

// stripe is one counter set. The padding keeps the counters of neighbouring
// stripes more than a cache line apart whatever the array's alignment.
type stripe struct {
	acquisitions, contended, wait, hold atomic.Uint64
	_                                   [96]byte
}

// SetStats turns statistics collection on or off for all locks and returns
// the previous setting. Statistics start off.
func SetStats(on bool) (previous bool) { return setMode(modeStats, on) }

// Stats returns c's counters. The fields are read one by one, so a snapshot
// taken while c's locks are in use need not be consistent across fields.
func (c *Class) Stats() Stats {
	var s Stats
	for i := range c.stripes {
		st := &c.stripes[i]
		s.Acquisitions += st.acquisitions.Load()
		s.Contended += st.contended.Load()
		s.WaitTime += time.Duration(st.wait.Load())
		s.HoldTime += time.Duration(st.hold.Load())
	}
	return s
}

// ResetStats zeroes the counters of every class. Acquisitions in progress
// may still add to them afterwards.
func ResetStats() {
	for _, c := range Classes() {
		for i := range c.stripes {
			st := &c.stripes[i]
			st.acquisitions.Store(0)
			st.contended.Store(0)
			st.wait.Store(0)
			st.hold.Store(0)
		}
	}
}

// slot returns the stripe that s, which has a class, counts in.
func (s *lockState) slot() *stripe { return &s.class.stripes[s.stripe] }

// blocker is the acquiring side of a lock: sync.Mutex, sync.RWMutex, or the
// read side of a sync.RWMutex.
type blocker interface {
	Lock()
	TryLock() bool
}

// timedLock acquires l for s, counting the acquisition and, if the fast path
// fails, the contention and the time spent blocked. Contention is counted
// before blocking so that it is visible while the caller waits.
func (s *lockState) timedLock(l blocker) {
	st := s.slot()
	if !l.TryLock() {
		st.contended.Add(1)
		start := now()
		l.Lock()
		st.wait.Add(uint64(now() - start))
	}
	st.acquisitions.Add(1)
}

// recordHold adds the exclusive hold that is ending to the hold time, if it
// was timed and statistics are still on.
func (s *lockState) recordHold() {
	if s.since == 0 {
		return
	}
	if mode.Load()&modeStats != 0 {
		s.slot().hold.Add(uint64(now() - s.since))
	}
	s.since = 0
}

var epoch = time.Now()

// now returns monotonic nanoseconds, never 0 so that 0 can mean "not timed".
func now() int64 { return int64(time.Since(epoch)) + 1 }
