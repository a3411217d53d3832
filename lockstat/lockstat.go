// Package lockstat provides the lock types used throughout tasklist: mutexes
// that belong to a named lock class, keep per-class statistics, and check the
// lock order at run time, class by class, the way Linux's lockdep does.
//
// # Classes and keys
//
// Every lock belongs to a [Class], such as "Process.mu", shared by all the
// locks that guard the same kind of object. The checker reasons about
// classes, not instances: once any goroutine has held a lock of class A while
// acquiring one of class B, it records the order A→B, and any later
// acquisition that closes a cycle in the recorded orders, such as taking an A
// while holding a B, is reported as an inversion. Checkers that track
// individual lock instances, such as go-deadlock, notice an inversion only
// when the same two objects are taken in both orders. With a lock per object,
// a path that locks a parent then a child and another that locks a child then
// a parent almost always run on different objects in a test, so the hazard
// goes unseen; a class-based checker reports it once both orders have been
// seen on any objects, whether or not a deadlock occurred.
//
// Locks of one class may be held together only in strictly increasing order
// of their key, which is given to [Mutex.Init] or [RWMutex.Init] (process
// locks, for example, are keyed by the process's creation serial so that
// ancestors are locked first). Key 0 forbids holding two locks of the class
// at once.
//
// # Where checking is on
//
// Checking records every acquisition's stack and the order of every pair of
// classes held together, which makes a fork+exit+wait cycle some two hundred
// times dearer. It is on by default in the test binaries of tasklist's own
// packages, and off in every other program, the tests of a module that
// embeds tasklist included. Such a module turns it on for its tests, and so
// has its own use of the library checked like tasklist's tests, with the
// environment variable TASKLIST_LOCKCHECK=1 (go test ./... under it) or
// with [SetChecking](true) in its TestMain; TASKLIST_LOCKCHECK=0 turns it
// off in tasklist's tests too. A violation panics unless a reporter is
// installed ([SetReporter]).
//
// # Statistics
//
// While statistics are on (see [SetStats]), every classed lock counts what
// Linux's lock_stat counts, per class and per acquisition mode (exclusive:
// Lock and TryLock of a Mutex or an RWMutex; read: RLock of an RWMutex):
// acquisitions; contentions, the acquisitions that found the lock
// unavailable and blocked; for an RWMutex, bounces, the acquisitions made
// on another CPU than the lock's previous one (lock_stat's acq-bounces),
// which moved the lock's cache line between CPUs whether or not anyone
// waited: a read acquisition writes the reader count, so readers that
// never wait for each other still share that line; and the time contended
// acquisitions waited and the time holds lasted, each as minimum,
// maximum, total and a histogram of log2 buckets of nanoseconds (see
// [Timing]). [Class.Stats] reads one class
// and [Snapshot] every active class; [Since] and [ClassStats.Delta] isolate
// a phase of a run, and [ResetStats] starts over. The counters of a class
// are spread over 32 stripes, picked by hashing the lock's address, so that
// the locks of one hot class that different workers use rarely write the
// same cache line; reading sums the stripes.
//
// Read holds are timed differently from Linux. A reader's RUnlock cannot
// learn when its own RLock happened without storage per reader, so an
// RWMutex times instead the intervals during which at least one reader holds
// it: overlapping read holds count once. That occupied time is what the lock
// kept writers out on readers' account, which is what a writer waits behind;
// Linux's read hold time instead adds up overlapping holds.
//
// [WriteTable] prints the statistics in the layout of /proc/lock_stat,
// without its con-bounces and contention-point columns. A class with read
// acquisitions gets a NAME-W line for its exclusive acquisitions and a
// NAME-R line for its read ones; any other class one NAME line. Times are in
// microseconds. The columns:
//
//   - class name: the class, suffixed with the mode where it has two.
//   - contentions: acquisitions that blocked. A failed TryLock is not one.
//   - waittime-min, waittime-max, waittime-total, waittime-avg: the waits of
//     contended acquisitions, from the failed first attempt to acquisition,
//     spinning included; the average is over completed waits.
//   - acq-bounces: acquisitions of an RWMutex on another CPU than its
//     previous one; 0 for a Mutex, which is not tracked.
//   - acquisitions: successful acquisitions, TryLock's included.
//   - holdtime-min, holdtime-max, holdtime-total, holdtime-avg: exclusive
//     holds, from acquisition to release, on NAME and NAME-W lines; occupied
//     intervals on NAME-R lines. The average is over holds (intervals).
//   - holdtime-hottest, given a worker time: the total exclusive hold time
//     of the class's hottest lock (below); "-" on NAME-R lines.
//   - serial-fraction: holdtime-hottest over the worker time.
//   - wait-fraction: waittime-total over the worker time.
//
// # The serial bound
//
// Each lock also adds up its own exclusive hold time, and each class keeps
// the largest such total of any of its locks: [ClassStats.HottestHold]. The
// holds of one lock never overlap, so this is wall time during which the
// work that needed that lock was done by one worker at a time. The caller
// supplies the run's worker time W, the number of workers times the wall
// time of the run. A class's serial fraction is HottestHold/W (see
// [ClassStats.SerialFraction]) and the run's serial fraction s the largest
// of them (see [RunSerialFraction]). By Amdahl's law, if the run's work
// takes W at one worker, no number of workers does it in less than s·W of
// wall time: the speedup over one worker is at most 1/s. Since the hottest
// lock's holds fit in the wall time, s is at most 1/workers, reached when
// that lock was never free: the lock is saturated.
//
// A class's wait fraction, its wait time in both modes over W (see
// [ClassStats.WaitFraction]), says where workers wait: the share of worker
// time spent blocked on the class's locks. When only the workers take locks,
// the wait fractions of a run add up to at most 1, since a goroutine blocks
// on one lock at a time.
//
// What these numbers do not say:
//   - The bound is a ceiling, not a forecast. Cache-line transfers, shared
//     atomics such as a pid cursor, the allocator, the garbage collector and
//     the scheduler limit scaling too, and none of them is counted but the
//     transfers of an RWMutex's own line (its bounces).
//   - Only a single lock serializes. A class with a lock per object can have
//     a large holdtime-total and a small serial fraction, since workers that
//     use different locks do not wait for each other; and the hold times of
//     different locks do not add up, even where an operation takes them
//     together: each lock bounds the run on its own.
//   - Only exclusive holds serialize. Read holds overlap and are not in
//     HottestHold, but a writer needs the lock free of readers too: for a
//     class with a single lock, such as a plan's big lock, the holdtime-total
//     of its NAME-W and NAME-R lines together is the time writers were kept
//     out, and that over the wall time is how busy the lock was.
//   - A hold includes whatever happens while the lock is held: cache misses
//     that other workers cause, and time the holder spends preempted, which
//     dominates on an oversubscribed machine (more runnable goroutines than
//     cores). Holds grow with the number of workers; measured at one worker
//     they are closest to the work itself.
//   - W counts all of the workers' time, waits and idle time included, so a
//     run whose workers waited has a larger W than the same work at one
//     worker, a smaller s and a looser bound. To project scaling, measure s
//     at one worker.
//   - The clock reads that time a hold lie inside it: tens of nanoseconds
//     per hold (see Cost).
//   - [ResetStats] zeroes the counters, but a hold in progress is recorded
//     in full when it ends; [ClassStats.Delta] knows minima, maxima and
//     HottestHold only as bounds.
//
// [StartProfiles] writes Go's mutex and block profiles for the same run;
// they name the call sites where the statistics name the classes.
//
// # Cost
//
// Checking is on by default only in tasklist's own test binaries (see
// [SetChecking]);
// statistics are off by default (see [SetStats]). With both off, Lock and
// RLock add one atomic load of a package-level flag to the sync.Mutex or
// sync.RWMutex they wrap, Unlock and RUnlock add a test of the lock's own
// fields, and AssertHeld is that load alone, inlined at its call. A lock that was never given a class (a zero Mutex or RWMutex) is
// a plain mutex: it is neither checked nor counted.
//
// With statistics on, an acquisition adds a TryLock and an atomic add, an
// exclusive one also a clock read, and one that blocks an atomic add, two
// clock reads and a histogram update. An exclusive release adds a clock
// read, a histogram update (two atomic adds and two loads, with a
// compare-and-swap when it sets a new minimum or maximum) and a compare with
// the class's hottest total, a compare-and-swap when the lock is the hottest
// one. A read acquisition and its release each add a compare-and-swap on the
// RWMutex's occupancy word, and a clock read where they open or close an
// occupied interval, which the closing release records in the histogram;
// an RWMutex acquisition in either mode also reads the CPU it runs on and,
// when that differs from the last one, stores it and counts a bounce.
// The clock reads cost the most. Measured on a 2-core virtual machine
// shared with other work, as medians of CPU time per operation over
// interleaved runs: an uncontended Lock and Unlock of a Mutex take 8 ns
// with statistics off (a sync.Mutex 6 ns) and 115 ns with them on, most of
// it two clock reads; fork+exit+wait at one worker (BenchmarkForkExitWait
// in package kernel, 18 acquisitions a cycle) costs the same with
// statistics off as before statistics existed (a ratio of 0.97 to 1.00,
// 0.995 in instructions) and 1.8 times as much with them on.
//
// Memory: a Mutex is a sync.Mutex and five words (class, key, holder, hold
// start, the lock's own hold total); an RWMutex is a sync.RWMutex, the same
// five words, and two more: its counts of readers and the CPU of its last
// acquisition. Each class takes about 47 KiB of counters.
//
// The lock types are named structs with explicit Lock and Unlock methods so
// that static lock analysis (gVisor's checklocks) understands them.
package lockstat

import (
	"sync"
	"sync/atomic"
)

// Class names a kind of lock, such as "ThreadGroup.mu". Every classed lock
// belongs to exactly one class; ordering rules and statistics are per class.
// A Class must be created with [NewClass] and is never freed.
type Class struct {
	name string
	id   int // registration index; orders the class pair of a reported inversion

	// after holds the recorded edges from this class; guarded by graphMu.
	after map[*Class]*edge

	// generation counts ResetStats calls, so that a lock's own hold total
	// restarts after one; hottest is the largest such total of any lock of
	// the class since the last reset, in nanoseconds. Every release of the
	// hottest lock writes hottest, so the two sit on a line of their own.
	_          [64]byte
	generation atomic.Uint32
	hottest    atomic.Uint64
	_          [64]byte

	stripes [numStripes]stripe
}

var (
	classesMu sync.Mutex
	classes   []*Class // guarded by classesMu
)

// NewClass registers and returns a new lock class named name. It panics if
// name is empty. Every call makes a distinct class, even for a name already
// in use; duplicate names are allowed but make reports ambiguous.
func NewClass(name string) *Class {
	if name == "" {
		panic("lockstat: NewClass with an empty name")
	}
	c := &Class{name: name}
	classesMu.Lock()
	c.id = len(classes)
	classes = append(classes, c)
	classesMu.Unlock()
	return c
}

// Name returns the name c was registered with.
func (c *Class) Name() string { return c.name }

// Classes returns every registered class in registration order. The slice is
// the caller's own.
func Classes() []*Class {
	classesMu.Lock()
	defer classesMu.Unlock()
	return append([]*Class(nil), classes...)
}

// lockState is the part of a lock that the checker and the statistics use.
// Its address identifies the lock instance.
type lockState struct {
	class *Class
	key   uint64

	// owner is the goroutine whose held list records the exclusive hold,
	// or 0 when the holder is not tracked; since is when the exclusive hold
	// began if statistics were on, or 0; held is the lock's own exclusive
	// hold total (see recordHold). All are written only by the exclusive
	// holder and read by the goroutine releasing the lock, which the
	// sync.Mutex orders after it.
	owner int64
	since int64
	held  uint64
}

func (s *lockState) init(c *Class, key uint64) { s.class, s.key = c, key }

// active reports whether acquisitions of s need more than the bare lock,
// and with which features.
func (s *lockState) active() (uint32, bool) {
	f := mode.Load()
	return f, f != 0 && s.class != nil
}

// acquired finishes an exclusive acquisition made in mode f by goroutine g
// (0 unless f included checking).
func (s *lockState) acquired(f uint32, g int64) {
	if f&modeStats != 0 {
		s.since = now()
	}
	if g != 0 {
		s.owner = g
		pushHeld(g, held{s, false})
	}
}

// trackTry finishes a successful TryLock made in mode f; unlike a blocking
// acquisition it was neither checked nor contended.
func (s *lockState) trackTry(f uint32) {
	var g int64
	if f&modeCheck != 0 {
		g = goid()
	}
	if f&modeStats != 0 {
		s.slot().modes[exclusive].acquisitions.Add(1)
	}
	s.acquired(f, g)
}

// Mutex is a mutual-exclusion lock that belongs to a [Class]. The zero Mutex
// is an unlocked plain mutex that is neither checked nor counted; [Mutex.Init]
// gives it a class. A Mutex must not be copied after first use.
//
// Unlike sync.Mutex, while checking is on a Mutex must be unlocked by the
// goroutine that locked it; any other unlock is reported as "unlock-unheld".
type Mutex struct {
	mu sync.Mutex
	st lockState
}

// Init sets m's class and its order key among locks of the same class (see
// the package documentation). A nil class leaves m unchecked and uncounted.
// Init must be called before m is first used and not concurrently with any
// other method.
func (m *Mutex) Init(c *Class, key uint64) { m.st.init(c, key) }

// Lock acquires m, blocking until it is free. When checking is on it first
// reports any order violation the acquisition would cause, so a recursive
// Lock is reported rather than deadlocking if the reporter panics.
//
// +checklocksignore: the lock's own implementation; callers' acquisitions
// and releases are what checklocks follows.
func (m *Mutex) Lock() {
	f, ok := m.st.active()
	if !ok {
		m.mu.Lock()
		return
	}
	var g int64
	if f&modeCheck != 0 {
		g = checkAcquire(&m.st, false)
	}
	if f&modeStats != 0 {
		m.st.timedLock(&m.mu, exclusive)
	} else {
		m.mu.Lock()
	}
	m.st.acquired(f, g)
}

// TryLock acquires m if it is free and reports whether it did. A TryLock
// never blocks, so it cannot complete a deadlock and its order is not
// checked; a lock it acquires is tracked like any other.
//
// +checklocksignore: the lock's own implementation; callers' acquisitions
// and releases are what checklocks follows.
func (m *Mutex) TryLock() bool {
	if !m.mu.TryLock() {
		return false
	}
	if f, ok := m.st.active(); ok {
		m.st.trackTry(f)
	}
	return true
}

// Unlock releases m. A lock acquired while checking was on is forgotten by
// the checker even if checking has since been turned off.
//
// +checklocksignore: the lock's own implementation; callers' acquisitions
// and releases are what checklocks follows.
func (m *Mutex) Unlock() {
	if m.st.owner != 0 || m.st.since != 0 {
		m.st.releaseExclusive()
	}
	m.mu.Unlock()
}

// AssertHeld reports a "not-held" violation if checking is on, m has a
// class, and the calling goroutine does not hold m (Linux's
// lockdep_assert_held). It does nothing otherwise: with checking off it
// costs an atomic load, inlined. A hold acquired while checking was off is
// not tracked: AssertHeld then reports only that m is not held at all.
func (m *Mutex) AssertHeld() {
	if mode.Load()&modeCheck != 0 {
		m.assertHeld()
	}
}

// assertHeld is AssertHeld with checking on. A hold the checker did not
// track leaves m.st.owner 0. The caller reads it only once m is known to
// be held: if the caller is the holder, as AssertHeld expects, its own
// acquisition ordered every write of owner before the read; if another
// goroutine is, the caller is at fault, and the read may race.
func (m *Mutex) assertHeld() {
	if m.st.class == nil {
		return
	}
	g, ok := holds(&m.st)
	if ok {
		return
	}
	if m.mu.TryLock() {
		m.mu.Unlock()
	} else if m.st.owner == 0 {
		return // held, but acquired while checking was off
	}
	reportNotHeld(g, &m.st)
}

// RWMutex is a reader/writer lock that belongs to a [Class]. The zero RWMutex
// is an unlocked plain RWMutex that is neither checked nor counted;
// [RWMutex.Init] gives it a class. An RWMutex must not be copied after first
// use.
//
// Read acquisitions are ordered exactly like write ones: a reader can block
// behind a waiting writer, so a cycle through read holds is still a deadlock
// hazard. For the same reason a goroutine that read-locks an RWMutex it
// already holds is reported as "recursive". While checking is on, a lock
// must be released by the goroutine that acquired it.
type RWMutex struct {
	rw sync.RWMutex
	st lockState

	// readers counts the read holds on held lists, so that RUnlock skips
	// the checker when there are none.
	readers atomic.Int32
	// lastCPU is the CPU of the last acquisition made with statistics
	// on, in either mode (noteCPU), 0 before the first.
	lastCPU atomic.Int32

	// occupancy times the intervals during which rw is read-held: see
	// beginRead. It is 0 while no timed read hold is outstanding.
	occupancy atomic.Uint64
}

// Init sets rw's class and its order key among locks of the same class (see
// the package documentation). A nil class leaves rw unchecked and uncounted.
// Init must be called before rw is first used and not concurrently with any
// other method.
func (rw *RWMutex) Init(c *Class, key uint64) { rw.st.init(c, key) }

// Lock acquires rw for writing, blocking until no reader or writer holds it.
// Violations are reported before blocking, as for [Mutex.Lock].
//
// +checklocksignore: the lock's own implementation; callers' acquisitions
// and releases are what checklocks follows.
func (rw *RWMutex) Lock() {
	f, ok := rw.st.active()
	if !ok {
		rw.rw.Lock()
		return
	}
	var g int64
	if f&modeCheck != 0 {
		g = checkAcquire(&rw.st, false)
	}
	if f&modeStats != 0 {
		rw.st.timedLock(&rw.rw, exclusive)
		rw.noteCPU(exclusive)
	} else {
		rw.rw.Lock()
	}
	rw.st.acquired(f, g)
}

// TryLock acquires rw for writing if it is free and reports whether it did.
// As with [Mutex.TryLock], its order is not checked.
//
// +checklocksignore: the lock's own implementation; callers' acquisitions
// and releases are what checklocks follows.
func (rw *RWMutex) TryLock() bool {
	if !rw.rw.TryLock() {
		return false
	}
	if f, ok := rw.st.active(); ok {
		rw.st.trackTry(f)
	}
	return true
}

// Unlock releases a write hold on rw.
//
// +checklocksignore: the lock's own implementation; callers' acquisitions
// and releases are what checklocks follows.
func (rw *RWMutex) Unlock() {
	if rw.st.owner != 0 || rw.st.since != 0 {
		rw.st.releaseExclusive()
	}
	rw.rw.Unlock()
}

// RLock acquires rw for reading. Violations are reported before blocking.
// Statistics count read acquisitions, contention and wait time, and time the
// intervals during which at least one reader holds rw rather than each read
// hold: a reader's release cannot tell when its own hold began.
//
// +checklocksignore: the lock's own implementation; callers' acquisitions
// and releases are what checklocks follows.
func (rw *RWMutex) RLock() {
	f, ok := rw.st.active()
	if !ok {
		rw.rw.RLock()
		return
	}
	var g int64
	if f&modeCheck != 0 {
		g = checkAcquire(&rw.st, true)
	}
	if f&modeStats != 0 {
		rw.st.timedLock((*readLocker)(&rw.rw), shared)
		rw.noteCPU(shared)
		rw.beginRead()
	} else {
		rw.rw.RLock()
	}
	if g != 0 {
		rw.readers.Add(1)
		pushHeld(g, held{&rw.st, true})
	}
}

// RUnlock releases a read hold on rw.
//
// +checklocksignore: the lock's own implementation; callers' acquisitions
// and releases are what checklocks follows.
func (rw *RWMutex) RUnlock() {
	if rw.readers.Load() != 0 && releaseRead(&rw.st) {
		rw.readers.Add(-1)
	}
	if rw.occupancy.Load() != 0 {
		rw.endRead()
	}
	rw.rw.RUnlock()
}

// AssertHeld reports a "not-held" violation if checking is on, rw has a
// class, and the calling goroutine holds rw neither for reading nor for
// writing. It does nothing otherwise, at the cost of an atomic load, and
// it cannot see holds acquired while checking was off.
func (rw *RWMutex) AssertHeld() {
	if mode.Load()&modeCheck != 0 {
		rw.assertHeld()
	}
}

// assertHeld is AssertHeld with checking on.
func (rw *RWMutex) assertHeld() {
	if rw.st.class == nil {
		return
	}
	if g, ok := holds(&rw.st); !ok {
		reportNotHeld(g, &rw.st)
	}
}

// readLocker presents the read side of a sync.RWMutex as a blocker.
type readLocker sync.RWMutex

func (r *readLocker) Lock()         { (*sync.RWMutex)(r).RLock() }
func (r *readLocker) TryLock() bool { return (*sync.RWMutex)(r).TryRLock() }
