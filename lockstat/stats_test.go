package lockstat

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// withStats turns statistics on with zeroed counters until the test ends.
func withStats(t *testing.T) {
	t.Helper()
	prev := SetStats(true)
	ResetStats()
	t.Cleanup(func() {
		SetStats(prev)
		ResetStats()
	})
}

// blockWaiters starts n goroutines that acquire and release a lock the
// caller holds, and returns once they are all parked with the given wait
// reason, as a goroutine dump names it (such as "sync.Mutex.Lock"), so
// that their timed wait has begun. The function it returns waits for them
// to finish.
func blockWaiters(t *testing.T, n int, reason string, acquire, release func()) (wait func()) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			acquire()
			release()
		})
	}
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(10 * time.Second)
	for {
		blocked := 0
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			header, _, _ := strings.Cut(g, "\n")
			if strings.Contains(header, "["+reason) && strings.Contains(g, "lockstat.blockWaiters") {
				blocked++
			}
		}
		if blocked >= n {
			return wg.Wait
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines blocked in %s, want %d", blocked, reason, n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// checkTiming checks what holds for any consistent Timing of n durations,
// each at least atLeast: the histogram counts n, Min and Max fall in its
// lowest and highest nonempty buckets, and the total lies between n·Min
// and n·Max.
func checkTiming(t *testing.T, what string, tm Timing, n uint64, atLeast time.Duration) {
	t.Helper()
	if got := tm.Count(); got != n {
		t.Fatalf("%s: %d durations, want %d: %+v", what, got, n, tm)
	}
	if n == 0 {
		if tm != (Timing{}) {
			t.Errorf("%s: no durations but %+v", what, tm)
		}
		return
	}
	if tm.Min < atLeast || tm.Max < tm.Min {
		t.Errorf("%s: min %v, max %v; want %v <= min <= max", what, tm.Min, tm.Max, atLeast)
	}
	lowest, highest := -1, -1
	for i, c := range tm.Hist {
		if c != 0 {
			if lowest < 0 {
				lowest = i
			}
			highest = i
		}
	}
	if lowest != bucket(uint64(tm.Min)) || highest != bucket(uint64(tm.Max)) {
		t.Errorf("%s: nonempty buckets %d..%d, but min %v is in %d and max %v in %d",
			what, lowest, highest, tm.Min, bucket(uint64(tm.Min)), tm.Max, bucket(uint64(tm.Max)))
	}
	if tm.Total < time.Duration(n)*tm.Min || tm.Total > time.Duration(n)*tm.Max {
		t.Errorf("%s: total %v is outside %d×[%v, %v]", what, tm.Total, n, tm.Min, tm.Max)
	}
	if avg := tm.Avg(); avg != tm.Total/time.Duration(n) {
		t.Errorf("%s: avg %v, want %v", what, avg, tm.Total/time.Duration(n))
	}
}

// ownHold returns s's own exclusive hold total.
func ownHold(s *lockState) time.Duration { return time.Duration(s.held & heldTotalMask) }

// TestStripesSpread checks that the locks of a class, laid out as objects
// of one size are, spread over most stripes.
func TestStripesSpread(t *testing.T) {
	c := NewClass("stats.spread")
	for _, size := range []int{1, 7, 64} { // Mutexes per object
		ms := make([]Mutex, 2*numStripes*size)
		used := map[*stripe]bool{}
		for i := 0; i < len(ms); i += size {
			ms[i].Init(c, 0)
			used[ms[i].st.slot()] = true
		}
		if len(used) < numStripes/2 {
			t.Errorf("locks %d Mutexes apart use %d of %d stripes", size, len(used), numStripes)
		}
	}
}

// TestLockSize guards the memory a lock adds to every object it guards:
// statistics must not grow lockState beyond its five words.
func TestLockSize(t *testing.T) {
	if got, want := unsafe.Sizeof(lockState{}), 5*unsafe.Sizeof(uintptr(0)); got != want {
		t.Errorf("lockState is %d bytes, want %d", got, want)
	}
}

func TestBucket(t *testing.T) {
	for _, c := range []struct {
		d    uint64
		want int
	}{
		{0, 0}, {1, 0}, {2, 1}, {3, 1}, {4, 2}, {1023, 9}, {1024, 10},
		{1<<39 - 1, 38}, {1 << 39, 39}, {1 << 50, 39}, {^uint64(0), 39},
	} {
		if got := bucket(c.d); got != c.want {
			t.Errorf("bucket(%d) = %d, want %d", c.d, got, c.want)
		}
	}
}

// TestTimingSummedOverStripes records chosen durations on different
// stripes and checks the class's summary.
func TestTimingSummedOverStripes(t *testing.T) {
	withStats(t)
	c := NewClass("stats.stripes")
	for i, d := range []uint64{1000, 3, 0, 70000, 5} {
		c.stripes[i*7%numStripes].modes[exclusive].wait.add(d)
	}
	w := c.Stats().Write.Wait
	want := Timing{Min: 0, Max: 70000, Total: 71008}
	want.Hist[0], want.Hist[1], want.Hist[2], want.Hist[9], want.Hist[16] = 1, 1, 1, 1, 1
	if w != want {
		t.Errorf("got %+v\nwant %+v", w, want)
	}
	if w.Count() != 5 || w.Avg() != 71008/5 {
		t.Errorf("count %d, avg %v", w.Count(), w.Avg())
	}
}

func TestStatsCount(t *testing.T) {
	withStats(t)
	c := NewClass("stats.count")
	ms := mutexes(c, 4)
	for _, m := range ms {
		m.Lock()
		m.Unlock()
		if !m.TryLock() {
			t.Fatal("TryLock of a free lock failed")
		}
		m.Unlock()
	}
	var rw RWMutex
	rw.Init(c, 10)
	rw.RLock()
	rw.RUnlock()
	rw.Lock()
	time.Sleep(5 * time.Millisecond)
	rw.Unlock()

	s := c.Stats()
	if s.Name != "stats.count" || s.Write.Acquisitions != 9 || s.Read.Acquisitions != 1 ||
		s.Write.Contentions != 0 || s.Read.Contentions != 0 {
		t.Errorf("got %+v, want 9 exclusive and 1 read uncontended acquisitions", s)
	}
	checkTiming(t, "write wait", s.Write.Wait, 0, 0)
	checkTiming(t, "read wait", s.Read.Wait, 0, 0)
	checkTiming(t, "write hold", s.Write.Hold, 9, 0)
	checkTiming(t, "read hold", s.Read.Hold, 1, 0)
	if s.Write.Hold.Max < 5*time.Millisecond || s.HottestHold < 5*time.Millisecond {
		t.Errorf("the 5ms hold is missing: max %v, hottest %v", s.Write.Hold.Max, s.HottestHold)
	}

	ResetStats()
	if s := c.Stats(); s != (ClassStats{Name: c.name, class: c}) {
		t.Errorf("after ResetStats got %+v", s)
	}
}

func TestStatsContention(t *testing.T) {
	withStats(t)
	for _, checking := range []bool{false, true} {
		prev := SetChecking(checking)
		c := NewClass("stats.contended")
		var m Mutex
		m.Init(c, 1)

		const waiters, sleep = 3, 5 * time.Millisecond
		m.Lock()
		done := blockWaiters(t, waiters, "sync.Mutex.Lock", m.Lock, m.Unlock)
		if got := c.Stats().Write.Contentions; got != waiters {
			t.Errorf("checking %v: %d contentions while %d wait", checking, got, waiters)
		}
		time.Sleep(sleep) // within every waiter's wait
		m.Unlock()
		done()

		s := c.Stats()
		if s.Write.Acquisitions != waiters+1 || s.Write.Contentions != waiters {
			t.Errorf("checking %v: got %+v, want %d acquisitions, %d contended", checking, s, waiters+1, waiters)
		}
		checkTiming(t, "wait", s.Write.Wait, waiters, sleep)
		checkTiming(t, "hold", s.Write.Hold, waiters+1, 0)
		if s.Write.Hold.Max < sleep {
			t.Errorf("checking %v: hold max %v is shorter than the held sleep", checking, s.Write.Hold.Max)
		}
		SetChecking(prev)
	}
}

func TestStatsRWMutexContention(t *testing.T) {
	withStats(t)
	c := NewClass("stats.rw")
	var rw RWMutex
	rw.Init(c, 1)
	const sleep = 3 * time.Millisecond

	// A reader waits behind a writer.
	rw.Lock()
	done := blockWaiters(t, 1, "sync.RWMutex.RLock", rw.RLock, rw.RUnlock)
	time.Sleep(sleep)
	rw.Unlock()
	done()
	s := c.Stats()
	if s.Write.Acquisitions != 1 || s.Write.Contentions != 0 || s.Read.Acquisitions != 1 || s.Read.Contentions != 1 {
		t.Errorf("got %+v, want a write and a contended read acquisition", s)
	}
	checkTiming(t, "read wait", s.Read.Wait, 1, sleep)

	// A writer waits behind a reader: the wait and the read-occupied
	// interval both span the sleep.
	ResetStats()
	rw.RLock()
	done = blockWaiters(t, 1, "sync.RWMutex.Lock", rw.Lock, rw.Unlock)
	time.Sleep(sleep)
	rw.RUnlock()
	done()
	s = c.Stats()
	if s.Write.Acquisitions != 1 || s.Write.Contentions != 1 || s.Read.Acquisitions != 1 || s.Read.Contentions != 0 {
		t.Errorf("got %+v, want a contended write and a read acquisition", s)
	}
	checkTiming(t, "write wait", s.Write.Wait, 1, sleep)
	checkTiming(t, "read hold", s.Read.Hold, 1, sleep)
}

// TestReadOccupancy checks that overlapping read holds make one occupied
// interval and separate ones separate intervals.
func TestReadOccupancy(t *testing.T) {
	withStats(t)
	defer SetChecking(SetChecking(false)) // one goroutine holds rw twice
	c := NewClass("stats.occupancy")
	var rw RWMutex
	rw.Init(c, 1)
	const sleep = 2 * time.Millisecond

	rw.RLock()
	time.Sleep(sleep)
	rw.RLock()
	rw.RUnlock()
	time.Sleep(sleep)
	rw.RUnlock()
	s := c.Stats()
	if s.Read.Acquisitions != 2 {
		t.Errorf("%d read acquisitions, want 2", s.Read.Acquisitions)
	}
	checkTiming(t, "one interval", s.Read.Hold, 1, 2*sleep)

	for range 2 {
		rw.RLock()
		rw.RUnlock()
	}
	checkTiming(t, "three intervals", c.Stats().Read.Hold, 3, 0)
	if rw.occupancy.Load() != 0 {
		t.Errorf("occupancy %#x after every reader left", rw.occupancy.Load())
	}
}

// TestReadOccupancyToggled checks that read holds outliving a change of the
// statistics setting leave no interval open.
func TestReadOccupancyToggled(t *testing.T) {
	withStats(t)
	defer SetChecking(SetChecking(false))
	class := NewClass("stats.toggled")
	var rw RWMutex
	rw.Init(class, 1)

	// Timed, then untimed: the interval ends with statistics off and is
	// dropped, as an exclusive hold ending then is. Untimed, then timed:
	// the untimed release closes the interval early, once.
	for _, c := range []struct {
		firstTimed bool
		intervals  uint64
	}{{true, 0}, {false, 1}} {
		SetStats(c.firstTimed)
		rw.RLock()
		SetStats(!c.firstTimed)
		rw.RLock()
		rw.RUnlock()
		rw.RUnlock()
		n := class.Stats().Read.Hold.Count()
		if n != c.intervals || rw.occupancy.Load() != 0 {
			t.Errorf("first hold timed %v: %d intervals recorded, want %d; occupancy %#x",
				c.firstTimed, n, c.intervals, rw.occupancy.Load())
		}
	}
}

// TestHottestHold checks that HottestHold is the largest of the locks' own
// totals and restarts at a reset.
func TestHottestHold(t *testing.T) {
	withStats(t)
	c := NewClass("stats.hottest")
	ms := mutexes(c, 3)
	const sleep = 2 * time.Millisecond
	for i, m := range ms {
		for range 3 - i {
			m.Lock()
			time.Sleep(sleep)
			m.Unlock()
		}
	}
	s := c.Stats()
	var sum, largest time.Duration
	for _, m := range ms {
		sum += ownHold(&m.st)
		largest = max(largest, ownHold(&m.st))
	}
	if s.HottestHold != largest || s.HottestHold < 3*sleep || s.HottestHold >= sum {
		t.Errorf("hottest %v; want the largest lock total %v, at least %v and under the sum %v",
			s.HottestHold, largest, 3*sleep, sum)
	}
	if s.Write.Hold.Total != sum {
		t.Errorf("class hold total %v, want the locks' sum %v", s.Write.Hold.Total, sum)
	}

	// After a reset only the new hold counts, even on a lock held before.
	ResetStats()
	ms[2].Lock()
	ms[2].Unlock()
	s = c.Stats()
	if s.HottestHold != s.Write.Hold.Total || ownHold(&ms[2].st) != s.HottestHold {
		t.Errorf("after a reset: hottest %v, lock total %v, class total %v",
			s.HottestHold, ownHold(&ms[2].st), s.Write.Hold.Total)
	}
}

// TestHottestHoldConcurrent races releases of several locks of one class
// and checks that the class keeps the largest lock total.
func TestHottestHoldConcurrent(t *testing.T) {
	withStats(t)
	defer SetChecking(SetChecking(false)) // checking costs microseconds a lock
	c := NewClass("stats.hottest.concurrent")
	ms := mutexes(c, 4)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 500 {
				m := ms[(w+i)%len(ms)]
				m.Lock()
				m.Unlock()
			}
		})
	}
	wg.Wait()
	var largest time.Duration
	for _, m := range ms {
		largest = max(largest, ownHold(&m.st))
	}
	if s := c.Stats(); s.HottestHold != largest || s.Write.Hold.Count() != 8*500 {
		t.Errorf("hottest %v, want %v; %d holds, want %d", s.HottestHold, largest, s.Write.Hold.Count(), 8*500)
	}
}

func TestSinceAndDelta(t *testing.T) {
	withStats(t)
	busy, idle := NewClass("stats.phase.busy"), NewClass("stats.phase.idle")
	mb, mi := mutexes(busy, 1)[0], mutexes(idle, 1)[0]
	for range 3 {
		mb.Lock()
		mb.Unlock()
	}
	mi.Lock()
	mi.Unlock()
	prev := Snapshot()
	for range 2 {
		mb.Lock()
		mb.Unlock()
	}
	var phase []ClassStats
	for _, s := range Since(prev) {
		if s.Name == busy.name || s.Name == idle.name {
			phase = append(phase, s)
		}
	}
	if len(phase) != 1 || phase[0].Name != busy.name {
		t.Fatalf("got %+v, want only %q", phase, busy.name)
	}
	d := phase[0]
	if d.Write.Acquisitions != 2 || d.Write.Contentions != 0 {
		t.Errorf("phase: %+v, want 2 acquisitions", d)
	}
	checkTiming(t, "phase hold", d.Write.Hold, 2, 0)
	if d.HottestHold != d.Write.Hold.Total {
		t.Errorf("phase hottest %v, want the one lock's phase total %v", d.HottestHold, d.Write.Hold.Total)
	}
}

// TestTimingDelta checks Delta's extremes on chosen durations.
func TestTimingDelta(t *testing.T) {
	c := NewClass("stats.delta")
	wait := &c.stripes[0].modes[exclusive].wait
	read := func() Timing { return c.Stats().Write.Wait }
	wait.add(100)
	wait.add(1000)
	prev := read()

	// A new minimum is exact; the unchanged maximum is bounded by the
	// top of the new duration's bucket [32, 64).
	wait.add(50)
	d := read().delta(prev)
	if d.Min != 50 || d.Max != 63 || d.Total != 50 || d.Count() != 1 {
		t.Errorf("got %+v, want min 50, max 63, total 50", d)
	}

	// A new maximum is exact; the unchanged minimum is bounded by the
	// bottom of the new duration's bucket [4096, 8192).
	prev = read()
	wait.add(5000)
	if d := read().delta(prev); d.Min != 4096 || d.Max != 5000 || d.Count() != 1 {
		t.Errorf("got %+v, want min 4096, max 5000", d)
	}

	if d := read().delta(read()); d != (Timing{}) {
		t.Errorf("no activity: got %+v", d)
	}
}

func TestStatsOff(t *testing.T) {
	withStats(t)
	SetStats(false)
	c := NewClass("stats.off")
	var m Mutex
	var rw RWMutex
	m.Init(c, 1)
	rw.Init(c, 2)
	m.Lock()
	m.Unlock()
	m.TryLock()
	m.Unlock()
	rw.RLock()
	rw.RUnlock()
	rw.Lock()
	rw.Unlock()

	// A hold that began with statistics on but ends after they are turned
	// off is not counted either.
	SetStats(true)
	m.Lock()
	SetStats(false)
	m.Unlock()
	s := c.Stats()
	if s.Write.Acquisitions != 1 || s.Write.Hold.Count() != 0 || s.HottestHold != 0 || s.Read.Acquisitions != 0 {
		t.Errorf("got %+v, want only the one acquisition made while on", s)
	}
	if ownHold(&m.st) != 0 {
		t.Errorf("lock total %v, want 0", ownHold(&m.st))
	}
}

// TestBounces: an RWMutex acquisition on another CPU than the lock's
// previous one counts as a bounce, in either mode, a read no less than a
// write; acquisitions on the CPU of the last one do not.
func TestBounces(t *testing.T) {
	withStats(t)
	on := int32(1)
	prev := cpu
	cpu = func() int32 { return on }
	t.Cleanup(func() { cpu = prev })
	c := NewClass("stats.bounces")
	var rw RWMutex
	rw.Init(c, 1)
	read := func(at int32) {
		on = at
		rw.RLock()
		rw.RUnlock()
	}
	read(1) // the first acquisition has nothing to bounce from
	read(1)
	read(2)
	read(1)
	on = 2
	rw.Lock()
	rw.Unlock()
	read(2)
	s := c.Stats()
	if s.Read.Bounces != 2 || s.Write.Bounces != 1 {
		t.Fatalf("bounces: %d read, %d write; want 2 and 1", s.Read.Bounces, s.Write.Bounces)
	}
	if s.Read.Acquisitions != 5 {
		t.Fatalf("%d read acquisitions, want 5", s.Read.Acquisitions)
	}
	before := s
	read(1)
	if d := c.Stats().Delta(before); d.Read.Bounces != 1 {
		t.Fatalf("Delta counts %d bounces, want 1", d.Read.Bounces)
	}
}

// TestBouncesOnRealCPUs: the runtime's CPU ids are within GOMAXPROCS,
// and readers on several goroutines count at most one bounce per
// acquisition.
func TestBouncesOnRealCPUs(t *testing.T) {
	withStats(t)
	c := NewClass("stats.realbounces")
	var rw RWMutex
	rw.Init(c, 1)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				rw.RLock()
				rw.RUnlock()
			}
		})
	}
	wg.Wait()
	if s := c.Stats(); s.Read.Bounces > s.Read.Acquisitions {
		t.Fatalf("%d bounces in %d acquisitions", s.Read.Bounces, s.Read.Acquisitions)
	}
	if here := cpu(); here < 1 || here > int32(runtime.GOMAXPROCS(0)) {
		t.Fatalf("cpu() = %d outside 1..GOMAXPROCS", here)
	}
}
