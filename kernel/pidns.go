package kernel

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"tasklist/kernel/pid"
)

// maxPIDNSLevel is MAX_PID_NS_LEVEL: namespaces nest at most this deep.
const maxPIDNSLevel = 32

// PIDNamespace is a pid namespace: its own pid numbering, an init that
// adopts orphans, and a parent namespace in which all its pids are visible
// too.
type PIDNamespace struct {
	k      *Kernel
	parent *PIDNamespace
	level  int
	alloc  *pid.Allocator[PID]

	// childReaper is the thread that adopts orphans (pid_ns->child_reaper).
	// It is written under the init process's ThreadGroup.mu.
	childReaper atomic.Pointer[Task]
	// drained is set while the init's exit waits for the namespace to
	// empty (zap_pid_ns_processes); frees wake it.
	drained atomic.Pointer[drainWait]
	// killAlls holds the kill(-1) walks in progress in the namespace
	// (signal_kill.go), nil when there is none. Every fork of a process
	// reads it for each level its child is visible at; only kill(-1)
	// writes it, so the line it sits on stays shared in every cache.
	killAlls atomic.Pointer[[]*killAllWalk]
}

// drainWait is the rest of a namespace init's exit, run once the
// namespace's pid count has fallen to threshold.
type drainWait struct {
	threshold int
	once      sync.Once
	then      func()
}

// fire runs the continuation on a goroutine of its own, counted as an
// asynchronous exit from before the caller returns so that
// Kernel.Quiesce cannot miss it.
func (w *drainWait) fire(k *Kernel) {
	w.once.Do(func() { k.goAsync(w.then) })
}

// newPIDNamespace makes a namespace below parent (nil for the root) with
// pidMax; the root draws from Config.PIDSpace when one is set.
func newPIDNamespace(k *Kernel, parent *PIDNamespace, pidMax int) (*PIDNamespace, error) {
	var a *pid.Allocator[PID]
	if space := k.cfg.PIDSpace; parent == nil && space != nil {
		a = pid.NewSharedAllocator[PID](space)
	} else {
		var err error
		if a, err = pid.NewAllocator[PID](pidMax); err != nil {
			return nil, err
		}
	}
	ns := &PIDNamespace{k: k, parent: parent, alloc: a}
	if parent != nil {
		ns.level = parent.level + 1
		if ns.level > maxPIDNSLevel {
			return nil, unix.ENOSPC
		}
	}
	return ns, nil
}

// Level returns the namespace's depth (0 for the root).
func (ns *PIDNamespace) Level() int { return ns.level }

// Parent returns the parent namespace, or nil for the root.
func (ns *PIDNamespace) Parent() *PIDNamespace { return ns.parent }

// PIDMax returns the namespace's pid_max.
func (ns *PIDNamespace) PIDMax() int { return ns.alloc.Max() }

// SetPIDMax sets the namespace's pid_max (the kernel.pid_max sysctl as
// seen from inside it). Errors: EINVAL outside [301, 4194304].
func (ns *PIDNamespace) SetPIDMax(max int) error { return ns.alloc.SetMax(max) }

// Allocated returns how many pid numbers the namespace has in use.
func (ns *PIDNamespace) Allocated() int { return ns.alloc.Count() }

// ChildReaper returns the thread that adopts the namespace's orphans, or
// nil before its init exists.
func (ns *PIDNamespace) ChildReaper() *Task { return ns.childReaper.Load() }

// Lookup returns the task whose tid is nr in ns (find_task_by_pid_ns), or
// nil. A task is findable from the moment clone completes until it is
// released.
func (ns *PIDNamespace) Lookup(nr int) *Task {
	p := ns.alloc.Load(nr)
	if p == nil {
		return nil
	}
	return p.publishedTask()
}

// isAncestorOf reports whether ns is other or one of its ancestors.
func (ns *PIDNamespace) isAncestorOf(other *PIDNamespace) bool {
	for ; other != nil && other.level >= ns.level; other = other.parent {
		if other == ns {
			return true
		}
	}
	return false
}

// PID is a struct pid: one number per namespace level, from the root
// namespace down to the one it was allocated in.
type PID struct {
	ns *PIDNamespace
	// nrs holds the number at each level, root first; a pid of the root
	// namespace keeps its one number in rootNr, in the struct's padding,
	// so that a fork there allocates the pid in one piece.
	nrs []int32
	// task is the task whose tid this is; nil once it is released while
	// a process group or session still uses the number.
	task    atomic.Pointer[Task]
	pgrp    atomic.Pointer[ProcessGroup]
	session atomic.Pointer[Session]
	// refs counts the users that keep the numbers allocated: the task, a
	// process group and a session named by it.
	refs   atomic.Int32
	rootNr [1]int32
}

// publishedTask returns the task whose tid this is, or nil while its clone
// is unfinished (A15) and after it is released. Nothing else of an
// unfinished task may be read: its fields are still being written.
func (p *PID) publishedTask() *Task {
	t := p.task.Load()
	if t == nil || t.state.Load() < taskRunning {
		return nil
	}
	return t
}

// nrIn returns the number in ns, or 0 if the pid is not visible there.
func (p *PID) nrIn(ns *PIDNamespace) int {
	if ns == nil || ns.level > p.ns.level {
		return 0
	}
	at := p.ns
	for at.level > ns.level {
		at = at.parent
	}
	if at != ns {
		return 0
	}
	return int(p.nrs[ns.level])
}

// newPID returns a pid of ns with no numbers yet.
func newPID(ns *PIDNamespace) *PID {
	p := &PID{ns: ns}
	if ns.level == 0 {
		p.nrs = p.rootNr[:]
	} else {
		p.nrs = make([]int32, ns.level+1)
	}
	return p
}

// allocPID allocates one number in ns and in every ancestor, innermost
// first (alloc_pid), and publishes p in each level's table with t as an
// embryo that lookups do not return. It returns the root level's
// allocation sequence number, which orders processes for locking.
// setTID, clone3's set_tid, chooses the numbers of the innermost levels,
// ns's first (chosenTID); the other levels allocate cyclically.
//
// A namespace whose init has died (A13) fails with ENOMEM only once every
// level has allocated: alloc_pid checks PIDNS_ADDING after the loop, so
// the failed fork has moved the cursor of every level.
func allocPID(ns *PIDNamespace, t *Task, setTID []int32) (*PID, uint64, error) {
	if len(setTID) > ns.level+1 {
		return nil, 0, unix.EINVAL
	}
	p := newPID(ns)
	p.task.Store(t)
	p.refs.Store(1)
	var serial uint64
	var dead error
	undo := func(to *PIDNamespace) {
		for at := ns; at != to; at = at.parent {
			if p.nrs[at.level] != 0 {
				at.alloc.Abort(int(p.nrs[at.level]))
			}
		}
	}
	for at := ns; at != nil; at = at.parent {
		var nr int
		var seq uint64
		var err error
		if i := ns.level - at.level; i < len(setTID) {
			nr, err = at.chosenTID(setTID[i], t)
			if err == nil {
				seq, err = at.alloc.AllocAt(nr, p)
			}
		} else {
			nr, seq, err = at.alloc.Alloc(p)
		}
		switch {
		case at == ns && errors.Is(err, unix.ENOMEM):
			dead = err // disabled: the outer levels still allocate
			continue
		case err != nil:
			undo(at)
			return nil, 0, err
		}
		p.nrs[at.level] = int32(nr)
		serial = seq
	}
	if dead != nil {
		undo(nil)
		return nil, 0, dead
	}
	return p, serial, nil
}

// chosenTID checks a number set_tid asks for at ns's level: EINVAL outside
// [1, pid_max), or for a number other than 1 in a namespace with no init
// yet; EPERM unless t may choose pids there (checkpoint_restore_ns_capable:
// CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE, user namespaces not being
// modelled).
func (ns *PIDNamespace) chosenTID(tid int32, t *Task) (int, error) {
	switch {
	case tid < 1 || int(tid) >= ns.alloc.Max():
		return 0, unix.EINVAL
	case tid != 1 && ns.childReaper.Load() == nil:
		return 0, unix.EINVAL
	}
	if c := t.creds.Load(); !c.HasCap(unix.CAP_SYS_ADMIN) && !c.HasCap(unix.CAP_CHECKPOINT_RESTORE) {
		return 0, unix.EPERM
	}
	return int(tid), nil
}

// put drops one reference; the last one unpublishes and frees the numbers.
// It is never called inside a critical section (release_task frees pids
// after the table work).
func (p *PID) put() {
	if p.refs.Add(-1) != 0 {
		return
	}
	for at := p.ns; at != nil; at = at.parent {
		at.alloc.Free(int(p.nrs[at.level]))
		// Only a namespace whose init is exiting is counted, a sum over
		// its allocator's lines: a free writes no count that every
		// other free writes too. Of frees racing for the last pids, the
		// one whose count comes last sees them all.
		if w := at.drained.Load(); w != nil && at.alloc.Count() <= w.threshold {
			w.fire(at.k)
		}
	}
}

// whenDrained arranges for then to run once the namespace holds at most
// threshold pids (the wait at the end of zap_pid_ns_processes). It does not
// block: the last free runs it.
func (ns *PIDNamespace) whenDrained(threshold int, then func()) {
	w := &drainWait{threshold: threshold, then: then}
	ns.drained.Store(w)
	if ns.alloc.Count() <= threshold {
		w.fire(ns.k)
	}
}

// addKillAll registers w as a kill(-1) walk in progress in ns. The list is
// copied on write with a compare-and-swap, not under a lock: kill(-1) is
// rare, and forks read the list without taking anything.
func (ns *PIDNamespace) addKillAll(w *killAllWalk) {
	for {
		old := ns.killAlls.Load()
		var next []*killAllWalk
		if old != nil {
			next = append(next, *old...)
		}
		next = append(next, w)
		if ns.killAlls.CompareAndSwap(old, &next) {
			return
		}
	}
}

// removeKillAll unregisters w, which addKillAll registered.
func (ns *PIDNamespace) removeKillAll(w *killAllWalk) {
	for {
		old := ns.killAlls.Load()
		var next *[]*killAllWalk
		if rest := slices.DeleteFunc(slices.Clone(*old), func(x *killAllWalk) bool { return x == w }); len(rest) > 0 {
			next = &rest
		}
		if ns.killAlls.CompareAndSwap(old, next) {
			return
		}
	}
}
