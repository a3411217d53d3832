package kernel

import "sync/atomic"

// link is the node of an intrusive doubly linked list. Objects that sit on
// several lists have one link per list; each list's accessor picks it.
type link[T any] struct {
	prev, next *T
}

// ilist is an intrusive list: O(1) insertion and removal, no allocation.
// The owner of the list serialises access.
type ilist[T any] struct {
	head, tail *T
	len        int
}

func (l *ilist[T]) pushBack(x *T, at func(*T) *link[T]) {
	n := at(x)
	n.prev, n.next = l.tail, nil
	if l.tail == nil {
		l.head = x
	} else {
		at(l.tail).next = x
	}
	l.tail = x
	l.len++
}

func (l *ilist[T]) pushFront(x *T, at func(*T) *link[T]) {
	n := at(x)
	n.prev, n.next = nil, l.head
	if l.head == nil {
		l.tail = x
	} else {
		at(l.head).prev = x
	}
	l.head = x
	l.len++
}

func (l *ilist[T]) remove(x *T, at func(*T) *link[T]) {
	n := at(x)
	if n.prev == nil {
		l.head = n.next
	} else {
		at(n.prev).next = n.next
	}
	if n.next == nil {
		l.tail = n.prev
	} else {
		at(n.next).prev = n.prev
	}
	n.prev, n.next = nil, nil
	l.len--
}

// each calls f for every element until f returns false; f may remove the
// element it is given.
func (l *ilist[T]) each(at func(*T) *link[T], f func(*T) bool) {
	for x := l.head; x != nil; {
		next := at(x).next
		if !f(x) {
			return
		}
		x = next
	}
}

// seqLink is the node of a seqList. prev is the writers' alone; next is
// also read by lockless readers.
type seqLink[T any] struct {
	prev *T
	next atomic.Pointer[T]
}

// seqList is an intrusive list like ilist whose owner serialises the
// changes, but which readers may also walk without the owner's lock, as
// Linux walks its pid and task lists under RCU: every change is bracketed
// by two increments of a sequence count (a seqcount), and a lockless walk
// (readEach) that saw the count unchanged from its start to its end saw
// the list exactly as it was at one moment. A walk that sees the count
// move is abandoned; its caller starts again or takes the owner's lock.
// Removed nodes keep their next link, and the collector keeps them, so an
// abandoned walk never follows a dangling pointer.
type seqList[T any] struct {
	// seq is odd while a change is in progress.
	seq  atomic.Uint32
	head atomic.Pointer[T]
	tail *T
}

// writeBegin opens a change, unless one is open already (a move between
// lists holds both open across its two steps), and reports whether it
// opened it; writeEnd closes what writeBegin opened. Only the holder of
// the owner's lock writes the count, so it may read it to know.
func (l *seqList[T]) writeBegin() bool {
	if l.seq.Load()&1 != 0 {
		return false
	}
	l.seq.Add(1)
	return true
}

func (l *seqList[T]) writeEnd(opened bool) {
	if opened {
		l.seq.Add(1)
	}
}

// seqMove takes x off from and puts it on to, at the front or the back,
// as one change of both lists: no lockless reader of either sees x in
// neither, and a reader of to that starts after a reader of from missed x
// there finds it. The owners' locks of both lists are held.
func seqMove[T any](x *T, from, to *seqList[T], at func(*T) *seqLink[T], front bool) {
	a, b := from.writeBegin(), to.writeBegin()
	from.remove(x, at)
	if front {
		to.pushFront(x, at)
	} else {
		to.pushBack(x, at)
	}
	to.writeEnd(b)
	from.writeEnd(a)
}

func (l *seqList[T]) pushBack(x *T, at func(*T) *seqLink[T]) {
	opened := l.writeBegin()
	n := at(x)
	n.prev = l.tail
	n.next.Store(nil)
	if l.tail == nil {
		l.head.Store(x)
	} else {
		at(l.tail).next.Store(x)
	}
	l.tail = x
	l.writeEnd(opened)
}

func (l *seqList[T]) pushFront(x *T, at func(*T) *seqLink[T]) {
	opened := l.writeBegin()
	n := at(x)
	head := l.head.Load()
	n.prev = nil
	n.next.Store(head)
	if head == nil {
		l.tail = x
	} else {
		at(head).prev = x
	}
	l.head.Store(x)
	l.writeEnd(opened)
}

// remove takes x off the list. x keeps its next link for a lockless
// reader standing on it, until x is put on a list again.
func (l *seqList[T]) remove(x *T, at func(*T) *seqLink[T]) {
	opened := l.writeBegin()
	n := at(x)
	next := n.next.Load()
	if n.prev == nil {
		l.head.Store(next)
	} else {
		at(n.prev).next.Store(next)
	}
	if next == nil {
		l.tail = n.prev
	} else {
		at(next).prev = n.prev
	}
	n.prev = nil
	l.writeEnd(opened)
}

// each calls f for every element until f returns false; f may remove the
// element it is given. The owner's lock is held.
func (l *seqList[T]) each(at func(*T) *seqLink[T], f func(*T) bool) {
	for x := l.head.Load(); x != nil; {
		next := at(x).next.Load()
		if !f(x) {
			return
		}
		x = next
	}
}

// readBegin starts a lockless walk: it returns the sequence count to
// check the walk against, and false while a change is in progress.
func (l *seqList[T]) readBegin() (uint32, bool) {
	s := l.seq.Load()
	return s, s&1 == 0
}

// readEach calls f for every element without the owner's lock, and
// reports whether the list stayed as it was at readBegin's s throughout;
// when it did not, f may have seen a mix of states and its results must
// be dropped. Checking the count at every step keeps an abandoned walk
// from running on through lists its nodes were moved to.
func (l *seqList[T]) readEach(s uint32, at func(*T) *seqLink[T], f func(*T)) bool {
	for x := l.head.Load(); x != nil; x = at(x).next.Load() {
		if l.seq.Load() != s {
			return false
		}
		f(x)
	}
	return l.seq.Load() == s
}

// unchangedSince reports whether no change began since readBegin's s.
func (l *seqList[T]) unchangedSince(s uint32) bool { return l.seq.Load() == s }

// maxReadLists is how many lists readEachOf reads as one.
const maxReadLists = 8

// readEachOf is readEach over lists (at most maxReadLists) read as one:
// it reports whether the walk saw them all as they were at one moment
// (some moment after the last list's walk began and before the first
// final check).
func readEachOf[T any](lists []*seqList[T], at func(*T) *seqLink[T], f func(*T)) bool {
	var seqs [maxReadLists]uint32
	for i, l := range lists {
		s, ok := l.readBegin()
		if !ok {
			return false
		}
		seqs[i] = s
	}
	for i, l := range lists {
		// Most of a sharded list's shards are empty: no walk to call.
		if l.head.Load() != nil && !l.readEach(seqs[i], at, f) {
			return false
		}
	}
	// A list walked early may have changed while later ones were walked:
	// each must still be as it was when the walks began.
	for i, l := range lists {
		if !l.unchangedSince(seqs[i]) {
			return false
		}
	}
	return true
}

// lockless runs a lockless read attempt up to locklessTries times and
// reports whether one saw a stable state; the caller then falls back to
// its lock, so that a reader always ends however busy the writers are.
func lockless(attempt func() bool) bool {
	for range locklessTries {
		if attempt() {
			return true
		}
	}
	return false
}

// locklessTries is how often a lockless read is tried before the reader
// takes the lock.
const locklessTries = 4
