package lockstat

import (
	"sync"
	"testing"
	"time"
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
	if s.Acquisitions != 10 || s.Contended != 0 || s.WaitTime != 0 {
		t.Errorf("got %+v, want 10 uncontended acquisitions", s)
	}
	if s.HoldTime < 5*time.Millisecond {
		t.Errorf("HoldTime %v is shorter than the 5ms hold", s.HoldTime)
	}
	if ms[0].st.stripe == ms[1].st.stripe {
		t.Error("consecutive locks of a class share a stripe")
	}

	ResetStats()
	if s := c.Stats(); s != (Stats{}) {
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

		m.Lock()
		var wg sync.WaitGroup
		wg.Go(func() {
			m.Lock()
			m.Unlock()
		})
		// Contention is counted before the waiter blocks.
		for c.Stats().Contended == 0 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(2 * time.Millisecond)
		m.Unlock()
		wg.Wait()

		s := c.Stats()
		if s.Acquisitions != 2 || s.Contended != 1 {
			t.Errorf("checking %v: got %+v, want 2 acquisitions, 1 contended", checking, s)
		}
		if s.WaitTime <= 0 || s.HoldTime <= 0 {
			t.Errorf("checking %v: wait and hold times were not recorded: %+v", checking, s)
		}
		SetChecking(prev)
	}
}

func TestStatsRWMutexContention(t *testing.T) {
	withStats(t)
	c := NewClass("stats.rw")
	var rw RWMutex
	rw.Init(c, 1)

	rw.Lock()
	var wg sync.WaitGroup
	wg.Go(func() {
		rw.RLock()
		rw.RUnlock()
	})
	for c.Stats().Contended == 0 {
		time.Sleep(time.Millisecond)
	}
	rw.Unlock()
	wg.Wait()
	if s := c.Stats(); s.Acquisitions != 2 || s.Contended != 1 {
		t.Errorf("got %+v, want 2 acquisitions, 1 contended", s)
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
	if s := c.Stats(); s.Acquisitions != 1 || s.HoldTime != 0 {
		t.Errorf("got %+v, want only the one acquisition made while on", s)
	}
}

func BenchmarkSyncMutex(b *testing.B) {
	var m sync.Mutex
	for b.Loop() {
		m.Lock()
		m.Unlock()
	}
}

func benchmarkMutex(b *testing.B, checking, stats bool) {
	defer SetChecking(SetChecking(checking))
	defer SetStats(SetStats(stats))
	var m Mutex
	m.Init(NewClass("bench"), 1)
	for b.Loop() {
		m.Lock()
		m.Unlock()
	}
}

func BenchmarkMutex(b *testing.B)         { benchmarkMutex(b, false, false) }
func BenchmarkMutexStats(b *testing.B)    { benchmarkMutex(b, false, true) }
func BenchmarkMutexChecking(b *testing.B) { benchmarkMutex(b, true, false) }
