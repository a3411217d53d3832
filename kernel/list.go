package kernel

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
