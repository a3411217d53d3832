package kernel

import (
	"sync/atomic"

	"tasklist/lockstat"
)

// User is the per-uid object Linux keeps in user_struct/ucounts: the
// tasks whose real uid it is, for PRIO_USER, and their number, for
// RLIMIT_NPROC.
//
// Its members are spread over shards, each a list with its own lock; a
// task stays in the shard of the process that created it, so processes
// that fork or spawn threads side by side as one user rarely take the
// same lock (Linux takes none on fork or exit: its PRIO_USER walks every
// task). A getpriority walk reads the shards without their
// locks and checks their sequence counts (seqList), so it sees one moment
// of the user's membership and walks side by side write nothing shared;
// setpriority's walk locks every shard for reading, in order. setuid
// moves a thread from one user's shard to the same shard of another
// holding both locks (lower uid first), as one change of both lists, and
// publishes the new credentials inside that section, so a walk sees
// exactly the threads whose real uid is the user's.
type User struct {
	uid    uint32
	shards [userShards]userShard
}

// userShards is how many member lists a user has.
const userShards = 8

// userShard is one of a user's member lists, on cache lines of its own.
type userShard struct {
	mu lockstat.RWMutex
	// members are threads with the user's real uid, from just before
	// clone publishes them until they are released.
	// +checklocks:mu
	members seqList[Task]
	// tasks counts the shard's tasks charged for RLIMIT_NPROC, from the
	// start of their clone until their release; uid 0 is exempt
	// (INIT_USER) and is not counted. Counting per shard keeps processes
	// of one user that fork side by side from writing one shared count
	// (Linux keeps one atomic count per user).
	tasks atomic.Int64
	_     [64]byte
}

func userLinkOf(t *Task) *seqLink[Task] { return &t.userLink }

// Tasks returns how many live tasks have this real uid (uid 0 is exempt
// from RLIMIT_NPROC and is not counted): the sum of the shards' counts,
// each read at its own moment.
func (u *User) Tasks() int64 {
	var n int64
	for i := range u.shards {
		n += u.shards[i].tasks.Load()
	}
	return n
}

// counted reports whether the user's tasks count for RLIMIT_NPROC.
func (u *User) counted() bool { return u.uid != 0 }

// user returns the object for uid, creating it on first use.
func (k *Kernel) user(uid uint32) *User {
	if u, ok := k.users.Load(uid); ok {
		return u.(*User)
	}
	nu := &User{uid: uid}
	for i := range nu.shards {
		// Keys order the shards of one user, and users by uid.
		nu.shards[i].mu.Init(userClass, uint64(uid)*userShards+uint64(i)+1)
	}
	u, _ := k.users.LoadOrStore(uid, nu)
	return u.(*User)
}

// findUser returns the object for uid if it exists (find_user), or nil.
func (k *Kernel) findUser(uid uint32) *User {
	if u, ok := k.users.Load(uid); ok {
		return u.(*User)
	}
	return nil
}

// charge counts a new task, to sit in shard i, for RLIMIT_NPROC and
// reports whether the user's count now exceeds limit (the caller then
// uncharges). As in copy_process, the count is raised first and read
// after, so of two forks racing for the last slot at most one passes; an
// unlimited limit (the default) needs no reading, so forks never read
// other shards' counts unless a limit is set.
func (u *User) charge(i uint8, limit uint64) bool {
	if !u.counted() {
		return false
	}
	u.shards[i].tasks.Add(1)
	return limit != RLimInfinity && uint64(u.Tasks()) > limit
}

// uncharge takes back a charge of shard i.
func (u *User) uncharge(i uint8) {
	if u.counted() {
		u.shards[i].tasks.Add(-1)
	}
}

// shardOf returns the shard t, one of the user's members, sits in.
func (u *User) shardOf(t *Task) *userShard { return &u.shards[t.userShard] }

// addMember puts t on the user's member list.
func (u *User) addMember(t *Task) {
	s := u.shardOf(t)
	// The shard's lock guards its list against walks and moves.
	s.mu.Lock()
	s.members.pushBack(t, userLinkOf)
	s.mu.Unlock()
}

// removeMember takes t, a member of the user, off its list.
func (u *User) removeMember(t *Task) {
	s := u.shardOf(t)
	// As in addMember.
	s.mu.Lock()
	s.members.remove(t, userLinkOf)
	s.mu.Unlock()
}

// leaveUser takes a released task off its user's list and drops its charge.
// The task is marked dead first, so a setuid still in progress in its
// call (the model can release a task killed mid-call) no longer moves it.
func (t *Task) leaveUser() {
	for {
		u := t.user.Load()
		s := u.shardOf(t)
		// As in addMember; a setuid that began before the task was
		// marked dead may have moved it meanwhile.
		s.mu.Lock()
		if t.user.Load() != u {
			s.mu.Unlock()
			continue
		}
		s.members.remove(t, userLinkOf)
		s.mu.Unlock()
		u.uncharge(t.userShard)
		return
	}
}

// rlockAll locks every shard of the user for reading, in order, for a
// walk.
//
// +checklocksignore: the shards' locks are taken in a loop, which
// checklocks cannot follow; lockstat checks their order.
func (u *User) rlockAll() {
	for i := range u.shards {
		u.shards[i].mu.RLock()
	}
}

// runlockAll releases what rlockAll took.
//
// +checklocksignore: as for rlockAll.
func (u *User) runlockAll() {
	for i := len(u.shards) - 1; i >= 0; i-- {
		u.shards[i].mu.RUnlock()
	}
}

// eachMemberLocked calls f for every member of the user, shard by shard,
// until f returns false.
//
// Preconditions: every shard of u is locked, at least for reading
// (rlockAll).
//
// +checklocksignore: as for rlockAll.
func (u *User) eachMemberLocked(f func(*Task) bool) {
	for i := range u.shards {
		done := false
		u.shards[i].members.each(userLinkOf, func(t *Task) bool {
			done = !f(t)
			return !done
		})
		if done {
			return
		}
	}
}

// moveUser moves t to user to (set_user): its place on the member lists
// and its RLIMIT_NPROC charge. publish runs while both users' locks are
// held, so that the new real uid becomes visible together with the move.
//
// +checklocksignore: a and b are from and to in uid order, which
// checklocks cannot see.
func (t *Task) moveUser(to *User, publish func()) {
	from := t.user.Load()
	fs, ts := from.shardOf(t), to.shardOf(t)
	a, b := fs, ts
	if to.uid < from.uid {
		a, b = b, a
	}
	// Both lists change at once; the lower uid's lock comes first.
	a.mu.Lock()
	b.mu.Lock()
	if t.state.Load() == taskDead {
		// Killed and released while in the call: leaveUser has taken it
		// off from's list and dropped its charge.
		publish()
		b.mu.Unlock()
		a.mu.Unlock()
		return
	}
	seqMove(t, &fs.members, &ts.members, userLinkOf, false)
	t.user.Store(to)
	publish()
	b.mu.Unlock()
	a.mu.Unlock()
	if to.counted() {
		ts.tasks.Add(1)
	}
	from.uncharge(t.userShard)
}
