package kernel

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"tasklist/lockstat"
	"tasklist/plan"
)

// Session is a session: the process groups created under one setsid.
type Session struct {
	mu lockstat.Mutex
	id *PID
	// groups are the session's live process groups.
	// +checklocks:mu
	groups ilist[ProcessGroup]
}

// ProcessGroup is a process group. Its member list is guarded by its own
// lock. A walk that acts on the members (kill of the group, setpriority,
// the orphaned-group test) holds it for writing, and so does a move
// between groups (setpgid, setsid), holding both groups' locks; so no walk
// ever visits a process of another group or misses one forked while it
// runs (Linux walks under tasklist_lock held for reading, and links a
// child under it held for writing). A fork into the group and a release,
// the changes every process makes, only add or remove one member, which
// commute: they hold the lock for reading, only the shard of it that
// covers the shard of the member list they change (pgrpRWMutex), so that
// they run side by side without writing a line in common, and change
// that shard of the list under the shard's own lock (pgrpMembers).
// getpriority's walk takes no group lock: it reads the member list as it
// was at one moment, checking the shards' sequence counts (seqList),
// which every change of membership moves.
type ProcessGroup struct {
	mu pgrpRWMutex
	// members are the processes of the group (pgrpMembers says under
	// which locks).
	members pgrpMembers
	id      *PID
	session *Session
	// serial orders group locks: a newer group's lock comes after an
	// older one's.
	serial uint64
	// dead is set when the last member left; nobody may join afterwards.
	// The leave that empties the group sets it holding one shard of mu
	// for reading, as the one leave that finds every shard empty and
	// the flag clear (no fork can join a group with no member to fork
	// from); a move sets it holding mu for writing.
	dead atomic.Bool
	// sessionLink is guarded by the session's mu.
	sessionLink link[ProcessGroup]
}

func pgrpLinkOf(tg *ThreadGroup) *seqLink[ThreadGroup]  { return &tg.pgrpLink }
func sessionLinkOf(g *ProcessGroup) *link[ProcessGroup] { return &g.sessionLink }

// pgrpSerial hands out process groups' serials.
var pgrpSerial atomic.Uint64

// newSession makes a session named by id, holding the one process group
// g its creator makes with it.
//
// +checklocksignore: s is unreachable until the caller publishes g, and
// locking it here would nest Session.mu inside the ProcessGroup.mu that
// setsid holds, against the lock order.
func newSession(id *PID) *Session {
	s := &Session{id: id}
	s.mu.Init(sessionClass, 0)
	id.refs.Add(1)
	id.session.Store(s)
	return s
}

// newProcessGroup makes a group named by id in session s and publishes
// it. The caller holds s.mu, or s is a new session nobody else can reach
// yet; and it holds the lock of the group the first member leaves, which
// serialises every creation of a group named by that member's pid.
//
// +checklocksignore: see above; checklocks cannot see which case holds.
func newProcessGroup(id *PID, s *Session) *ProcessGroup {
	g := &ProcessGroup{id: id, session: s, serial: pgrpSerial.Add(1)}
	g.mu.Init(g.serial)
	g.members.initLocks(g.serial)
	s.groups.pushBack(g, sessionLinkOf)
	id.refs.Add(1)
	id.pgrp.Store(g)
	return g
}

// lockPgrpOf locks tg's current process group for writing and returns
// it.
//
// +checklocksacquire:g.mu
func (tg *ThreadGroup) lockPgrpOf() (g *ProcessGroup) {
	for {
		g = tg.pgrp.Load()
		// Moves out of a group hold its lock, so tg stays in g while
		// it is held.
		g.mu.Lock()
		if tg.pgrp.Load() == g {
			return g
		}
		g.mu.Unlock()
	}
}

// rlockPgrpOf is lockPgrpOf for a release: the group is locked for
// reading, tg's shard of it.
//
// +checklocksacquireread:g.mu
func (tg *ThreadGroup) rlockPgrpOf() (g *ProcessGroup) {
	for {
		g = tg.pgrp.Load()
		// As in lockPgrpOf: a read hold keeps moves out as well.
		g.mu.RLock(tg.pgrpShard)
		if tg.pgrp.Load() == g {
			return g
		}
		g.mu.RUnlock(tg.pgrpShard)
	}
}

// leavePgrp removes tg from its process group when the process is
// released; an emptied group and session give up their pids.
func (tg *ThreadGroup) leavePgrp() {
	// The group's lock, for reading: a release commutes with forks into
	// the group and other releases, but not with a walk or a move.
	g := tg.rlockPgrpOf()
	empty := g.members.leave(tg) && !g.leaderStays() && g.members.count() == 0 &&
		g.dead.CompareAndSwap(false, true)
	g.mu.RUnlock(tg.pgrpShard)
	if empty {
		g.release()
	}
}

// leaderStays reports whether the process that leads g, the one its pid
// names, is a member that has not begun to leave, so that a leave that
// emptied its own shard need not read every other shard's count: the
// common case, a leader that outlives its group's other members, writes
// and reads nothing that other shards' leaves write.
//
// A leave that races with the leader's own finds the group empty all the
// same: the leader's release marks its task dead before its leave counts
// its shard down and sums the shards, so either this check sees the mark
// or the leader's sum sees this leave.
//
// Preconditions: a shard of g.mu is held, so that no member moves.
func (g *ProcessGroup) leaderStays() bool {
	t := g.id.task.Load()
	return t != nil && t.state.Load() != taskDead && t.tg.pgrp.Load() == g
}

// joinPgrpLocked adds ctg, a new child, to the group of the process that
// forks it.
//
// Preconditions: g.mu is held, ctg's shard of it (its leader's
// userShard) at least for reading.
func (g *ProcessGroup) joinPgrpLocked(ctg *ThreadGroup) {
	g.mu.AssertHeld(ctg.leader.Load().userShard)
	g.members.join(ctg, g.mu.epochLocked())
}

// release detaches an emptied group from its pid and its session.
func (g *ProcessGroup) release() {
	g.id.pgrp.CompareAndSwap(g, nil)
	s := g.session
	// The session's lock guards its group list.
	s.mu.Lock()
	s.groups.remove(g, sessionLinkOf)
	sessionGone := s.groups.len == 0
	s.mu.Unlock()
	g.id.put()
	if sessionGone {
		s.id.session.CompareAndSwap(s, nil)
		s.id.put()
	}
}

// ProcessGroupID returns the pgid as seen in ns, or 0 if not visible.
func (g *ProcessGroup) ProcessGroupID(ns *PIDNamespace) int { return g.id.nrIn(ns) }

// Getpgrp returns the caller's process group id.
func (t *Task) Getpgrp() int { return t.tg.pgrp.Load().id.nrIn(t.tg.ns) }

// SessionID returns the process's session id as seen in ns, 0 if not
// visible there. Unlike Getsid it is an accessor: it answers for an
// exited process too, with the session it was last in.
func (tg *ThreadGroup) SessionID(ns *PIDNamespace) int {
	return tg.pgrp.Load().session.id.nrIn(ns)
}

// lookupForID resolves the pid argument of getpgid/getsid: 0 is the
// caller, otherwise any thread id in the caller's namespace.
func (t *Task) lookupForID(pid int) (*Task, error) {
	if pid == 0 {
		return t, nil
	}
	p := t.tg.ns.Lookup(pid)
	if p == nil {
		return nil, unix.ESRCH
	}
	return p, nil
}

// Getpgid is getpgid(2): the process group of pid (0: the caller), as seen
// in the caller's namespace, 0 if not visible there. Errors: ESRCH for an
// unknown pid or an exited caller.
func (t *Task) Getpgid(pid int) (int, error) {
	if !t.alive() {
		return 0, unix.ESRCH
	}
	p, err := t.lookupForID(pid)
	if err != nil {
		return 0, err
	}
	return p.tg.pgrp.Load().id.nrIn(t.tg.ns), nil
}

// Getsid is getsid(2): the session of pid (0: the caller), as seen in the
// caller's namespace, 0 if not visible there. Errors: ESRCH for an
// unknown pid or an exited caller.
func (t *Task) Getsid(pid int) (int, error) {
	if !t.alive() {
		return 0, unix.ESRCH
	}
	p, err := t.lookupForID(pid)
	if err != nil {
		return 0, err
	}
	return p.tg.pgrp.Load().session.id.nrIn(t.tg.ns), nil
}

// Setsid is setsid(2) (ksys_setsid): the caller's process becomes the
// leader of a new session and of a new process group, both named by its
// pid. Errors: EPERM if it already leads a session or a process group
// with its pid exists.
func (t *Task) Setsid() (int, error) {
	if !t.alive() {
		return 0, unix.ESRCH
	}
	tg := t.tg
	id := tg.leader.Load().pid.Load()
	// A plan's table lock: setsid writes the process-group links.
	t.k.plan.Lock(plan.SetPgid)
	defer t.k.plan.Unlock(plan.SetPgid)
	// The old group's lock serialises every move out of it and every
	// creation of a group named by this process's pid, so the checks
	// below and the move are atomic against another setsid or setpgid
	// of this process.
	old := tg.lockPgrpOf()
	if tg.leader.Load().state.Load() == taskDead {
		// Killed and released while in the call: release has taken the
		// process out of its group, or will once this lock is dropped.
		old.mu.Unlock()
		return 0, unix.ESRCH
	}
	if id.pgrp.Load() != nil || id.session.Load() != nil {
		old.mu.Unlock()
		return 0, unix.EPERM
	}
	g := newProcessGroup(id, newSession(id))
	// The new group is newer, so its lock comes after the old one's.
	g.mu.Lock()
	old.members.moveTo(tg, &g.members, g.mu.epochLocked())
	tg.pgrp.Store(g)
	oldEmpty := old.members.empty()
	if oldEmpty {
		old.dead.Store(true)
	}
	g.mu.Unlock()
	old.mu.Unlock()
	if oldEmpty {
		old.release()
	}
	return id.nrIn(tg.ns), nil
}
