package lockstat

import (
	"sync"
	"testing"
)

func BenchmarkSyncMutex(b *testing.B) {
	var m sync.Mutex
	for b.Loop() {
		m.Lock()
		m.Unlock()
	}
}

// setModes sets checking and statistics until b ends.
func setModes(b *testing.B, checking, stats bool) {
	prevChecking, prevStats := SetChecking(checking), SetStats(stats)
	b.Cleanup(func() {
		SetChecking(prevChecking)
		SetStats(prevStats)
	})
}

// benchmarkLock measures an uncontended acquisition and release of a
// Mutex or, if read, of an RWMutex for reading.
func benchmarkLock(b *testing.B, read, checking, stats bool) {
	setModes(b, checking, stats)
	c := NewClass("bench")
	var m Mutex
	var rw RWMutex
	m.Init(c, 1)
	rw.Init(c, 2)
	if read {
		for b.Loop() {
			rw.RLock()
			rw.RUnlock()
		}
		return
	}
	for b.Loop() {
		m.Lock()
		m.Unlock()
	}
}

func BenchmarkMutex(b *testing.B)            { benchmarkLock(b, false, false, false) }
func BenchmarkMutexStats(b *testing.B)       { benchmarkLock(b, false, false, true) }
func BenchmarkMutexChecking(b *testing.B)    { benchmarkLock(b, false, true, false) }
func BenchmarkRWMutexRead(b *testing.B)      { benchmarkLock(b, true, false, false) }
func BenchmarkRWMutexReadStats(b *testing.B) { benchmarkLock(b, true, false, true) }
