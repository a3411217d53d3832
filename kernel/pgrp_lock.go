package kernel

import "tasklist/lockstat"

// pgrpRWMutex is a process group's lock: a big-reader lock, the shape of
// Linux's percpu_rw_semaphore, for a lock whose readers dominate. Forks
// into the group and releases of its members hold it for reading, and do
// so all the time; walks over the members and moves between groups hold
// it for writing, rarely. A reader-writer lock's readers all write its
// reader count, one cache line that two workers forking into one group
// would pass back and forth although neither ever waits. Here the lock
// has a reader-writer lock per shard of the member list (pgrpMembers): a
// reader locks only the shard it changes, that of the process that
// created the member, on a line only that creator's forks and releases
// write; a writer locks every shard, in order.
//
// Every shard is a lock of class ProcessGroup.mu, keyed after the group's
// serial, so lockstat checks a writer's shards in increasing order and
// the whole against every other class as it would one lock.
type pgrpRWMutex struct {
	shards [pgrpShards]pgrpLockShard
	// epoch counts the write holds, each of which moves it on; readers
	// read it under their shard. A join takes the epoch it joins in, so
	// that a member that joined after a walk or a move is newer than
	// every member that walk or move saw (pgrpMembers.each).
	epoch uint64
}

// pgrpLockShard is one shard of a pgrpRWMutex, on cache lines of its own.
type pgrpLockShard struct {
	mu lockstat.RWMutex
	_  [48]byte
}

// Init keys the shards' locks after a group's serial: a newer group's
// come after an older one's.
func (m *pgrpRWMutex) Init(serial uint64) {
	for i := range m.shards {
		m.shards[i].mu.Init(pgrpClass, serial*pgrpShards+uint64(i))
	}
}

// Lock locks every shard for writing, in order, and starts an epoch.
//
// +checklocksignore: the shards' locks are taken in a loop, which
// checklocks cannot follow; callers' annotations name the whole.
func (m *pgrpRWMutex) Lock() {
	for i := range m.shards {
		m.shards[i].mu.Lock()
	}
	m.epoch++
}

// Unlock releases what Lock took.
//
// +checklocksignore: as for Lock.
func (m *pgrpRWMutex) Unlock() {
	for i := len(m.shards) - 1; i >= 0; i-- {
		m.shards[i].mu.Unlock()
	}
}

// RLock locks shard i for reading: enough to add or remove a member of
// that shard, as forks and releases do.
//
// +checklocksignore: as for Lock.
func (m *pgrpRWMutex) RLock(i uint8) { m.shards[i].mu.RLock() }

// RUnlock releases what RLock(i) took.
//
// +checklocksignore: as for Lock.
func (m *pgrpRWMutex) RUnlock(i uint8) { m.shards[i].mu.RUnlock() }

// AssertHeld reports, when lockstat checks, that the caller holds shard
// i in neither mode: neither a read hold of it nor the write hold of the
// whole.
func (m *pgrpRWMutex) AssertHeld(i uint8) { m.shards[i].mu.AssertHeld() }

// epochLocked returns the current epoch.
//
// Preconditions: a shard is held, in either mode.
//
// +checklocksignore: as for Lock.
func (m *pgrpRWMutex) epochLocked() uint64 { return m.epoch }
