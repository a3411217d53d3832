package kernel

import (
	"flag"
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The skeleton every stress test shares. A stress test races calls on
// more goroutines than there are cores, released together in a random
// order, over and over: in rounds, each of which leaves the table as it
// found it, or as movers racing walkers until the movers are done. Its
// random choices come from a seed that -stress.seed reproduces (goroutine
// interleavings still vary between runs), and it ends with a clean-up that
// checks the table.

var (
	stressDuration = flag.Duration("stress.duration", 2*time.Second,
		"how long TestStressRandom issues calls before cleaning up, and the kill(-1) tests race at most")
	stressWorkers = flag.Int("stress.workers", 16, "goroutines TestStressRandom runs")
	stressSeed    = flag.Uint64("stress.seed", 0, "seed of the random choices (0: from the clock)")
	stressIters   = flag.Int("stress.iters", 0, "rounds of each stress test (0: its default)")
)

// stress is a kernel under a stress test.
type stress struct {
	*env
	seed uint64
	rng  *rand.Rand
	// checkEvery is how many rounds pass between two checks of the
	// invariants (1: after every round; 0: never, for a test whose rounds
	// check them mid-race).
	checkEvery int
	// atMost, when set, ends the rounds once that much time has passed,
	// after 8 rounds at least.
	atMost time.Duration

	mu       sync.Mutex
	outcomes map[string]int
}

// newStress makes a stress test's kernel. Its random choices are those of
// the seed's stream number stream: tests differ in it, so that no two
// make the same choices.
func newStress(t *testing.T, stream uint64, cfg Config) *stress {
	t.Helper()
	seed := *stressSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -stress.seed=%d)", seed, seed)
	return &stress{env: newEnv(t, cfg), seed: seed, rng: rand.New(rand.NewPCG(seed, stream)),
		checkEvery: 16, outcomes: map[string]int{}}
}

// iterations is how many rounds a test whose default is def runs:
// -stress.iters if set, a quarter of def with -short.
func iterations(def int) int {
	switch {
	case *stressIters > 0:
		return *stressIters
	case testing.Short():
		return max(1, def/4)
	}
	return def
}

// rounds yields the numbers of a test's rounds, iterations(def) of them
// (fewer once atMost has passed). After each round it checks that the
// round left nothing behind, no child of init and no pid but init's, and
// every checkEvery rounds the invariants; a failure is reported with the
// number of the round it happened in.
func (s *stress) rounds(def int) iter.Seq[int] {
	return func(yield func(int) bool) {
		start := time.Now()
		for i := range iterations(def) {
			if s.atMost > 0 && i >= 8 && time.Since(start) >= s.atMost {
				return
			}
			if !s.round(i, yield) {
				return
			}
		}
	}
}

func (s *stress) round(i int, yield func(int) bool) bool {
	failedBefore := s.t.Failed()
	defer func() {
		if !failedBefore && s.t.Failed() {
			s.t.Logf("the failure above happened in round %d (seed %d)", i, s.seed)
		}
	}()
	if !yield(i) {
		return false
	}
	s.wantWait(s.init, -1, unix.WNOHANG|unix.WALL, unix.ECHILD)
	s.wantOnlyInit()
	if s.checkEvery > 0 && i%s.checkEvery == 0 {
		s.check()
	}
	return true
}

// concurrently runs each f on a goroutine of its own, releases them
// together after a random number of yields each (so that every order of
// arrival occurs, even with GOMAXPROCS=1), and waits for all of them.
func (s *stress) concurrently(fs ...func()) {
	s.t.Helper()
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, f := range fs {
		yields := s.rng.IntN(4)
		wg.Go(func() {
			<-start
			for range yields {
				runtime.Gosched()
			}
			f()
		})
	}
	close(start)
	waitOrDump(s.t, "concurrent calls", wg.Wait)
}

// whileMoving runs each mover once and each walker over and over, all on
// goroutines of their own, until every mover has returned; it returns how
// many walks were made. A walker's error fails the test and ends that
// walker.
func (s *stress) whileMoving(movers []func(), walkers []func() error) int64 {
	s.t.Helper()
	var stop atomic.Bool
	var walks atomic.Int64
	var moving, walking sync.WaitGroup
	for _, m := range movers {
		moving.Go(m)
	}
	for _, w := range walkers {
		walking.Go(func() {
			for !stop.Load() {
				if err := w(); err != nil {
					s.t.Error(err)
					return
				}
				walks.Add(1)
				runtime.Gosched()
			}
		})
	}
	waitOrDump(s.t, "movers", moving.Wait)
	stop.Store(true)
	waitOrDump(s.t, "walkers", walking.Wait)
	return walks.Load()
}

// subRand derives a source of random choices for one goroutine
// (math/rand/v2's Rand is not safe for concurrent use).
func (s *stress) subRand() *rand.Rand { return rand.New(rand.NewPCG(s.rng.Uint64(), s.rng.Uint64())) }

// count counts an outcome of a race, from any goroutine.
func (s *stress) count(format string, args ...any) {
	s.mu.Lock()
	s.outcomes[fmt.Sprintf(format, args...)]++
	s.mu.Unlock()
}

// end logs the outcomes counted and cleans up: every task exits and is
// reaped, and the table must be consistent and hold init alone.
func (s *stress) end() {
	s.t.Helper()
	for _, key := range slices.Sorted(maps.Keys(s.outcomes)) {
		s.t.Logf("%6d × %s", s.outcomes[key], key)
	}
	s.finish()
}

// atEachGOMAXPROCS runs test as a subtest under GOMAXPROCS 1, 2 and 4:
// races that one processor never shows and others that many never do.
func atEachGOMAXPROCS(t *testing.T, test func(t *testing.T)) {
	for _, procs := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			test(t)
		})
	}
}
