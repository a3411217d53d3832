package sem

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"tasklist/lockstat"
)

// UndoList is a process's SEM_UNDO adjustments (struct sem_undo_list): one
// adjustment per semaphore of each set the process operated on with
// SEM_UNDO. Processes created with CLONE_SYSVSEM share their parent's list
// ([UndoList.Share]); the last sharer to exit applies it
// ([UndoList.Release]). Its methods are safe for concurrent use.
type UndoList struct {
	refs atomic.Int32

	mu lockstat.Mutex
	// entries maps each set to this list's entry for it; IPC_RMID deletes
	// the set's entry.
	// +checklocks:mu
	entries map[*Set]*undo
}

// undo is one list's adjustments for one set (struct sem_undo). The list
// and the set know it; adj[i] is guarded like semaphore i's value.
type undo struct {
	ul  *UndoList
	set *Set
	adj []int16
}

// NewUndoList returns an empty undo list with one sharer.
func NewUndoList() *UndoList {
	ul := &UndoList{entries: make(map[*Set]*undo)}
	ul.refs.Store(1)
	ul.mu.Init(undoListClass, 0)
	return ul
}

// Share adds a sharer to ul (copy_semundo with CLONE_SYSVSEM) and returns
// ul. It panics if ul has already been released by its last sharer.
func (ul *UndoList) Share() *UndoList {
	if ul.refs.Add(1) <= 1 {
		panic("sem: Share of a released UndoList")
	}
	return ul
}

// Release drops one sharer (exit_sem). The last sharer's release applies
// every adjustment: each semaphore's value becomes value+adjustment clamped
// to [0, SEMVMX], pid records the exiting process as its last operator, and
// sleepers that can then proceed are completed. Release never blocks on a
// semaphore; sets removed meanwhile are skipped. The list must not be used
// after its last release.
func (ul *UndoList) Release(pid PID) {
	n := ul.refs.Add(-1)
	if n < 0 {
		panic("sem: UndoList released too often")
	}
	if n > 0 {
		return
	}
	for {
		un := ul.any()
		if un == nil {
			return
		}
		s := un.set
		var wq wakeQ
		s.lockAll()
		if ul.detachLocked(s, un) {
			for i, a := range un.adj {
				if a == 0 {
					continue
				}
				sm := &s.sems[i]
				sm.val = int32(min(max(int(sm.val)+int(a), 0), s.ns.limits.SEMVMX))
				sm.pid = pid
			}
			s.doSmartUpdateLocked(nil, true, true, &wq)
		}
		s.unlockAll()
		wq.wake()
	}
}

// any returns one of the list's entries, or nil if it has none.
func (ul *UndoList) any() *undo {
	ul.mu.Lock()
	defer ul.mu.Unlock()
	for _, un := range ul.entries {
		return un
	}
	return nil
}

// detachLocked removes un from the list and from s, unless IPC_RMID already
// did, and reports whether it did.
//
// Preconditions: s.mu is held in global mode.
//
// +checklocks:s.mu
func (ul *UndoList) detachLocked(s *Set, un *undo) bool {
	ul.mu.Lock()
	defer ul.mu.Unlock()
	if s.deleted.Load() || ul.entries[s] != un {
		return false
	}
	delete(ul.entries, s)
	delete(s.undos, un)
	return true
}

// findAlloc mirrors find_alloc_undo: it returns ul's entry for the set id
// and the set, creating the entry if needed.
func (ul *UndoList) findAlloc(ns *Namespace, id int) (*undo, *Set, error) {
	s, err := ns.obtain(id)
	if err != nil {
		return nil, nil, err
	}
	ul.mu.Lock()
	un := ul.entries[s]
	ul.mu.Unlock()
	if un != nil {
		return un, s, nil
	}
	// Allocate before locking, as Linux does, and look again under the
	// locks: a sharer may have added the entry meanwhile.
	fresh := &undo{ul: ul, set: s, adj: make([]int16, s.nsems)}
	s.lockAll()
	defer s.unlockAll()
	return ul.attachLocked(s, fresh)
}

// attachLocked adds fresh to the list and to s unless the list already has an
// entry for s, and returns the entry. Its check that s was not removed is
// made under every locking design, NoRevalidate included: IPC_RMID would
// never detach an entry attached after it, and the list's release would
// find that entry forever.
//
// Preconditions: s.mu is held in global mode.
//
// +checklocks:s.mu
func (ul *UndoList) attachLocked(s *Set, fresh *undo) (*undo, *Set, error) {
	if s.deleted.Load() {
		return nil, nil, unix.EIDRM
	}
	ul.mu.Lock()
	defer ul.mu.Unlock()
	if un := ul.entries[s]; un != nil {
		return un, s, nil
	}
	ul.entries[s] = fresh
	s.undos[fresh] = struct{}{}
	return fresh, s, nil
}
