package kernel

import (
	"fmt"
	"sync/atomic"
)

// taskState is where a task is in its life. A task moves forward only:
// embryo → running → exiting → zombie → dead; an embryo that a dying
// namespace claims before clone publishes it becomes doomed instead.
type taskState int32

const (
	taskEmbryo  taskState = iota // allocated, not yet published by clone
	taskDoomed                   // claimed unpublished by a zap: its clone fails
	taskRunning                  // published and not exiting
	taskExiting                  // in do_exit, PF_EXITING set
	taskZombie                   // exit_notify done (EXIT_ZOMBIE)
	taskDead                     // released (EXIT_DEAD)
)

var taskStateNames = [...]string{"embryo", "doomed", "running", "exiting", "zombie", "dead"}

func (s taskState) String() string {
	if s >= 0 && int(s) < len(taskStateNames) {
		return taskStateNames[s]
	}
	return fmt.Sprintf("taskState(%d)", int32(s))
}

// stateWord holds a task's state, read without a lock; it changes only
// along the edges above.
type stateWord struct{ v atomic.Int32 }

// Load returns the current state.
func (w *stateWord) Load() taskState { return taskState(w.v.Load()) }

// CompareAndSwap moves the state from from to to if it is from: the two
// transitions out of embryo race (clone's publication, a zap's claim).
func (w *stateWord) CompareAndSwap(from, to taskState) bool {
	return w.v.CompareAndSwap(int32(from), int32(to))
}

// advance moves the state from from to to. Any other current state means
// a transition the lifecycle does not have: it panics, naming the three.
func (w *stateWord) advance(from, to taskState) {
	if !w.v.CompareAndSwap(int32(from), int32(to)) {
		panic(fmt.Sprintf("kernel: task state %v → %v, but the task is %v", from, to, w.Load()))
	}
}
