package kernel

import (
	"golang.org/x/sys/unix"

	"tasklist/plan"
)

// RLimit is one resource limit, as struct rlimit. RLimInfinity means no
// limit.
type RLimit struct {
	Cur, Max uint64
}

// RLimInfinity is RLIM_INFINITY.
const RLimInfinity = ^uint64(0)

// nrLimits is RLIM_NLIMITS.
const nrLimits = 16

// nrOpen is the default fs.nr_open: RLIMIT_NOFILE may not exceed it.
const nrOpen = 1 << 20

// rlimitTable is a process's resource limits. It is immutable once
// published; setrlimit installs a copy.
type rlimitTable [nrLimits]RLimit

// defaultRLimits returns init's limits (INIT_RLIMITS; RLIMIT_NPROC and
// RLIMIT_SIGPENDING are left unlimited where Linux derives them from
// memory).
func defaultRLimits() rlimitTable {
	var l rlimitTable
	for i := range l {
		l[i] = RLimit{RLimInfinity, RLimInfinity}
	}
	l[unix.RLIMIT_STACK] = RLimit{8 << 20, RLimInfinity}
	l[unix.RLIMIT_CORE] = RLimit{0, RLimInfinity}
	l[unix.RLIMIT_NOFILE] = RLimit{1024, 4096}
	l[unix.RLIMIT_MEMLOCK] = RLimit{8 << 20, 8 << 20}
	l[unix.RLIMIT_MSGQUEUE] = RLimit{819200, 819200}
	l[unix.RLIMIT_NICE] = RLimit{0, 0}
	l[unix.RLIMIT_RTPRIO] = RLimit{0, 0}
	return l
}

// Getrlimit returns one of the process's resource limits (getrlimit(2)).
// Errors: ESRCH if the caller has exited; EINVAL for an unknown resource.
func (t *Task) Getrlimit(resource int) (RLimit, error) {
	if !t.alive() {
		return RLimit{}, unix.ESRCH
	}
	return t.doPrlimit(t, resource, nil)
}

// Setrlimit sets one of the process's resource limits (setrlimit(2)).
// Errors: EINVAL for an unknown resource or Cur > Max; EPERM when raising
// the hard limit without CAP_SYS_RESOURCE, or RLIMIT_NOFILE above
// fs.nr_open.
func (t *Task) Setrlimit(resource int, lim RLimit) error {
	if !t.alive() {
		return unix.ESRCH
	}
	_, err := t.doPrlimit(t, resource, &lim)
	return err
}

// Prlimit is prlimit64(2): it returns one of the limits of the process of
// the task whose tid is pid in the caller's namespace (0: the caller)
// and, when lim is not nil, sets it. A zombie's limits can be read and
// set until it is released. A task other than the caller must have the
// caller's real uid as its real, effective and saved uid and the caller's
// real gid as its gids, unless the caller has CAP_SYS_RESOURCE
// (check_prlimit_permission). Errors: ESRCH when no task has the pid;
// EPERM; then Setrlimit's.
func (t *Task) Prlimit(pid int, resource int, lim *RLimit) (RLimit, error) {
	if !t.alive() {
		return RLimit{}, unix.ESRCH
	}
	target := t
	if pid != 0 {
		if target = t.tg.ns.Lookup(pid); target == nil {
			return RLimit{}, unix.ESRCH
		}
	}
	if target != t {
		c, tc := t.creds.Load(), target.creds.Load()
		same := c.UID == tc.EUID && c.UID == tc.SUID && c.UID == tc.UID &&
			c.GID == tc.EGID && c.GID == tc.SGID && c.GID == tc.GID
		if !same && !c.HasCap(unix.CAP_SYS_RESOURCE) {
			return RLimit{}, unix.EPERM
		}
	}
	if target.tg == t.tg {
		return t.doPrlimit(target, resource, lim)
	}
	// A plan's table lock, read: Linux takes tasklist_lock for another
	// process's limits, so that its leader stays the task whose lock
	// guards them, and fails for a task released meanwhile (pid_alive).
	t.k.plan.Lock(plan.Prlimit)
	defer t.k.plan.Unlock(plan.Prlimit)
	if target.state.Load() == taskDead {
		return RLimit{}, unix.ESRCH
	}
	return t.doPrlimit(target, resource, lim)
}

// doPrlimit is do_prlimit: it returns target's process's limit of
// resource (an unsigned int, so a negative one is unknown) and, when lim
// is not nil, sets it, with the caller's capabilities.
func (t *Task) doPrlimit(target *Task, resource int, lim *RLimit) (RLimit, error) {
	if uint32(resource) >= nrLimits {
		return RLimit{}, unix.EINVAL
	}
	resource = int(uint32(resource))
	tg := target.tg
	if lim == nil {
		return tg.rlimits.Load()[resource], nil
	}
	if lim.Cur > lim.Max {
		return RLimit{}, unix.EINVAL
	}
	if resource == unix.RLIMIT_NOFILE && lim.Max > nrOpen {
		return RLimit{}, unix.EPERM
	}
	// The process lock serialises changes of its limits, so that two
	// cannot each publish a copy that loses the other's change.
	tg.mu.Lock()
	defer tg.mu.Unlock()
	cur := tg.rlimits.Load()
	if lim.Max > cur[resource].Max && !t.creds.Load().HasCap(unix.CAP_SYS_RESOURCE) {
		return RLimit{}, unix.EPERM
	}
	next := *cur
	next[resource] = *lim
	tg.rlimits.Store(&next)
	return cur[resource], nil
}
