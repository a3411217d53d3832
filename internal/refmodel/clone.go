package refmodel

import (
	"golang.org/x/sys/unix"
)

// Clone is clone(2) with legacy semantics (copy_process): flags are
// CLONE_* bits, exitSignal the low byte the caller passes. It returns the
// child's root tid and its pid as the caller sees it.
func (m *Model) Clone(tid int, flags uint64, exitSignal int) (child, seen int, err error) {
	cur := m.task(tid)
	if cur == nil || cur.state != running {
		return 0, 0, unix.ESRCH
	}
	flags &^= 0xff // CSIGNAL
	has := func(f uint64) bool { return flags&f == f }
	pr := cur.proc
	// copy_process's flag checks, in its order.
	switch {
	case has(unix.CLONE_NEWNS | unix.CLONE_FS), has(unix.CLONE_NEWUSER | unix.CLONE_FS):
		return 0, 0, unix.EINVAL
	case has(unix.CLONE_THREAD) && !has(unix.CLONE_SIGHAND):
		return 0, 0, unix.EINVAL
	case has(unix.CLONE_SIGHAND) && !has(unix.CLONE_VM):
		return 0, 0, unix.EINVAL
	case has(unix.CLONE_PARENT) && pr.unkillable:
		return 0, 0, unix.EINVAL
	case has(unix.CLONE_THREAD) && flags&(unix.CLONE_NEWUSER|unix.CLONE_NEWPID) != 0:
		return 0, 0, unix.EINVAL
	case has(unix.CLONE_NEWUSER):
		return 0, 0, unix.EINVAL // user namespaces are not modelled
	case has(unix.CLONE_THREAD) && pr.tracer != nil:
		return 0, 0, ErrNotModelled // Linux traces the caller alone, not its new thread
	}

	// copy_creds charges the child to its real uid, then the limit is
	// checked against the count including it.
	creds := cur.creds
	if creds.UID != 0 && uint64(m.nproc[creds.UID]+1) > pr.rlim[unix.RLIMIT_NPROC].Cur &&
		!creds.hasCap(unix.CAP_SYS_RESOURCE) && !creds.hasCap(unix.CAP_SYS_ADMIN) {
		m.hits["RLIMIT_NPROC"]++
		return 0, 0, unix.EAGAIN
	}
	// Past the check, copy_process clears the caller's
	// PF_NPROC_EXCEEDED; the child copied the caller's flags before.
	inherited := cur.nprocExceeded
	cur.nprocExceeded = false
	if m.cfg.ThreadLimit > 0 && m.nthreads >= m.cfg.ThreadLimit {
		return 0, 0, unix.EAGAIN
	}
	ns := pr.ns
	if has(unix.CLONE_NEWPID) {
		if !creds.hasCap(unix.CAP_SYS_ADMIN) {
			return 0, 0, unix.EPERM
		}
		if ns.level+1 > maxPIDNSLevel {
			return 0, 0, unix.ENOSPC
		}
		ns = m.newNamespace(ns, ns.pidMax)
		m.hits["new pid namespace"]++
	}
	p, err := m.allocPID(ns)
	if err != nil {
		m.hits["alloc_pid "+unix.ErrnoName(err.(unix.Errno))]++
		return 0, 0, err
	}

	t := &task{pid: p, creds: creds, nice: cur.nice, serial: m.next(), nprocExceeded: inherited, blocked: cur.blocked}
	p.task = t
	if has(unix.CLONE_THREAD) {
		t.proc = pr
		pr.threads = append(pr.threads, t)
		pr.live++
	} else {
		np := &process{leader: t, threads: []*task{t}, ns: ns, live: 1, rlim: pr.rlim,
			pgrp: pr.pgrp, sess: pr.sess, joined: m.next(), execSeq: pr.execSeq, nonDumpable: pr.nonDumpable}
		t.proc = np
		if has(unix.CLONE_SIGHAND) {
			np.sighand = pr.sighand
		} else {
			sh := *pr.sighand
			np.sighand = &sh
		}
		if has(unix.CLONE_PARENT) {
			np.parent = pr.parent
			np.exitSignal = pr.exitSignal // the caller's group leader's
			np.parentExecSeq = pr.parentExecSeq
		} else {
			np.parent = cur
			np.exitSignal = exitSignal & 0xff
			np.parentExecSeq = pr.execSeq
		}
		// is_child_reaper: pid 1 of its namespace becomes its init.
		if p.nrs[ns.level] == 1 {
			ns.reaper = t
			np.unkillable = true
		}
		rp := np.parent.proc
		np.hasSub = rp.hasSub || rp.isSub
		np.parent.children = append(np.parent.children, np)
		np.pgrp.pgrps++
		np.sess.sesses++
	}
	if creds.UID != 0 {
		m.nproc[creds.UID]++
	}
	m.nthreads++
	m.tasks[p.nrs[0]] = t
	return p.nrs[0], p.nrIn(pr.ns), nil
}

// Setuid is setuid(2) (__sys_setuid).
func (m *Model) Setuid(tid, uid int) error {
	t := m.task(tid)
	if t == nil || t.state != running {
		return unix.ESRCH
	}
	u := uint32(uid)
	if u == invalidID {
		return unix.EINVAL
	}
	old := t.creds
	c := old
	if old.hasCap(unix.CAP_SETUID) {
		c.UID, c.SUID = u, u
	} else if u != old.UID && u != old.SUID {
		return unix.EPERM
	}
	c.EUID, c.FSUID = u, u
	m.commitUIDs(t, old, c)
	return nil
}

// Setresuid is setresuid(2); -1 leaves an id unchanged.
func (m *Model) Setresuid(tid, ruid, euid, suid int) error {
	t := m.task(tid)
	if t == nil || t.state != running {
		return unix.ESRCH
	}
	old := t.creds
	r, e, s := uint32(ruid), uint32(euid), uint32(suid)
	if (r == invalidID || r == old.UID) && (e == invalidID || (e == old.EUID && e == old.FSUID)) &&
		(s == invalidID || s == old.SUID) {
		return nil
	}
	isNew := func(id uint32) bool {
		return id != invalidID && id != old.UID && id != old.EUID && id != old.SUID
	}
	if (isNew(r) || isNew(e) || isNew(s)) && !old.hasCap(unix.CAP_SETUID) {
		return unix.EPERM
	}
	c := old
	if r != invalidID {
		c.UID = r
	}
	if e != invalidID {
		c.EUID = e
	}
	if s != invalidID {
		c.SUID = s
	}
	c.FSUID = c.EUID
	m.commitUIDs(t, old, c)
	return nil
}

// commitUIDs is cap_emulate_setxuid followed by commit_creds: capabilities
// follow the uids, the RLIMIT_NPROC charge follows the real uid, and a
// change of euid or fsuid clears the parent-death signal. A new real uid
// first marks the task if that user already has more tasks than the
// task's RLIMIT_NPROC (flag_nproc_exceeded, before the charge moves;
// never uid 0), and unmarks it otherwise.
func (m *Model) commitUIDs(t *task, old, c Creds) {
	isRoot := func(c Creds) bool { return c.UID == 0 || c.EUID == 0 || c.SUID == 0 }
	if isRoot(old) && !isRoot(c) {
		c.CapPermitted, c.CapEffective = 0, 0
	}
	if old.EUID == 0 && c.EUID != 0 {
		c.CapEffective = 0
	}
	if old.EUID != 0 && c.EUID == 0 {
		c.CapEffective = c.CapPermitted
	}
	if c.UID != old.UID {
		t.nprocExceeded = c.UID != 0 && uint64(m.nproc[c.UID]) > t.proc.rlim[unix.RLIMIT_NPROC].Cur
		if c.UID != 0 {
			m.nproc[c.UID]++
		}
		if old.UID != 0 {
			m.nproc[old.UID]--
		}
	}
	if c.EUID != old.EUID || c.FSUID != old.FSUID || c.CapPermitted&^old.CapPermitted != 0 {
		t.pdeath = 0
		t.proc.nonDumpable = true // suid_dumpable 0
	}
	t.creds = c
}

// Getrlimit returns one of the caller's process's limits.
func (m *Model) Getrlimit(tid, resource int) (RLimit, error) {
	t := m.task(tid)
	if t == nil {
		return RLimit{}, unix.ESRCH
	}
	if resource < 0 || resource >= nrLimits {
		return RLimit{}, unix.EINVAL
	}
	return t.proc.rlim[resource], nil
}

// Setrlimit is setrlimit(2) (do_prlimit) for the caller's process.
func (m *Model) Setrlimit(tid, resource int, lim RLimit) error {
	t := m.task(tid)
	if t == nil || t.state != running {
		return unix.ESRCH
	}
	if resource < 0 || resource >= nrLimits || lim.Cur > lim.Max {
		return unix.EINVAL
	}
	if resource == unix.RLIMIT_NOFILE && lim.Max > nrOpen {
		return unix.EPERM
	}
	if lim.Max > t.proc.rlim[resource].Max && !t.creds.hasCap(unix.CAP_SYS_RESOURCE) {
		return unix.EPERM
	}
	t.proc.rlim[resource] = lim
	return nil
}

// Sigaction is rt_sigaction(2): it installs act and returns the previous
// action.
func (m *Model) Sigaction(tid, sig int, act SigAction) (SigAction, error) {
	t := m.task(tid)
	if t == nil || t.state != running {
		return SigAction{}, unix.ESRCH
	}
	if sig < 1 || sig > nSig || sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP) ||
		act.Handler < SigDfl || act.Handler > SigHandler {
		return SigAction{}, unix.EINVAL
	}
	old := t.proc.sighand.act[sig]
	t.proc.sighand.act[sig] = act
	return old, nil
}

// PrctlSetChildSubreaper is prctl(PR_SET_CHILD_SUBREAPER). Setting it
// marks every descendant as having a subreaper ancestor
// (walk_process_tree), except below a namespace init and below processes
// already marked.
func (m *Model) PrctlSetChildSubreaper(tid int, on bool) error {
	t := m.task(tid)
	if t == nil || t.state != running {
		return unix.ESRCH
	}
	t.proc.isSub = on
	if !on {
		return nil
	}
	var walk func(pr *process)
	walk = func(pr *process) {
		for _, th := range pr.threads {
			for _, c := range th.children {
				if c.hasSub || c.leader.pid.nrs[c.ns.level] == 1 {
					continue
				}
				c.hasSub = true
				walk(c)
			}
		}
	}
	walk(t.proc)
	return nil
}

// PrctlSetPdeathsig is prctl(PR_SET_PDEATHSIG) for the calling thread.
func (m *Model) PrctlSetPdeathsig(tid, sig int) error {
	t := m.task(tid)
	if t == nil || t.state != running {
		return unix.ESRCH
	}
	if sig < 0 || sig > nSig {
		return unix.EINVAL
	}
	t.pdeath = sig
	return nil
}

// Setsid is setsid(2): the caller's process leads a new session and
// process group named by its tgid.
func (m *Model) Setsid(tid int) (int, error) {
	t := m.task(tid)
	if t == nil || t.state != running {
		return 0, unix.ESRCH
	}
	pr := t.proc
	id := pr.leader.pid
	if id.sesses > 0 || id.pgrps > 0 {
		return 0, unix.EPERM
	}
	pr.pgrp.pgrps--
	pr.sess.sesses--
	oldG, oldS := pr.pgrp, pr.sess
	pr.pgrp, pr.sess = id, id
	pr.joined = m.next()
	id.pgrps++
	id.sesses++
	m.putPID(oldG)
	m.putPID(oldS)
	return id.nrIn(pr.ns), nil
}
