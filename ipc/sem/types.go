package sem

import (
	"fmt"
	"math"

	"golang.org/x/sys/unix"

	"tasklist/internal/abi"
)

// The semop flag and the semctl commands the package implements
// (include/uapi/linux/sem.h; package abi). IPC_NOWAIT, IPC_CREAT, IPC_EXCL,
// IPC_PRIVATE, IPC_RMID, IPC_SET and IPC_STAT come from unix.
const (
	SEM_UNDO = abi.SEM_UNDO // undo the operation when the process exits

	GETPID  = abi.GETPID  // pid of the last operator, as the caller sees it
	GETVAL  = abi.GETVAL  // a semaphore's value
	GETALL  = abi.GETALL  // every value
	GETNCNT = abi.GETNCNT // sleepers waiting for the value to increase
	GETZCNT = abi.GETZCNT // sleepers waiting for the value to be zero
	SETVAL  = abi.SETVAL  // set a semaphore's value
	SETALL  = abi.SETALL  // set every value
)

// ipcmniShift is IPCMNI_SHIFT: an id is seq<<15 | index.
const (
	ipcmniShift = 15
	ipcmni      = 1 << ipcmniShift
	seqMax      = (1<<31 - 1) >> ipcmniShift // ipcid_seq_max
)

// Limits are a namespace's semaphore limits (/proc/sys/kernel/sem, plus
// SEMVMX and SEMAEM, which are constants in Linux).
type Limits struct {
	SEMMSL int // semaphores per set
	SEMMNS int // semaphores in the namespace
	SEMOPM int // operations per semop call
	SEMMNI int // sets in the namespace, at most 32768 (IPCMNI)
	SEMVMX int // largest semaphore value, at most 32767
	SEMAEM int // largest undo adjustment magnitude, at most 32767
}

// DefaultLimits returns Linux's defaults: SEMMSL 32000, SEMMNS
// SEMMNI×SEMMSL, SEMOPM 500, SEMMNI 32000, SEMVMX and SEMAEM 32767.
func DefaultLimits() Limits {
	return Limits{
		SEMMSL: 32000,
		SEMMNS: 32000 * 32000,
		SEMOPM: 500,
		SEMMNI: 32000,
		SEMVMX: 32767,
		SEMAEM: 32767,
	}
}

// WithDefaults returns l with every zero field set to its value in
// DefaultLimits, field by field: a Limits that sets only SEMMNI keeps
// Linux's defaults for the rest. SEMMNS's default is the constant above,
// not derived from the other fields.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	defaults := d.fields()
	for i, f := range l.fields() {
		if *f.val == 0 {
			*f.val = *defaults[i].val
		}
	}
	return l
}

// Validate returns nil if every limit is within what Linux allows, or an
// error wrapping EINVAL that names the first field out of range: a
// negative one, SEMMNI above 32768 (IPCMNI, as sem_check_semmni refuses),
// SEMVMX or SEMAEM above 32767 (the ranges of a semaphore value and of an
// adjustment in the kernel's types).
func (l Limits) Validate() error {
	for _, f := range l.fields() {
		switch {
		case *f.val < 0:
			return fmt.Errorf("sem: %s = %d is negative: %w", f.name, *f.val, unix.EINVAL)
		case *f.val > f.max:
			return fmt.Errorf("sem: %s = %d is above %d: %w", f.name, *f.val, f.max, unix.EINVAL)
		}
	}
	return nil
}

// limitField is one field of a Limits: its name, its address and its
// largest value.
type limitField struct {
	name string
	val  *int
	max  int
}

// fields lists l's fields in declaration order.
func (l *Limits) fields() []limitField {
	return []limitField{
		{"SEMMSL", &l.SEMMSL, math.MaxInt},
		{"SEMMNS", &l.SEMMNS, math.MaxInt},
		{"SEMOPM", &l.SEMOPM, math.MaxInt},
		{"SEMMNI", &l.SEMMNI, ipcmni},
		{"SEMVMX", &l.SEMVMX, 32767},
		{"SEMAEM", &l.SEMAEM, 32767},
	}
}

// PID is a process as the kernel names it (a struct pid). The package keeps
// the PID of the last process to operate on each semaphore and translates
// it only when GETPID asks, so the answer depends on the asker's pid
// namespace, as pid_vnr does.
type PID interface {
	// NrSeenBy returns the number of this pid in the pid namespace of
	// viewer (the namespace viewer's own number was allocated in), or 0 if
	// it is not visible there.
	NrSeenBy(viewer PID) int
}

// Creds are the credentials semaphores look at. Only effective ids matter:
// ipcperms compares the effective uid with the set's owner and creator and
// tests group membership with the effective (file-system) gid and the
// supplementary groups; creation records the effective ids. Linux never
// consults the real ids here.
type Creds struct {
	EUID, EGID uint32
	// Groups are the supplementary groups.
	Groups []uint32
	// CapEffective is a capability bit set (1<<unix.CAP_*); semaphores
	// test CAP_IPC_OWNER and CAP_SYS_ADMIN.
	CapEffective uint64
}

func (c *Creds) hasCap(cap int) bool { return c.CapEffective&(1<<uint(cap)) != 0 }

// inGroup mirrors in_group_p.
func (c *Creds) inGroup(gid uint32) bool {
	if c.EGID == gid {
		return true
	}
	for _, g := range c.Groups {
		if g == gid {
			return true
		}
	}
	return false
}

// Caller describes the process making a call.
type Caller struct {
	// PID is the caller's thread-group pid; it must not be nil. Successful
	// operations record it as the semaphores' last operator.
	PID PID
	// Creds are the caller's credentials.
	Creds Creds
	// Undo is the caller's undo list. It must not be nil when an operation
	// carries SEM_UNDO.
	Undo *UndoList
	// Sleeper, if not nil, is told when the call blocks and when it wakes.
	Sleeper Sleeper
}

// Sleeper lets the caller's owner follow and interrupt a blocking call:
// a process model uses it to tell a blocked task from a running one and to
// interrupt the call when the task is killed.
type Sleeper interface {
	// Sleeping is called before the call blocks. pending reports whether
	// the call's outcome is still undecided (no waker has completed it).
	// Closing the returned channel, if not nil, interrupts the call
	// (EINTR).
	Sleeping(pending func() bool) (interrupt <-chan struct{})
	// Awake is called once the call no longer blocks.
	Awake()
}

// Sembuf is one semaphore operation (struct sembuf).
type Sembuf struct {
	Num uint16 // semaphore index
	Op  int16  // >0 adds, <0 subtracts (may sleep), 0 waits for zero
	Flg int16  // IPC_NOWAIT, SEM_UNDO
}

// IPCPerm is struct ipc64_perm as IPC_STAT reports it.
type IPCPerm struct {
	Key                  int32
	UID, GID, CUID, CGID uint32
	Mode                 uint16
	Seq                  uint16
}

// SemidDS is struct semid64_ds.
type SemidDS struct {
	Perm  IPCPerm
	Otime int64 // last semop time, in seconds since the epoch; 0 if never
	Ctime int64 // last change by semctl, or the creation time
	Nsems int
}

// Semun is semctl's fourth argument.
type Semun struct {
	// Val is SETVAL's value.
	Val int
	// Buf receives IPC_STAT's result and holds IPC_SET's new owner, group
	// and mode. A nil Buf makes those commands fail with EFAULT.
	Buf *SemidDS
	// Array receives GETALL's values and holds SETALL's. It must hold at
	// least as many values as the set has semaphores, else EFAULT.
	Array []uint16
}

// perm is the immutable part of kern_ipc_perm that permission checks read.
// IPC_SET publishes a new one instead of changing it, so a check needs no
// lock.
type perm struct {
	uid, gid, cuid, cgid uint32
	mode                 uint16
}

// allows mirrors ipcperms: flag's three permission triplets are merged into
// one request, checked against the owner bits if the caller's euid is the
// creator or the owner, else against the group bits if it is in the
// creator's or owner's group, else against the other bits. CAP_IPC_OWNER
// overrides.
func (p *perm) allows(c *Creds, flag int) bool {
	requested := (flag>>6 | flag>>3 | flag) & 7
	granted := int(p.mode)
	switch {
	case c.EUID == p.cuid || c.EUID == p.uid:
		granted >>= 6
	case c.inGroup(p.cgid) || c.inGroup(p.gid):
		granted >>= 3
	}
	return requested&^granted&7 == 0 || c.hasCap(unix.CAP_IPC_OWNER)
}

// mayControl mirrors the ownership test of ipcctl_obtain_check (IPC_SET,
// IPC_RMID).
func (p *perm) mayControl(c *Creds) bool {
	return c.EUID == p.cuid || c.EUID == p.uid || c.hasCap(unix.CAP_SYS_ADMIN)
}
