package sem

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/lockstat"
	"tasklist/plan"
)

var (
	namespaceClass = lockstat.NewClass("sem.Namespace.mu")
	setClass       = lockstat.NewClass("sem.Set.mu")
	semClass       = lockstat.NewClass("sem.Sem.mu")
	undoListClass  = lockstat.NewClass("sem.UndoList.mu")
)

// minCycle is ipc_min_cycle: ids are handed out cyclically over at least
// this many indices before one is reused.
const minCycle = 64

// Namespace is one IPC namespace's semaphore sets. Its methods are safe for
// concurrent use.
type Namespace struct {
	limits Limits
	// locking is the namespace's locking design; every set copies it.
	locking plan.SemLocking
	ids     idTable

	mu lockstat.Mutex
	// keys maps a public key to its set.
	// +checklocks:mu
	keys map[int32]*Set
	// +checklocks:mu
	inUse int
	// usedSems counts the semaphores of every set (SEMMNS).
	// +checklocks:mu
	usedSems int
	// seq, lastIdx and nextIdx are ipc_ids.seq, ipc_ids.last_idx and the
	// idr's cyclic cursor.
	// +checklocks:mu
	seq int
	// +checklocks:mu
	lastIdx int
	// +checklocks:mu
	nextIdx int
}

// NewNamespace returns an empty namespace with the given limits, taken as
// they are (a zero limit is zero; see Limits.WithDefaults), and tasklist's
// own locking (the zero plan.SemLocking). It panics if Limits.Validate
// refuses the limits: callers validate limits from outside.
func NewNamespace(l Limits) *Namespace { return NewNamespaceLocking(l, plan.SemLocking{}) }

// NewNamespaceLocking is [NewNamespace] with the locking design lk (see
// the package documentation, "Locking designs"). Every design gives the
// same results. It panics, besides, if lk has WakeAll without
// SetLockOnly (waking every sleeper needs the lock over all the set's
// queues) or NoRevalidate with PermUnderLock (a check made under the lock
// has nothing to revalidate), or NoRevalidate in a build without the
// tasklist_unsafe tag (plan.UnsafeBuilt), which leaves its code out.
func NewNamespaceLocking(l Limits, lk plan.SemLocking) *Namespace {
	if err := l.Validate(); err != nil {
		panic(err)
	}
	if lk.WakeAll && !lk.SetLockOnly || lk.NoRevalidate && lk.PermUnderLock {
		panic(fmt.Sprintf("sem: invalid locking %+v", lk))
	}
	if lk.NoRevalidate && !plan.UnsafeBuilt {
		panic(fmt.Sprintf("sem: locking %+v: %v", lk, plan.ErrUnsafeNotBuilt))
	}
	startClock.Do(tick)
	ns := &Namespace{limits: l, locking: lk, keys: make(map[int32]*Set), lastIdx: -1}
	ns.mu.Init(namespaceClass, 0)
	return ns
}

// Limits returns the namespace's limits.
func (ns *Namespace) Limits() Limits { return ns.limits }

// Locking returns the namespace's locking design.
func (ns *Namespace) Locking() plan.SemLocking { return ns.locking }

// Semget returns the id of the set with the given key, creating it if key
// is IPC_PRIVATE or if flags has IPC_CREAT and no set has the key (ksys_semget,
// ipcget). A new set has nsems semaphores with value 0, mode flags&0777,
// and the caller's effective ids as owner and creator.
//
// Errors, in the order Linux checks them: nsems < 0 or > SEMMSL → EINVAL;
// no set with the key and no IPC_CREAT → ENOENT; creating with nsems 0 →
// EINVAL; SEMMNS or SEMMNI exhausted → ENOSPC; an existing set with
// IPC_CREAT|IPC_EXCL → EEXIST; nsems above the existing set's → EINVAL; the
// permissions in flags&0777 not granted → EACCES.
func (ns *Namespace) Semget(c Caller, key int32, nsems, flags int) (int, error) {
	if nsems < 0 || nsems > ns.limits.SEMMSL {
		return -1, unix.EINVAL
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if key == unix.IPC_PRIVATE {
		return ns.newaryLocked(&c.Creds, key, nsems, flags)
	}
	s := ns.keys[key]
	if s == nil {
		if flags&unix.IPC_CREAT == 0 {
			return -1, unix.ENOENT
		}
		return ns.newaryLocked(&c.Creds, key, nsems, flags)
	}
	if flags&unix.IPC_CREAT != 0 && flags&unix.IPC_EXCL != 0 {
		return -1, unix.EEXIST
	}
	if nsems > s.nsems {
		return -1, unix.EINVAL
	}
	if !s.perm.Load().allows(&c.Creds, flags) {
		return -1, unix.EACCES
	}
	return s.id, nil
}

// newaryLocked mirrors newary and ipc_addid.
//
// Preconditions: ns.mu is held.
//
// +checklocks:ns.mu
func (ns *Namespace) newaryLocked(c *Creds, key int32, nsems, flags int) (int, error) {
	if nsems == 0 {
		return -1, unix.EINVAL
	}
	if ns.usedSems+nsems > ns.limits.SEMMNS || ns.inUse >= ns.limits.SEMMNI {
		return -1, unix.ENOSPC
	}
	idx := ns.allocIdxLocked()
	if idx < 0 {
		return -1, unix.ENOSPC
	}
	if idx <= ns.lastIdx {
		ns.seq++
		if ns.seq >= seqMax {
			ns.seq = 0
		}
	}
	ns.lastIdx = idx
	s := newSet(ns, ns.seq<<ipcmniShift|idx, key, nsems, &perm{
		uid: c.EUID, cuid: c.EUID, gid: c.EGID, cgid: c.EGID,
		mode: uint16(flags & 0o777),
	})
	ns.ids.store(idx, s)
	if key != unix.IPC_PRIVATE {
		ns.keys[key] = s
	}
	ns.inUse++
	ns.usedSems += nsems
	return s.id, nil
}

// allocIdxLocked mirrors ipc_idr_alloc's idr_alloc_cyclic: the lowest free
// index at or after the cursor, else the lowest free one, in
// [0, max(inUse*3/2, minCycle)) capped at IPCMNI; -1 if none is free.
//
// Preconditions: ns.mu is held.
//
// +checklocks:ns.mu
func (ns *Namespace) allocIdxLocked() int {
	end := min(max(ns.inUse*3/2, minCycle), ipcmni)
	for _, r := range [2][2]int{{ns.nextIdx, end}, {0, min(ns.nextIdx, end)}} {
		for i := r[0]; i < r[1]; i++ {
			if ns.ids.load(i) == nil {
				ns.nextIdx = i + 1
				return i
			}
		}
	}
	return -1
}

// obtain mirrors ipc_obtain_object_check: it finds the set named by id
// without taking a lock, or fails with EINVAL. The set may be removed at
// any time after; callers check Set.deleted under the set's lock.
func (ns *Namespace) obtain(id int) (*Set, error) {
	s := ns.ids.load(id & (ipcmni - 1))
	if s == nil || s.id != id {
		return nil, unix.EINVAL
	}
	return s, nil
}

// rmidLocked mirrors freeary and ipc_rmid: it fails every sleeper with
// EIDRM, detaches every undo entry and unpublishes the set. The sleepers
// are added to wq, to be woken once the locks are released.
//
// Preconditions: ns.mu and s.mu are held; s is in global mode.
//
// +checklocks:ns.mu
// +checklocks:s.mu
func (ns *Namespace) rmidLocked(s *Set, wq *wakeQ) {
	for un := range s.undos {
		un.ul.mu.Lock()
		delete(un.ul.entries, s)
		un.ul.mu.Unlock()
	}
	s.undos = nil
	s.failAllLocked(unix.EIDRM, wq)
	s.deleted.Store(true)
	ns.ids.store(s.id&(ipcmni-1), nil)
	if s.key != unix.IPC_PRIVATE {
		delete(ns.keys, s.key)
	}
	ns.inUse--
	ns.usedSems -= s.nsems
}

// idTable maps an id's index to its set. Loads take no lock; stores are
// made under Namespace.mu. The second level is allocated on first use so
// that an empty namespace stays small.
type idTable struct {
	chunks [ipcmni / idChunk]atomic.Pointer[[idChunk]atomic.Pointer[Set]]
}

const idChunk = 256

func (t *idTable) load(idx int) *Set {
	c := t.chunks[idx/idChunk].Load()
	if c == nil {
		return nil
	}
	return c[idx%idChunk].Load()
}

func (t *idTable) store(idx int, s *Set) {
	c := t.chunks[idx/idChunk].Load()
	if c == nil {
		c = new([idChunk]atomic.Pointer[Set])
		t.chunks[idx/idChunk].Store(c)
	}
	c[idx%idChunk].Store(s)
}

// wallSeconds is the wall clock in whole seconds, refreshed at each second
// boundary once a namespace exists. Like ktime_get_real_seconds, which
// reads a value the timer tick maintains, it spares each semop a clock
// read: on a virtual machine without a fast clock that read costs more
// than the rest of an uncontended semop.
var (
	wallSeconds atomic.Int64
	startClock  sync.Once
)

func tick() {
	t := time.Now()
	wallSeconds.Store(t.Unix())
	time.AfterFunc(t.Truncate(time.Second).Add(time.Second).Sub(t), tick)
}

// now is the clock behind otime and ctime.
func now() int64 { return wallSeconds.Load() }
