package modelrun

import (
	"tasklist/kernel"
	"tasklist/scenario"
)

// What a replay of recorded calls (package replay) asks of the backend beyond
// scenario.Backend: a recording shows a child's first calls before its
// parent's clone returns (a vfork parent waits for its child's exec), so the
// child must be known while the creating call is still in the background.

// Task returns the model task ref names, for reads that are no calls of the
// scenario language (a signal's disposition, a resource limit). It must not
// be used to make calls while ref has one in the background.
func (b *Backend) Task(ref scenario.TaskRef) *kernel.Task { return b.task(ref) }

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

// Created returns the task that actor's background call (a fork or clone)
// has created, before the call is joined: from its result once it has
// returned, else by finding, in the caller's pid namespace, the one task no
// name stands for that the call can have made (a child of the caller, of its
// parent with CLONE_PARENT, or a thread of its process). The task gets a
// reference of its own; the join's result names it with another, for the
// same task. It reports false when there is no such task, or more than one.
func (b *Backend) Created(actor scenario.TaskRef) (scenario.TaskRef, bool) {
	bg := b.bg[actor]
	if bg == nil {
		return 0, false
	}
	if b.Returned(actor) {
		return bg.res.NewTask, bg.res.Kind == scenario.ResultNewTask
	}
	t := bg.t
	b.mu.Lock() // for tasks
	defer b.mu.Unlock()
	named := make(map[*kernel.Task]bool, len(b.tasks))
	for _, u := range b.tasks {
		named[u] = true
	}
	ns := t.Namespace()
	var found *kernel.Task
	// A namespace's pids are handed out from 1 upwards, so the walk can stop
	// once it has met every pid in use.
	for nr, seen := 1, 0; nr <= ns.PIDMax() && seen < ns.Allocated(); nr++ {
		u := ns.Lookup(nr)
		if u == nil {
			continue
		}
		seen++
		if named[u] || u.Exited() {
			continue
		}
		if p := u.Parent(); p == t || (p != nil && p == t.Parent()) || u.ThreadGroup() == t.ThreadGroup() {
			if found != nil {
				return 0, false
			}
			found = u
		}
	}
	if found == nil {
		return 0, false
	}
	b.tasks = append(b.tasks, found)
	return scenario.TaskRef(len(b.tasks) - 1), true
}
