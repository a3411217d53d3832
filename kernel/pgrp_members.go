package kernel

import (
	"sync/atomic"

	"tasklist/lockstat"
)

// pgrpMembers is a process group's member list, split into shards so that
// processes forking into one group side by side, and releasing their
// children, do not write the same list: a process sits in the shard of
// the process that created it (its leader's userShard), and each shard
// has its own lock and its own count. A walk merges the shards, newest
// first, so it visits members in Linux's order: the one that joined last
// first, as Linux adds to the head of the pid's list. Which joined last
// is told without a count every fork writes: a member carries the
// group's epoch when it joined (pgrpRWMutex), which every walk and move
// moves on, and among the forks of one epoch, which no walk or move
// separates, the newer process is the newer member: a fork that begins
// after another has finished allocates a larger serial, and forks that
// overlap may be taken in either order.
//
// The group's lock guards the whole: a join (fork) or a leave (release)
// holds the shard it changes for reading and the shard's own lock, so
// joins and leaves run side by side; everything else (walks, moves, the
// emptiness and length checks) holds it for writing, which keeps every
// shard still. A lockless reader (getpriority) checks every shard's
// sequence count instead.
type pgrpMembers struct {
	shards [pgrpShards]pgrpShard
}

// pgrpShards is how many shards a group's member list has: as many as a
// user's, since both follow the creating process.
const pgrpShards = userShards

// pgrpShard is one shard of a group's members, on cache lines of its own.
type pgrpShard struct {
	// mu orders the joins and leaves of this shard, which hold the
	// group's lock only for reading.
	mu lockstat.Mutex
	// list is the shard's members, newest first.
	// +checklocks:mu
	list seqList[ThreadGroup]
	// n counts the shard's members; the group is empty when every
	// shard's count is 0.
	n atomic.Int64
	_ [64]byte
}

// initLocks gives the shards' locks their class; key orders the shards
// of one group after another group's.
func (m *pgrpMembers) initLocks(serial uint64) {
	for i := range m.shards {
		m.shards[i].mu.Init(pgrpShardClass, serial*pgrpShards+uint64(i))
	}
}

// shardOf returns the shard tg sits in.
func (m *pgrpMembers) shardOf(tg *ThreadGroup) *pgrpShard { return &m.shards[tg.pgrpShard] }

// join adds tg, a new process, which joins the group now, in the given
// epoch; its shard (that of its creator, its leader's userShard) is its
// shard in every group for good, whoever leads it after an exec.
//
// Preconditions: the group's lock is held, its shard at least for
// reading.
func (m *pgrpMembers) join(tg *ThreadGroup, epoch uint64) {
	tg.pgrpShard = tg.leader.Load().userShard
	s := m.shardOf(tg)
	// Joins and leaves of one shard change its list one at a time.
	s.mu.Lock()
	tg.joinSeq = epoch<<1 | 1
	s.list.pushFront(tg, pgrpLinkOf)
	s.mu.Unlock()
	s.n.Add(1)
}

// leave removes tg and reports whether its shard is empty now, in which
// case the group may be.
//
// Preconditions: the group's lock is held, tg's shard at least for
// reading.
func (m *pgrpMembers) leave(tg *ThreadGroup) bool {
	s := m.shardOf(tg)
	// As in join.
	s.mu.Lock()
	s.list.remove(tg, pgrpLinkOf)
	s.mu.Unlock()
	return s.n.Add(-1) == 0
}

// moveTo moves tg to the group whose members are to, as one change of
// both lists (seqMove), joining it now, in the given epoch of to's: as the
// newest member, older than the forks that follow in that epoch.
//
// Preconditions: both groups' locks are held for writing.
//
// +checklocksignore: the shards' lists are still under their groups'
// locks held for writing, which checklocks cannot see.
func (m *pgrpMembers) moveTo(tg *ThreadGroup, to *pgrpMembers, epoch uint64) {
	from, into := m.shardOf(tg), to.shardOf(tg)
	tg.joinSeq = epoch << 1
	seqMove(tg, &from.list, &into.list, pgrpLinkOf, true)
	from.n.Add(-1)
	into.n.Add(1)
}

// count returns the number of members: the sum of the shards' counts,
// each read at its own moment. Under the group's lock held for writing
// it is exact.
func (m *pgrpMembers) count() int64 {
	var n int64
	for i := range m.shards {
		n += m.shards[i].n.Load()
	}
	return n
}

// empty reports whether the group has no member.
//
// Preconditions: the group's lock is held for writing.
func (m *pgrpMembers) empty() bool { return m.count() == 0 }

// joinedAfter reports whether a joined the group after b.
func joinedAfter(a, b *ThreadGroup) bool {
	if a.joinSeq != b.joinSeq {
		return a.joinSeq > b.joinSeq
	}
	return a.serial > b.serial // two forks of one epoch
}

// each calls f for every member, the one that joined last first, until f
// returns false; f may remove the member it is given.
//
// Preconditions: the group's lock is held for writing.
//
// +checklocksignore: as for moveTo.
func (m *pgrpMembers) each(f func(*ThreadGroup) bool) {
	var next [pgrpShards]*ThreadGroup
	for i := range m.shards {
		next[i] = m.shards[i].list.head.Load()
	}
	for {
		newest := -1
		for i, tg := range next {
			if tg != nil && (newest < 0 || joinedAfter(tg, next[newest])) {
				newest = i
			}
		}
		if newest < 0 {
			return
		}
		tg := next[newest]
		next[newest] = tg.pgrpLink.next.Load()
		if !f(tg) {
			return
		}
	}
}

// eachLockless calls f for every member, in no particular order, without
// the group's lock, and reports whether the walk saw every shard as it
// was at one moment; when it did not, what f saw must be dropped.
//
// +checklocksignore: it reads the shards' lists without their locks, as
// seqList allows.
func (m *pgrpMembers) eachLockless(f func(*ThreadGroup)) bool {
	var lists [pgrpShards]*seqList[ThreadGroup]
	for i := range m.shards {
		lists[i] = &m.shards[i].list
	}
	return readEachOf(lists[:], pgrpLinkOf, f)
}
