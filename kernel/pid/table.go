package pid

import "sync/atomic"

const (
	chunkShift = 9
	chunkSize  = 1 << chunkShift
	// chunkLines is how many cache lines of pointers a chunk spans;
	// like the used bits, the chunk interleaves its numbers over them.
	chunkLines = chunkSize * 8 / 64
)

// table maps pid numbers to objects. Nothing takes a lock: a chunk is
// made by compare-and-swap, and a number's slot is written only by the
// allocation that holds the number and by its free. Number j of a chunk
// is in slot slotIndex(j), on line j%chunkLines, so that numbers handed
// out one after another, which workers forking side by side get, are
// published on different cache lines (see usedGroup).
type table[T any] struct {
	chunks [Limit >> chunkShift]atomic.Pointer[[chunkSize]atomic.Pointer[T]]
}

// slotIndex returns where number j of a chunk is kept in it.
func slotIndex(j int) int { return j%chunkLines*(chunkSize/chunkLines) + j/chunkLines }

// load returns the object stored for nr, or nil.
func (t *table[T]) load(nr int) *T {
	if nr <= 0 || nr >= Limit {
		return nil
	}
	c := t.chunks[nr>>chunkShift].Load()
	if c == nil {
		return nil
	}
	return c[slotIndex(nr&(chunkSize-1))].Load()
}

// store publishes v (nil to remove) for nr.
func (t *table[T]) store(nr int, v *T) {
	slot := &t.chunks[nr>>chunkShift]
	c := slot.Load()
	if c == nil {
		if v == nil {
			return
		}
		fresh := new([chunkSize]atomic.Pointer[T])
		if !slot.CompareAndSwap(nil, fresh) {
			c = slot.Load()
		} else {
			c = fresh
		}
	}
	c[slotIndex(nr&(chunkSize-1))].Store(v)
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
		for j := range chunkSize {
			if v := c[slotIndex(j)].Load(); v != nil {
				if !f(ci<<chunkShift|j, v) {
					return
				}
			}
		}
	}
}
