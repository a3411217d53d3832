package modelrun

import (
	"tasklist/kernel"
	"tasklist/scenario"
)

// What a replay of recorded calls (package replay) asks of the backend beyond
// scenario.Backend. A recording shows a child's first calls before its
// parent's clone returns (a vfork parent waits for its child's exec), so the
// child must be known while the creating call is still in the background:
// Made says which it is.

// Task returns the model task ref names, for reads that are no calls of the
// scenario language (a signal's disposition, a resource limit). It must not
// be used to make calls while ref has one in the background.
func (b *Backend) Task(ref scenario.TaskRef) *kernel.Task { return b.task(ref) }

// File returns the model's pidfd ref stands for.
func (b *Backend) File(ref scenario.FileRef) *kernel.Pidfd {
	b.mu.Lock() // for files
	defer b.mu.Unlock()
	return b.files[ref]
}

// Returned reports whether actor's background call has returned, so that
// Join would not wait for it.
func (b *Backend) Returned(actor scenario.TaskRef) bool {
	bg := b.bg[actor]
	if bg == nil {
		return false
	}
	select {
	case <-bg.done:
		return true
	default:
		return false
	}
}
