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
// returned, else by finding, in the caller's pid namespace, the task no name
// stands for that the call can have made: a child of the caller, or failing
// one a thread of its process, or failing one a child of its parent
// (CLONE_PARENT). The task gets a reference of its own; the join's result
// names it with another, for the same task. It reports false when there is
// no such task, or more than one of the same kind.
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
	// found holds the candidates of each kind: children, threads, siblings.
	var found [3][]*kernel.Task
	ns := t.Namespace()
	// A namespace's pids are handed out from 1 upwards, so the walk can stop
	// once it has met every pid in use.
	for nr, seen := 1, 0; nr <= ns.PIDMax() && seen < ns.Allocated(); nr++ {
		u := ns.Lookup(nr)
		if u == nil {
			continue
		}
		seen++
		switch p := u.Parent(); {
		case named[u] || u.Exited():
		case u.ThreadGroup() == t.ThreadGroup():
			found[1] = append(found[1], u)
		case p == t:
			found[0] = append(found[0], u)
		case p != nil && p == t.Parent():
			found[2] = append(found[2], u)
		}
	}
	for _, kind := range found {
		switch len(kind) {
		case 0:
			continue
		case 1:
			b.tasks = append(b.tasks, kind[0])
			return scenario.TaskRef(len(b.tasks) - 1), true
		}
		return 0, false
	}
	return 0, false
}
