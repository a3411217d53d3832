package kernel

import "sync/atomic"

// Settling: how a caller that has stopped issuing calls (the scenario
// runner between statements) learns, without polling, that the model has
// settled or that a task has gone to sleep.
//
// Two kinds of event can make such a caller's condition true: a task
// begins to sleep in a blocking call (Task.Sleeping turns true only then),
// and the count of asynchronous work (Kernel.async) falls to zero. Every
// other change only makes those conditions false again: a sleeper is
// woken, or new asynchronous work starts.
//
// An event closes the kernel's current change channel, and the next
// watcher makes a fresh one. Nothing is done while nobody watches: the
// notifier reads one atomic counter, written only by watchers, so fork,
// exit and wait pay no shared write and no lock. The counter and the
// channel order the two sides as a Dekker pair under Go's sequentially
// consistent atomics: a watcher raises the count before it takes the
// channel and tests its condition, a notifier changes the state before it
// reads the count. Either the notifier sees the watcher and closes the
// channel the watcher holds (or one the watcher takes after the close, by
// which time the change is visible), or the watcher came later and its
// test sees the change.
type settle struct {
	// watchers counts the goroutines inside Await.
	watchers atomic.Int32
	// changed is closed, and cleared, by the next event; nil when no
	// watcher has asked for it since the last one.
	changed atomic.Pointer[chan struct{}]
}

// notify reports an event to the watchers, if there are any.
func (s *settle) notify() {
	if s.watchers.Load() == 0 {
		return
	}
	if ch := s.changed.Swap(nil); ch != nil {
		close(*ch)
	}
}

// next returns the channel the next event closes.
func (s *settle) next() <-chan struct{} {
	for {
		if ch := s.changed.Load(); ch != nil {
			return *ch
		}
		ch := make(chan struct{})
		if s.changed.CompareAndSwap(nil, &ch) {
			return ch
		}
	}
}

// Await blocks until cond reports true or stop is closed, and reports
// which: true for cond. cond is tested at once and again after every
// event that could have made it true — a task beginning to sleep in a
// blocking call, or the last asynchronous work (see Quiesce) finishing —
// so it must be a condition made true only by such events, such as
// "t.Sleeping() and nothing asynchronous is running". stop is tested
// before cond; a nil stop never closes.
func (k *Kernel) Await(stop <-chan struct{}, cond func() bool) bool {
	k.settle.watchers.Add(1)
	defer k.settle.watchers.Add(-1)
	for {
		changed := k.settle.next()
		select {
		case <-stop:
			return false
		default:
		}
		if cond() {
			return true
		}
		select {
		case <-stop:
			return false
		case <-changed:
		}
	}
}

// Quiesce waits until no exit of a killed task is still running: every
// task that was sent a fatal signal has finished exiting or is blocked on
// another task (a namespace init waiting for its namespace to empty), and
// every stop or continue has taken effect and reached the parent. Calls
// made concurrently may start new work; Quiesce is for callers that have
// stopped issuing calls, such as the scenario runner between statements.
func (k *Kernel) Quiesce() {
	if !k.Quiescent() {
		k.Await(nil, k.Quiescent)
	}
}

// Quiescent reports whether no asynchronous work is running at this
// instant: what Quiesce waits for.
func (k *Kernel) Quiescent() bool { return k.async.Load() == 0 }

// goAsync runs f on a goroutine of its own, counted by Quiesce from
// before goAsync returns, so that Quiesce cannot miss it.
func (k *Kernel) goAsync(f func()) {
	k.async.Add(1)
	go func() {
		defer k.asyncDone()
		f()
	}()
}

// asyncDone ends one piece of asynchronous work; the last one wakes the
// watchers.
func (k *Kernel) asyncDone() {
	if k.async.Add(-1) == 0 {
		k.settle.notify()
	}
}

// sleepSlot holds what a task's blocking call sleeps on, nil while it
// sleeps on nothing. Storing a sleep wakes the watchers: the task may now
// be Sleeping.
type sleepSlot struct {
	p atomic.Pointer[sleep]
	k *Kernel
}

func (s *sleepSlot) Load() *sleep { return s.p.Load() }

func (s *sleepSlot) Store(v *sleep) {
	s.p.Store(v)
	if v != nil {
		s.k.settle.notify()
	}
}
