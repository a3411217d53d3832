package lockstat

import (
	"fmt"
	"sync"
	"testing"
)

func TestRWMutexConcurrentReaders(t *testing.T) {
	r := capture(t)
	var rw RWMutex
	rw.Init(NewClass("readers"), 1)

	const readers = 8
	var holding sync.WaitGroup
	holding.Add(readers)
	release := make(chan struct{})
	var done sync.WaitGroup
	for range readers {
		done.Go(func() {
			rw.RLock()
			holding.Done()
			<-release
			rw.AssertHeld()
			rw.RUnlock()
		})
	}
	holding.Wait() // every reader holds rw at once
	if rw.TryLock() {
		t.Fatal("TryLock succeeded while readers held the lock")
	}
	close(release)
	done.Wait()
	if !rw.TryLock() {
		t.Fatal("TryLock failed after all readers released the lock")
	}
	rw.Unlock()
	r.none(t)
	if rw.readers.Load() != 0 || heldAnywhere(&rw.st) {
		t.Error("released read holds are still recorded")
	}
}

func TestZeroValue(t *testing.T) {
	r := capture(t)
	defer SetStats(SetStats(true))
	var m Mutex
	m.Lock()
	if m.TryLock() {
		t.Fatal("TryLock of a held Mutex succeeded")
	}
	m.AssertHeld()
	m.Unlock()
	if !m.TryLock() {
		t.Fatal("TryLock of a free Mutex failed")
	}
	m.Unlock()

	var rw RWMutex
	rw.RLock()
	rw.RLock() // unchecked: not reported
	rw.RUnlock()
	rw.RUnlock()
	rw.Lock()
	rw.Unlock()
	r.none(t)
}

func TestCheckingOff(t *testing.T) {
	r := capture(t)
	a, b := NewClass("off.A"), NewClass("off.B")
	ma, mb := mutexes(a, 2), mutexes(b, 1)
	var rw RWMutex
	rw.Init(a, 0)

	SetChecking(false)
	if Checking() {
		t.Fatal("Checking() is true after SetChecking(false)")
	}
	lockPair(ma[0], mb[0])
	lockPair(mb[0], ma[0])
	lockPair(ma[1], ma[0])
	rw.RLock()
	rw.RLock()
	rw.AssertHeld()
	rw.RUnlock()
	rw.RUnlock()
	ma[0].AssertHeld()
	inGoroutine(ma[0].Lock)
	ma[0].Unlock()
	r.none(t)

	// Nothing was recorded while off.
	SetChecking(true)
	lockPair(mb[0], ma[0])
	r.none(t)
}

func TestCheckingTurnedOffWhileHeld(t *testing.T) {
	r := capture(t)
	c := NewClass("toggle")
	var m Mutex
	var rw RWMutex
	m.Init(c, 1)
	rw.Init(c, 2)
	m.Lock()
	rw.RLock()
	SetChecking(false)
	rw.RUnlock()
	m.Unlock()
	SetChecking(true)
	if heldAnywhere(&m.st) || heldAnywhere(&rw.st) {
		t.Fatal("locks released with checking off are still recorded as held")
	}
	m.Lock()
	rw.Lock()
	rw.Unlock()
	m.Unlock()
	r.none(t)
}

func TestClasses(t *testing.T) {
	before := len(Classes())
	var names []string
	for i := range 3 {
		names = append(names, fmt.Sprintf("registry.%d", i))
		NewClass(names[i])
	}
	cs := Classes()[before:]
	if len(cs) != len(names) {
		t.Fatalf("got %d new classes, want %d", len(cs), len(names))
	}
	for i, c := range cs {
		if c.Name() != names[i] {
			t.Errorf("class %d is %q, want %q", i, c.Name(), names[i])
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("NewClass(\"\") did not panic")
		}
	}()
	NewClass("")
}
