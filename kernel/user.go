package kernel

import (
	"sync/atomic"

	"tasklist/lockstat"
)

// User is the per-uid object Linux keeps in user_struct/ucounts: the
// tasks whose real uid it is, for PRIO_USER, and their number, for
// RLIMIT_NPROC.
//
// Its member list is guarded by its own lock. setuid moves a thread from
// one user's list to another's holding both locks (lower uid first) and
// publishes the new credentials inside that section, so a walk under a
// user's lock sees exactly the threads whose real uid is that user's.
type User struct {
	uid uint32
	mu  lockstat.Mutex
	// members are the threads with this real uid, from just before
	// clone publishes them until they are released.
	// +checklocks:mu
	members ilist[Task]
	// tasks counts the members charged for RLIMIT_NPROC; uid 0 is exempt
	// (INIT_USER) and is not counted.
	tasks atomic.Int64
}

func userLinkOf(t *Task) *link[Task] { return &t.userLink }

// Tasks returns how many live tasks have this real uid (uid 0 is exempt
// from RLIMIT_NPROC and is not counted).
func (u *User) Tasks() int64 { return u.tasks.Load() }

// counted reports whether the user's tasks count for RLIMIT_NPROC.
func (u *User) counted() bool { return u.uid != 0 }

// user returns the object for uid, creating it on first use.
func (k *Kernel) user(uid uint32) *User {
	if u, ok := k.users.Load(uid); ok {
		return u.(*User)
	}
	nu := &User{uid: uid}
	nu.mu.Init(userClass, uint64(uid)+1)
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

// charge counts one more task for RLIMIT_NPROC and reports whether the
// count now exceeds limit (the caller then uncharges).
func (u *User) charge(limit uint64) bool {
	return u.counted() && uint64(u.tasks.Add(1)) > limit
}

func (u *User) uncharge() {
	if u.counted() {
		u.tasks.Add(-1)
	}
}

// addMember puts t on the user's member list.
func (u *User) addMember(t *Task) {
	// The user's lock guards its member list against walks and moves.
	u.mu.Lock()
	u.members.pushBack(t, userLinkOf)
	u.mu.Unlock()
}

// leaveUser takes a released task off its user's list and drops its charge.
// The task is marked dead first, so a setuid still in progress in its
// call (the model can release a task killed mid-call) no longer moves it.
func (t *Task) leaveUser() {
	for {
		u := t.user.Load()
		// As in addMember; a setuid that began before the task was
		// marked dead may have moved it meanwhile.
		u.mu.Lock()
		if t.user.Load() != u {
			u.mu.Unlock()
			continue
		}
		u.members.remove(t, userLinkOf)
		u.mu.Unlock()
		u.uncharge()
		return
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
	a, b := from, to
	if b.uid < a.uid {
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
	from.members.remove(t, userLinkOf)
	to.members.pushBack(t, userLinkOf)
	t.user.Store(to)
	publish()
	b.mu.Unlock()
	a.mu.Unlock()
	if to.counted() {
		to.tasks.Add(1)
	}
	from.uncharge()
}
