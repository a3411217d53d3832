package lockstat

import (
	"strings"
	"sync"
	"testing"
)

// recorder collects the violations reported during a test.
type recorder struct {
	mu     sync.Mutex
	vs     []Violation
	panics bool // whether the reporter panics after recording, like the default
}

type reportPanic struct{}

// capture turns checking on with a fresh class graph and records violations
// until the test ends.
func capture(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{}
	prevChecking := SetChecking(true)
	ResetGraph()
	prev := SetReporter(func(v Violation) {
		r.mu.Lock()
		r.vs = append(r.vs, v)
		panics := r.panics
		r.mu.Unlock()
		if panics {
			panic(reportPanic{})
		}
	})
	t.Cleanup(func() {
		SetReporter(prev)
		SetChecking(prevChecking)
	})
	return r
}

func (r *recorder) take() []Violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	vs := r.vs
	r.vs = nil
	return vs
}

// want checks that exactly one violation, of the given kind and with a
// message containing every string in parts, was reported since the last
// check, and returns it.
func (r *recorder) want(t *testing.T, kind string, parts ...string) Violation {
	t.Helper()
	vs := r.take()
	if len(vs) != 1 {
		t.Fatalf("got %d violations, want one %q: %+v", len(vs), kind, vs)
	}
	v := vs[0]
	if v.Kind != kind {
		t.Fatalf("got violation %q (%s), want %q", v.Kind, v.Message, kind)
	}
	for _, p := range parts {
		if !strings.Contains(v.Message, p) {
			t.Errorf("message %q does not contain %q", v.Message, p)
		}
	}
	if !strings.HasPrefix(v.Stack, "goroutine ") {
		t.Errorf("violation has no stack: %q", v.Stack)
	}
	return v
}

func (r *recorder) none(t *testing.T) {
	t.Helper()
	if vs := r.take(); len(vs) != 0 {
		t.Fatalf("unexpected violations: %+v", vs)
	}
}

// mutexes returns n mutexes of class c with keys 1..n.
func mutexes(c *Class, n int) []*Mutex {
	ms := make([]*Mutex, n)
	for i := range ms {
		ms[i] = new(Mutex)
		ms[i].Init(c, uint64(i+1))
	}
	return ms
}

// inGoroutine runs f on a new goroutine and waits for it, so that each call
// acts as a different goroutine.
func inGoroutine(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

func lockPair(first, second *Mutex) {
	first.Lock()
	second.Lock()
	second.Unlock()
	first.Unlock()
}

// heldAnywhere reports whether any goroutine's held list has l.
func heldAnywhere(l *lockState) bool {
	for i := range shards {
		sh := &shards[i]
		sh.mu.Lock()
		for _, list := range sh.lists {
			for _, h := range list {
				if h.l == l {
					sh.mu.Unlock()
					return true
				}
			}
		}
		sh.mu.Unlock()
	}
	return false
}

func TestInversionAcrossInstances(t *testing.T) {
	r := capture(t)
	a, b := NewClass("inst.A"), NewClass("inst.B")
	as, bs := mutexes(a, 2), mutexes(b, 2)

	inGoroutine(func() { lockPair(as[0], bs[0]) })
	r.none(t)
	inGoroutine(func() { lockPair(bs[1], as[1]) })
	v := r.want(t, "inversion", `"inst.A" (key 2)`, `"inst.B" (key 2)`, `"inst.A" (key 1) -> "inst.B" (key 1)`)
	if v.OtherStack == "" || v.OtherStack == v.Stack {
		t.Errorf("OtherStack %q should be the first goroutine's stack", v.OtherStack)
	}

	// The same inversion is reported once, whichever side repeats it.
	inGoroutine(func() { lockPair(bs[0], as[0]) })
	inGoroutine(func() { lockPair(as[1], bs[1]) })
	r.none(t)
}

func TestThreeClassCycle(t *testing.T) {
	r := capture(t)
	a, b, c := NewClass("cyc.A"), NewClass("cyc.B"), NewClass("cyc.C")
	ma, mb, mc := mutexes(a, 1)[0], mutexes(b, 1)[0], mutexes(c, 1)[0]

	inGoroutine(func() { lockPair(ma, mb) })
	inGoroutine(func() { lockPair(mb, mc) })
	r.none(t)
	inGoroutine(func() { lockPair(mc, ma) })
	r.want(t, "inversion", `"cyc.A"`, `"cyc.B"`, `"cyc.C"`)
}

func TestReadHoldsAreOrdered(t *testing.T) {
	r := capture(t)
	a, b := NewClass("read.A"), NewClass("read.B")
	var ma Mutex
	var rb RWMutex
	ma.Init(a, 1)
	rb.Init(b, 1)

	inGoroutine(func() {
		ma.Lock()
		rb.RLock()
		rb.RUnlock()
		ma.Unlock()
	})
	inGoroutine(func() {
		rb.RLock()
		ma.Lock()
		ma.Unlock()
		rb.RUnlock()
	})
	r.want(t, "inversion", `"read.A"`, `"read.B"`)
}

func TestSameClassKeys(t *testing.T) {
	r := capture(t)
	p := NewClass("proc")
	ms := mutexes(p, 3)

	ms[0].Lock()
	ms[1].Lock()
	ms[2].Lock()
	ms[2].Unlock()
	ms[1].Unlock()
	ms[0].Unlock()
	r.none(t)

	ms[1].Lock()
	ms[0].Lock()
	ms[0].Unlock()
	ms[1].Unlock()
	r.want(t, "same-class-order", `"proc" (key 1)`, `"proc" (key 2)`)

	z := NewClass("flat")
	var z1, z2 Mutex
	z1.Init(z, 0)
	z2.Init(z, 0)
	z1.Lock()
	z2.Lock()
	z2.Unlock()
	z1.Unlock()
	r.want(t, "same-class-order", `"flat" (key 0)`)
}

func TestRecursive(t *testing.T) {
	r := capture(t)
	c := NewClass("rec")
	var m Mutex
	m.Init(c, 7)

	// A recursive Lock would deadlock once the reporter returned, so make
	// it panic the way the default reporter does.
	r.panics = true
	m.Lock()
	func() {
		defer func() {
			if _, ok := recover().(reportPanic); !ok {
				t.Error("recursive Lock did not reach the reporter")
			}
		}()
		m.Lock()
	}()
	m.Unlock()
	r.want(t, "recursive", `"rec" (key 7)`)
	r.panics = false

	var rw RWMutex
	rw.Init(c, 8)
	rw.RLock()
	rw.RLock()
	r.want(t, "recursive", `"rec" (key 8)`)
	rw.RUnlock()
	rw.RUnlock()
	r.none(t)
	if heldAnywhere(&rw.st) || heldAnywhere(&m.st) {
		t.Error("released locks are still recorded as held")
	}
}

func TestDefaultReporterPanics(t *testing.T) {
	capture(t)
	SetReporter(nil)
	c := NewClass("default")
	var m Mutex
	m.Init(c, 1)
	m.Lock()
	defer m.Unlock()
	defer func() {
		msg, _ := recover().(string)
		for _, want := range []string{"recursive", `"default" (key 1)`, "goroutine ", "TestDefaultReporterPanics"} {
			if !strings.Contains(msg, want) {
				t.Errorf("panic %q does not contain %q", msg, want)
			}
		}
	}()
	m.Lock()
}

func TestUnlockUnheld(t *testing.T) {
	r := capture(t)
	c := NewClass("unheld")
	var m Mutex
	m.Init(c, 1)
	inGoroutine(m.Lock)
	m.Unlock()
	r.want(t, "unlock-unheld", `"unheld" (key 1)`)
	if heldAnywhere(&m.st) {
		t.Error("a lock released by another goroutine is still recorded as held")
	}

	var rw RWMutex
	rw.Init(c, 2)
	inGoroutine(rw.RLock)
	rw.RUnlock()
	r.want(t, "unlock-unheld", `"unheld" (key 2)`)
	if heldAnywhere(&rw.st) {
		t.Error("a read hold released by another goroutine is still recorded as held")
	}
}

func TestUnlockInAnyOrder(t *testing.T) {
	r := capture(t)
	a, b := NewClass("any.A"), NewClass("any.B")
	ma, mb := mutexes(a, 1)[0], mutexes(b, 1)[0]
	ma.Lock()
	mb.Lock()
	ma.Unlock()
	mb.Unlock()
	ma.Lock()
	ma.AssertHeld()
	ma.Unlock()
	r.none(t)
}

func TestTryLock(t *testing.T) {
	r := capture(t)
	a, b := NewClass("try.A"), NewClass("try.B")
	ma, mb := mutexes(a, 1)[0], mutexes(b, 1)[0]

	// Taking a lock out of order with TryLock cannot deadlock.
	mb.Lock()
	if !ma.TryLock() {
		t.Fatal("TryLock of a free lock failed")
	}
	ma.AssertHeld()
	ma.Unlock()
	mb.Unlock()
	r.none(t)

	// But a lock taken with TryLock orders the locks taken after it.
	inGoroutine(func() {
		ma.TryLock()
		mb.Lock()
		mb.Unlock()
		ma.Unlock()
	})
	r.none(t)
	inGoroutine(func() { lockPair(mb, ma) })
	r.want(t, "inversion", `"try.A"`, `"try.B"`)
}

func TestAssertHeld(t *testing.T) {
	r := capture(t)
	c := NewClass("assert")
	var m Mutex
	var rw RWMutex
	m.Init(c, 1)
	rw.Init(c, 2)

	m.AssertHeld()
	r.want(t, "not-held", `"assert" (key 1)`)
	inGoroutine(m.Lock)
	m.AssertHeld()
	r.want(t, "not-held", `"assert" (key 1)`)
	m.Unlock()
	r.want(t, "unlock-unheld")

	rw.RLock()
	rw.AssertHeld()
	rw.RUnlock()
	rw.Lock()
	rw.AssertHeld()
	rw.Unlock()
	r.none(t)
	rw.AssertHeld()
	r.want(t, "not-held", `"assert" (key 2)`)
}

// A Mutex locked while checking was off is untracked: AssertHeld cannot
// tell who holds it and passes, but still reports one that nobody holds.
func TestAssertHeldUntracked(t *testing.T) {
	r := capture(t)
	var m Mutex
	m.Init(NewClass("assert.untracked"), 1)
	SetChecking(false)
	m.Lock()
	SetChecking(true)
	m.AssertHeld()
	r.none(t)
	m.Unlock()
	r.none(t)
	m.AssertHeld()
	r.want(t, "not-held", `"assert.untracked" (key 1)`)
}

func TestConsistentOrderNoFalsePositive(t *testing.T) {
	r := capture(t)
	outer, inner, leaf := NewClass("many.outer"), NewClass("many.inner"), NewClass("many.leaf")
	procs := mutexes(NewClass("many.proc"), 4)
	var shared RWMutex
	shared.Init(inner, 1)

	const goroutines, iterations = 16, 1000
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Go(func() {
			var own, l Mutex
			own.Init(outer, uint64(i))
			l.Init(leaf, 0)
			for j := range iterations {
				own.Lock()
				// Same-class nesting in increasing key order.
				for _, p := range procs[j%2:] {
					p.Lock()
				}
				if j%3 == 0 {
					shared.Lock()
				} else {
					shared.RLock()
				}
				l.Lock()
				l.Unlock()
				if j%3 == 0 {
					shared.Unlock()
				} else {
					shared.RUnlock()
				}
				for _, p := range procs[j%2:] {
					p.Unlock()
				}
				own.Unlock()
			}
		})
	}
	wg.Wait()
	r.none(t)
}
