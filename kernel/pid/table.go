package pid

import "sync/atomic"

const chunkShift = 9

// table maps pid numbers to objects. Nothing takes a lock: a chunk is
// made by compare-and-swap, and a number's slot is written only by the
// allocation that holds the number and by its free.
type table[T any] struct {
	chunks [Limit >> chunkShift]atomic.Pointer[[1 << chunkShift]atomic.Pointer[T]]
}

// load returns the object stored for nr, or nil.
func (t *table[T]) load(nr int) *T {
	if nr <= 0 || nr >= Limit {
		return nil
	}
	c := t.chunks[nr>>chunkShift].Load()
	if c == nil {
		return nil
	}
	return c[nr&(1<<chunkShift-1)].Load()
}

// store publishes v (nil to remove) for nr.
func (t *table[T]) store(nr int, v *T) {
	slot := &t.chunks[nr>>chunkShift]
	c := slot.Load()
	if c == nil {
		if v == nil {
			return
		}
		fresh := new([1 << chunkShift]atomic.Pointer[T])
		if !slot.CompareAndSwap(nil, fresh) {
			c = slot.Load()
		} else {
			c = fresh
		}
	}
	c[nr&(1<<chunkShift-1)].Store(v)
}

// rangeAll calls f for every stored object in increasing pid order until f
// returns false. It sees a store that happened before Range began and may
// or may not see one made concurrently.
func (t *table[T]) rangeAll(f func(nr int, v *T) bool) {
	for ci := range t.chunks {
		c := t.chunks[ci].Load()
		if c == nil {
			continue
		}
		for i := range c {
			if v := c[i].Load(); v != nil {
				if !f(ci<<chunkShift|i, v) {
					return
				}
			}
		}
	}
}
