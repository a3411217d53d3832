package sem

import (
	"golang.org/x/sys/unix"
)

// Semctl performs a control operation on the set id (semctl) and returns
// the command's value (0 for commands without one):
//
//   - IPC_STAT fills arg.Buf; needs read permission.
//   - IPC_SET sets the owner uid and gid and the permission bits from
//     arg.Buf; IPC_RMID removes the set, failing every sleeper with EIDRM
//     and discarding every undo adjustment for it. Both need the caller's
//     euid to be the set's creator or owner, or CAP_SYS_ADMIN, else EPERM;
//     IPC_SET fails with EINVAL for the uid or gid 0xffffffff.
//   - GETVAL, GETPID, GETNCNT, GETZCNT need read permission (EACCES), then
//     0 ≤ semnum < nsems (EINVAL). GETPID returns the last operator's pid
//     as the caller's pid namespace sees it (0 if none or invisible).
//     GETNCNT and GETZCNT count the sleepers whose blocking operation is a
//     decrement of, or a wait for zero on, semnum.
//   - GETALL fills arg.Array; SETALL sets every value from it (each at most
//     SEMVMX, else ERANGE, checked after write permission) and zeroes the
//     set's adjustments in every undo list.
//   - SETVAL sets semaphore semnum to arg.Val: a value outside [0, SEMVMX]
//     fails with ERANGE before the set is looked up, semnum is checked
//     (EINVAL) before write permission (EACCES); it zeroes the semaphore's
//     adjustment in every undo list.
//
// Setting values completes the sleepers that can then proceed. Every
// command fails with EINVAL for id < 0, an unknown command (IPC_INFO,
// SEM_INFO, SEM_STAT and SEM_STAT_ANY are not modelled) or no such set,
// and with EIDRM if the set is removed before the command takes effect.
func (ns *Namespace) Semctl(c Caller, id, semnum, cmd int, arg Semun) (int, error) {
	if id < 0 {
		return -1, unix.EINVAL
	}
	switch cmd {
	case unix.IPC_STAT:
		return ns.semctlStat(c, id, arg.Buf)
	case GETALL, GETVAL, GETPID, GETNCNT, GETZCNT, SETALL:
		return ns.semctlMain(c, id, semnum, cmd, arg.Array)
	case SETVAL:
		return ns.semctlSetval(c, id, semnum, arg.Val)
	case unix.IPC_SET:
		if arg.Buf == nil {
			return -1, unix.EFAULT
		}
		return ns.semctlDown(c, id, cmd, arg.Buf.Perm)
	case unix.IPC_RMID:
		return ns.semctlDown(c, id, cmd, IPCPerm{})
	}
	return -1, unix.EINVAL
}

// semctlStat mirrors semctl_stat for IPC_STAT.
func (ns *Namespace) semctlStat(c Caller, id int, buf *SemidDS) (int, error) {
	s, err := ns.obtain(id)
	if err != nil {
		return -1, err
	}
	read, ok := s.access(&c.Creds, 0o444)
	if !ok {
		return -1, unix.EACCES
	}
	s.lockAll()
	if errno := s.checkLocked(read, &c.Creds, 0o444); errno != 0 {
		s.unlockAll()
		return -1, errno
	}
	p := s.perm.Load()
	ds := SemidDS{
		Perm: IPCPerm{
			Key: s.key, UID: p.uid, GID: p.gid, CUID: p.cuid, CGID: p.cgid,
			Mode: p.mode, Seq: uint16(s.id >> ipcmniShift),
		},
		Ctime: s.ctime,
		Nsems: s.nsems,
	}
	for i := range s.sems {
		ds.Otime = max(ds.Otime, s.sems[i].otime)
	}
	s.unlockAll()
	if buf == nil {
		return -1, unix.EFAULT
	}
	*buf = ds
	return 0, nil
}

// semctlMain mirrors semctl_main. The checks that follow the permission
// check (the array, its values, semnum) are made under the set lock, after
// it, so that their order is Linux's whether the permission check runs
// before the lock or under it (PermUnderLock); they read only the
// arguments and the set's size, which never changes.
func (ns *Namespace) semctlMain(c Caller, id, semnum, cmd int, array []uint16) (int, error) {
	s, err := ns.obtain(id)
	if err != nil {
		return -1, err
	}
	want := 0o444
	if cmd == SETALL {
		want = 0o222
	}
	read, ok := s.access(&c.Creds, want)
	if !ok {
		return -1, unix.EACCES
	}
	var wq wakeQ
	// Wake after the set lock is released; the closure sees the final queue.
	defer func() { wq.wake() }()
	s.lockAll()
	defer s.unlockAll()
	if errno := s.checkLocked(read, &c.Creds, want); errno != 0 {
		return -1, errno
	}
	switch cmd {
	case GETALL:
		if len(array) < s.nsems {
			return -1, unix.EFAULT
		}
		for i := range s.sems {
			array[i] = uint16(s.sems[i].val)
		}
		return 0, nil
	case SETALL:
		if len(array) < s.nsems {
			return -1, unix.EFAULT
		}
		for _, v := range array[:s.nsems] {
			if int(v) > ns.limits.SEMVMX {
				return -1, unix.ERANGE
			}
		}
		for i := range s.sems {
			s.sems[i].val = int32(array[i])
			s.sems[i].pid = c.PID
		}
		for un := range s.undos {
			clear(un.adj)
		}
		s.ctime = now()
		s.doSmartUpdateLocked(nil, false, true, &wq)
		return 0, nil
	}
	if semnum < 0 || semnum >= s.nsems {
		return -1, unix.EINVAL
	}
	sm := &s.sems[semnum]
	switch cmd {
	case GETVAL:
		return int(sm.val), nil
	case GETPID:
		if sm.pid == nil {
			return 0, nil
		}
		return sm.pid.NrSeenBy(c.PID), nil
	case GETNCNT:
		return s.countLocked(semnum, false), nil
	default: // GETZCNT
		return s.countLocked(semnum, true), nil
	}
}

// countLocked mirrors count_semcnt.
//
// Preconditions: s.mu is held in global mode.
//
// +checklocks:s.mu
func (s *Set) countLocked(num int, zero bool) int {
	// A semaphore's own queues hold only single-op sleepers blocked on it.
	q := &s.sems[num].pendingAlter
	if zero {
		q = &s.sems[num].pendingConst
	}
	n := 0
	for l := q.head.next; l != &q.head; l = l.next {
		n++
	}
	n += s.pendingAlter.countBlockedOn(num, zero)
	if zero {
		n += s.pendingConst.countBlockedOn(num, zero)
	}
	return n
}

// countBlockedOn mirrors check_qop over q: it counts the sleepers whose
// blocking operation is on semaphore num and waits for zero (zero) or is a
// decrement (!zero).
func (q *queue) countBlockedOn(num int, zero bool) int {
	n := 0
	for l := q.head.next; l != &q.head; l = l.next {
		op := l.w.ops[l.w.blocking]
		if int(op.Num) == num && (zero && op.Op == 0 || !zero && op.Op < 0) {
			n++
		}
	}
	return n
}

// semctlSetval mirrors semctl_setval.
func (ns *Namespace) semctlSetval(c Caller, id, semnum, val int) (int, error) {
	if val < 0 || val > ns.limits.SEMVMX {
		return -1, unix.ERANGE
	}
	s, err := ns.obtain(id)
	if err != nil {
		return -1, err
	}
	if semnum < 0 || semnum >= s.nsems {
		return -1, unix.EINVAL
	}
	read, ok := s.access(&c.Creds, 0o222)
	if !ok {
		return -1, unix.EACCES
	}
	var wq wakeQ
	s.lockAll()
	if errno := s.checkLocked(read, &c.Creds, 0o222); errno != 0 {
		s.unlockAll()
		return -1, errno
	}
	for un := range s.undos {
		un.adj[semnum] = 0
	}
	s.sems[semnum].val = int32(val)
	s.sems[semnum].pid = c.PID
	s.ctime = now()
	s.doSmartUpdateLocked(nil, false, true, &wq)
	s.unlockAll()
	wq.wake()
	return 0, nil
}

// semctlDown mirrors semctl_down for IPC_SET and IPC_RMID.
func (ns *Namespace) semctlDown(c Caller, id, cmd int, in IPCPerm) (int, error) {
	var wq wakeQ
	// Wake after every lock is released; the closure sees the final queue.
	defer func() { wq.wake() }()
	ns.mu.Lock()
	defer ns.mu.Unlock()
	s, err := ns.obtain(id)
	if err != nil {
		return -1, err
	}
	// Namespace.mu keeps the set and its permissions as they are, so the
	// ownership check gives the same answer before the set lock or under
	// it (ipcctl_pre_down before seed 003 (docs/seeds.md), PermUnderLock).
	p := s.perm.Load()
	if !s.lk.PermUnderLock && !p.mayControl(&c.Creds) {
		return -1, unix.EPERM
	}
	s.lockAll()
	defer s.unlockAll()
	if s.lk.PermUnderLock && !p.mayControl(&c.Creds) {
		return -1, unix.EPERM
	}
	if cmd == unix.IPC_RMID {
		ns.rmidLocked(s, &wq)
		return 0, nil
	}
	// ipc_update_perm: the ids must map to valid kernel ids.
	if in.UID == ^uint32(0) || in.GID == ^uint32(0) {
		return -1, unix.EINVAL
	}
	np := *p
	np.uid, np.gid = in.UID, in.GID
	np.mode = p.mode&^0o777 | in.Mode&0o777
	s.perm.Store(&np)
	s.ctime = now()
	return 0, nil
}
