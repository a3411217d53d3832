package kernel

import (
	"golang.org/x/sys/unix"
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

// Getrlimit returns one of the process's resource limits. Errors: ESRCH
// if the caller has exited; EINVAL for an unknown resource.
func (t *Task) Getrlimit(resource int) (RLimit, error) {
	if !t.alive() {
		return RLimit{}, unix.ESRCH
	}
	if resource < 0 || resource >= nrLimits {
		return RLimit{}, unix.EINVAL
	}
	return t.tg.rlimits.Load()[resource], nil
}

// Setrlimit sets one of the process's resource limits (do_prlimit).
// Errors: EINVAL for an unknown resource or Cur > Max; EPERM when raising
// the hard limit without CAP_SYS_RESOURCE, or RLIMIT_NOFILE above
// fs.nr_open.
func (t *Task) Setrlimit(resource int, lim RLimit) error {
	if !t.alive() {
		return unix.ESRCH
	}
	if resource < 0 || resource >= nrLimits || lim.Cur > lim.Max {
		return unix.EINVAL
	}
	if resource == unix.RLIMIT_NOFILE && lim.Max > nrOpen {
		return unix.EPERM
	}
	tg := t.tg
	// The process lock serialises setrlimit calls from its threads, so
	// that two of them cannot each publish a copy that loses the other's
	// change.
	tg.mu.Lock()
	defer tg.mu.Unlock()
	cur := tg.rlimits.Load()
	if lim.Max > cur[resource].Max && !t.creds.Load().HasCap(unix.CAP_SYS_RESOURCE) {
		return unix.EPERM
	}
	next := *cur
	next[resource] = lim
	tg.rlimits.Store(&next)
	return nil
}
