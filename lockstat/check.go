package lockstat

import (
	"fmt"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Feature bits of mode. They share one word so that a lock operation with
// everything off costs a single atomic load.
const (
	modeCheck uint32 = 1 << iota
	modeStats
)

var mode atomic.Uint32

func init() {
	mainModule := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		mainModule = info.Main.Path
	}
	if checkingByDefault(testing.Testing(), os.Getenv("TASKLIST_LOCKCHECK"), mainModule,
		reflect.TypeFor[Mutex]().PkgPath()) {
		mode.Store(modeCheck)
	}
}

// checkingByDefault says whether checking starts on: in the test binaries of
// the module this package belongs to (its import path is pkgPath, the
// binary's main module mainModule), unless env, the value of
// TASKLIST_LOCKCHECK, is "0"; elsewhere only when env is "1". Checking
// costs a fork a couple of hundred times its price, which another module's
// tests should pay only when they ask to.
func checkingByDefault(inTest bool, env, mainModule, pkgPath string) bool {
	switch env {
	case "0":
		return false
	case "1":
		return true
	}
	return inTest && mainModule != "" && strings.HasPrefix(pkgPath, mainModule+"/")
}

// SetChecking turns lock-order checking on or off for all locks and returns
// the previous setting. Checking starts on in the test binaries of
// tasklist's own packages, unless the environment variable
// TASKLIST_LOCKCHECK is "0"; it starts off in any other program, another
// module's tests included, unless TASKLIST_LOCKCHECK is "1". A module that
// embeds tasklist turns it on for its tests with TASKLIST_LOCKCHECK=1 or by
// calling SetChecking(true) in its TestMain.
//
// Turning checking off never disturbs locks acquired while it was on: their
// release still clears the checker's record of them. Turning it on does not
// retroactively track locks already held; a lock acquired while checking was
// off is neither ordered nor reported when released, except that releasing
// such a read hold on an RWMutex that also has checked readers is reported as
// "unlock-unheld". Switch checking on while no classed lock is held.
func SetChecking(on bool) (previous bool) { return setMode(modeCheck, on) }

// Checking reports whether lock-order checking is on.
func Checking() bool { return mode.Load()&modeCheck != 0 }

func setMode(bit uint32, on bool) bool {
	var old uint32
	if on {
		old = mode.Or(bit)
	} else {
		old = mode.And(^bit)
	}
	return old&bit != 0
}

// Violation describes a locking rule broken by the calling goroutine, or a
// lock order that could deadlock against one recorded earlier.
type Violation struct {
	// Kind is one of:
	//   - "inversion": the acquisition closes a cycle in the recorded class
	//     order, so goroutines repeating the recorded acquisitions could
	//     deadlock;
	//   - "same-class-order": two locks of one class nested other than in
	//     strictly increasing nonzero key order;
	//   - "recursive": a goroutine acquires a lock it already holds;
	//   - "unlock-unheld": a goroutine releases a lock it does not hold;
	//   - "not-held": AssertHeld failed.
	Kind string
	// Message names the classes and keys of the locks involved.
	Message string
	// Stack is the stack of the goroutine that broke the rule.
	Stack string
	// OtherStack, for an inversion, is the stack that first recorded the
	// opposite order; it is empty for the other kinds.
	OtherStack string
}

var reporter atomic.Pointer[func(Violation)]

// SetReporter makes f receive every violation found from now on and returns
// the previous reporter. A nil f restores the default reporter, which panics
// with a message containing the violation's Message, Stack and OtherStack.
// The reporter runs on the offending goroutine before the lock operation
// takes effect: if it panics, the lock is left as it was; if it returns, the
// operation proceeds (and a recursive Lock then deadlocks). It is called with
// no lock of this package held and may be called concurrently.
func SetReporter(f func(Violation)) (previous func(Violation)) {
	var p *func(Violation)
	if f != nil {
		p = &f
	}
	if old := reporter.Swap(p); old != nil {
		return *old
	}
	return panicReport
}

func report(v Violation) {
	if f := reporter.Load(); f != nil {
		(*f)(v)
		return
	}
	panicReport(v)
}

func panicReport(v Violation) {
	panic(fmt.Sprintf("lockstat: %s: %s\n\ngoroutine stack:\n%s\nstack of the earlier acquisition:\n%s",
		v.Kind, v.Message, v.Stack, v.OtherStack))
}

// held is one entry of a goroutine's held list.
type held struct {
	l    *lockState
	read bool
}

// Held lists, keyed by goroutine id. A list is normally touched only by its
// goroutine; the shard lock lets an unlock-unheld repair reach another's.
const numShards = 64

var shards [numShards]struct {
	mu    sync.Mutex
	lists map[int64][]held
}

func pushHeld(g int64, h held) {
	sh := &shards[uint64(g)%numShards]
	sh.mu.Lock()
	if sh.lists == nil {
		sh.lists = make(map[int64][]held)
	}
	sh.lists[g] = append(sh.lists[g], h)
	sh.mu.Unlock()
}

// removeHeld drops g's most recent hold of l in the given mode and reports
// whether there was one. Empty lists are deleted because goroutine ids are
// never reused.
func removeHeld(g int64, l *lockState, read bool) bool {
	sh := &shards[uint64(g)%numShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	list := sh.lists[g]
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].l == l && list[i].read == read {
			list = append(list[:i], list[i+1:]...)
			if len(list) == 0 {
				delete(sh.lists, g)
			} else {
				sh.lists[g] = list
			}
			return true
		}
	}
	return false
}

// removeAnywhere drops a hold of l in the given mode from whichever
// goroutine's list has one, so that a lock released by the wrong goroutine
// does not stay recorded as held.
func removeAnywhere(l *lockState, read bool) bool {
	for i := range shards {
		sh := &shards[i]
		sh.mu.Lock()
		var owner int64
		for g, list := range sh.lists {
			for _, h := range list {
				if h.l == l && h.read == read {
					owner = g
				}
			}
		}
		sh.mu.Unlock()
		if owner != 0 && removeHeld(owner, l, read) {
			return true
		}
	}
	return false
}

// heldBy appends g's held list to buf.
func heldBy(g int64, buf []held) []held {
	sh := &shards[uint64(g)%numShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return append(buf, sh.lists[g]...)
}

// goid returns the calling goroutine's id, which the runtime exposes only in
// the "goroutine N [" header of a stack trace.
func goid() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = b[len("goroutine "):]
	var id int64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + int64(c-'0')
	}
	return id
}

func stack() string {
	buf := make([]byte, 4096)
	for {
		n := runtime.Stack(buf, false)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

func describe(l *lockState) string { return describeKey(l.class, l.key) }

func describeKey(c *Class, key uint64) string { return fmt.Sprintf("%q (key %d)", c.name, key) }

// checkAcquire reports the violations that acquiring l would cause for the
// calling goroutine, records the class orders it establishes, and returns
// the goroutine's id.
func checkAcquire(l *lockState, read bool) int64 {
	g := goid()
	verb := "acquires"
	if read {
		verb = "read-acquires"
	}
	var buf [16]held
	var vs []Violation
	var stk string // the current stack, captured only if needed
	for _, h := range heldBy(g, buf[:0]) {
		switch {
		case h.l == l:
			vs = append(vs, Violation{Kind: "recursive",
				Message: fmt.Sprintf("goroutine %d %s %s, which it already holds", g, verb, describe(l))})
		case h.l.class == l.class:
			if h.l.key == 0 || l.key <= h.l.key {
				vs = append(vs, Violation{Kind: "same-class-order",
					Message: fmt.Sprintf("goroutine %d %s %s while holding %s; locks of one class nest only in strictly increasing nonzero key order",
						g, verb, describe(l), describe(h.l))})
			}
		default:
			if v, ok := addEdge(g, h.l, l, &stk); ok {
				vs = append(vs, v)
			}
		}
	}
	for _, v := range vs {
		if stk == "" {
			stk = stack()
		}
		v.Stack = stk
		report(v)
	}
	return g
}

// The class order graph: an edge A→B means some goroutine acquired a lock of
// class B while holding one of class A.
var (
	graphMu  sync.RWMutex
	reported map[[2]int]bool // class pairs already reported as inverted; guarded by graphMu
)

// edge records the first acquisition that established an order.
type edge struct {
	from, to       *Class
	fromKey, toKey uint64
	stack          string
}

// addEdge records that goroutine g acquires to while holding from, whose
// classes differ. If the reverse order is already implied by the graph and
// this class pair has not been reported yet, it returns the inversion.
func addEdge(g int64, from, to *lockState, stk *string) (Violation, bool) {
	a, b := from.class, to.class
	graphMu.RLock()
	known := a.after[b] != nil
	graphMu.RUnlock()
	if known {
		return Violation{}, false
	}
	if *stk == "" {
		*stk = stack()
	}
	graphMu.Lock()
	defer graphMu.Unlock()
	if a.after[b] != nil {
		return Violation{}, false
	}
	path := findPath(b, a)
	if a.after == nil {
		a.after = make(map[*Class]*edge)
	}
	a.after[b] = &edge{from: a, to: b, fromKey: from.key, toKey: to.key, stack: *stk}
	if path == nil {
		return Violation{}, false
	}
	pair := [2]int{a.id, b.id}
	if pair[0] > pair[1] {
		pair[0], pair[1] = pair[1], pair[0]
	}
	if reported[pair] {
		return Violation{}, false
	}
	if reported == nil {
		reported = make(map[[2]int]bool)
	}
	reported[pair] = true
	steps := make([]string, len(path))
	for i, e := range path {
		steps[i] = describeKey(e.from, e.fromKey) + " -> " + describeKey(e.to, e.toKey)
	}
	return Violation{
		Kind: "inversion",
		Message: fmt.Sprintf("goroutine %d acquires %s while holding %s, but the opposite order was recorded earlier: %s",
			g, describe(to), describe(from), strings.Join(steps, ", then ")),
		OtherStack: path[0].stack,
	}, true
}

// findPath returns a shortest chain of edges from one class to another, or
// nil if there is none. graphMu must be held.
func findPath(from, to *Class) []*edge {
	via := map[*Class]*edge{from: nil}
	queue := []*Class{from}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		for next, e := range c.after {
			if _, seen := via[next]; seen {
				continue
			}
			via[next] = e
			if next == to {
				var path []*edge
				for n := to; n != from; n = via[n].from {
					path = append(path, via[n])
				}
				for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
					path[i], path[j] = path[j], path[i]
				}
				return path
			}
			queue = append(queue, next)
		}
	}
	return nil
}

// ResetGraph forgets every recorded class order and every reported
// inversion, so that tests do not see each other's orders. It does not
// affect which locks are held.
func ResetGraph() {
	cs := Classes()
	graphMu.Lock()
	defer graphMu.Unlock()
	for _, c := range cs {
		c.after = nil
	}
	reported = nil
}

// releaseExclusive updates the checker and the statistics for the release
// of an exclusive hold on s, which the caller has not yet unlocked.
func (s *lockState) releaseExclusive() {
	owner := s.owner
	if owner != 0 && Checking() {
		if g := goid(); g != owner {
			report(Violation{Kind: "unlock-unheld",
				Message: fmt.Sprintf("goroutine %d releases %s, which goroutine %d holds", g, describe(s), owner),
				Stack:   stack()})
		}
	}
	s.recordHold()
	if owner != 0 {
		s.owner = 0
		removeHeld(owner, s, false)
	}
}

// releaseRead drops the calling goroutine's checked read hold of s, which
// the caller has not yet released, and reports whether a hold was dropped.
// A release with no such hold is reported when checking is on, and then
// drops some other goroutine's hold instead, as the sync.RWMutex will.
func releaseRead(s *lockState) bool {
	g := goid()
	if removeHeld(g, s, true) {
		return true
	}
	if !Checking() {
		return false
	}
	report(Violation{Kind: "unlock-unheld",
		Message: fmt.Sprintf("goroutine %d read-releases %s, which it does not hold for reading", g, describe(s)),
		Stack:   stack()})
	return removeAnywhere(s, true)
}

// holds reports whether the calling goroutine, whose id it returns, holds
// s in either mode as far as the checker tracked it.
func holds(s *lockState) (int64, bool) {
	g := goid()
	var buf [16]held
	for _, h := range heldBy(g, buf[:0]) {
		if h.l == s {
			return g, true
		}
	}
	return g, false
}

// reportNotHeld reports an AssertHeld of s that goroutine g failed.
func reportNotHeld(g int64, s *lockState) {
	report(Violation{Kind: "not-held",
		Message: fmt.Sprintf("goroutine %d does not hold %s", g, describe(s)),
		Stack:   stack()})
}
