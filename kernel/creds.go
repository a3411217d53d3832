package kernel

import (
	"golang.org/x/sys/unix"
)

// capLast is CAP_LAST_CAP: capabilities are numbered 0..capLast.
const capLast = unix.CAP_CHECKPOINT_RESTORE

// allCaps is the full capability set uid 0 starts with.
const allCaps = uint64(1)<<(capLast+1) - 1

// Creds are a task's credentials. They are immutable once published: a
// change installs a new Creds (commit_creds), so readers take no lock.
type Creds struct {
	UID, EUID, SUID, FSUID uint32
	GID, EGID, SGID, FSGID uint32
	// CapEffective and CapPermitted are capability bit sets (1<<CAP_*).
	CapEffective, CapPermitted uint64
}

// HasCap reports whether cap is in the effective set (capable()).
func (c *Creds) HasCap(cap int) bool { return c.CapEffective&(1<<uint(cap)) != 0 }

func rootCreds() *Creds {
	return &Creds{CapEffective: allCaps, CapPermitted: allCaps}
}

// Creds returns the task's current credentials.
func (t *Task) Creds() Creds { return *t.creds.Load() }

// invalidID is (uid_t)-1: "leave unchanged" for setres*id, invalid
// elsewhere.
const invalidID = ^uint32(0)

// Setuid is setuid(2) (__sys_setuid). With CAP_SETUID it sets the real,
// effective and saved uid; otherwise uid must be the real or saved uid and
// only the effective uid changes. Errors: EINVAL for -1, EPERM.
func (t *Task) Setuid(uid int) error {
	if !t.alive() {
		return unix.ESRCH
	}
	u := uint32(uid)
	if u == invalidID {
		return unix.EINVAL
	}
	old := t.creds.Load()
	c := *old
	switch {
	case old.HasCap(unix.CAP_SETUID):
		c.UID, c.SUID = u, u
	case u != old.UID && u != old.SUID:
		return unix.EPERM
	}
	c.EUID, c.FSUID = u, u
	t.commitUIDs(old, &c)
	return nil
}

// Setresuid is setresuid(2): -1 leaves an id unchanged. Without
// CAP_SETUID every new id must be one of the current real, effective or
// saved uids. Errors: EPERM.
func (t *Task) Setresuid(ruid, euid, suid int) error {
	if !t.alive() {
		return unix.ESRCH
	}
	old := t.creds.Load()
	c := *old
	changed, err := setres([3]*uint32{&c.UID, &c.EUID, &c.SUID}, [3]int{ruid, euid, suid}, old.HasCap(unix.CAP_SETUID))
	if !changed {
		return err
	}
	c.FSUID = c.EUID
	t.commitUIDs(old, &c)
	return nil
}

// setres applies the rule of setresuid and setresgid to one triple of ids
// (real, effective, saved) of a copy of the credentials: -1 leaves an id
// as it is, and without the capability every new id must already be one
// of the three. It reports whether anything changes.
func setres(ids [3]*uint32, want [3]int, capable bool) (changed bool, err error) {
	cur := [3]uint32{*ids[0], *ids[1], *ids[2]}
	for i, w := range want {
		if id := uint32(w); id != invalidID && id != cur[i] {
			changed = true
		}
	}
	if !changed {
		return false, nil
	}
	for _, w := range want {
		if id := uint32(w); id != invalidID && id != cur[0] && id != cur[1] && id != cur[2] && !capable {
			return false, unix.EPERM
		}
	}
	for i, w := range want {
		if id := uint32(w); id != invalidID {
			*ids[i] = id
		}
	}
	return true, nil
}

// commitUIDs applies the capability rules of a uid change
// (cap_emulate_setxuid, without SECURE_KEEP_CAPS) and publishes c; a new
// real uid moves the task to its user (set_user) in the same step.
func (t *Task) commitUIDs(old, c *Creds) {
	hadRoot := old.UID == 0 || old.EUID == 0 || old.SUID == 0
	hasRoot := c.UID == 0 || c.EUID == 0 || c.SUID == 0
	if hadRoot && !hasRoot {
		c.CapPermitted, c.CapEffective = 0, 0
	}
	if old.EUID == 0 && c.EUID != 0 {
		c.CapEffective = 0
	}
	if old.EUID != 0 && c.EUID == 0 {
		c.CapEffective = c.CapPermitted
	}
	if c.UID == old.UID {
		t.commitCreds(old, c)
		return
	}
	to := t.k.user(c.UID)
	t.flagNprocExceeded(to)
	t.moveUser(to, func() { t.commitCreds(old, c) })
}

// flagNprocExceeded is flag_nproc_exceeded for a task about to move to
// user to: set*uid does not fail when the new user already has more tasks
// than the caller's RLIMIT_NPROC allows (too many programs ignore its
// result); it marks the task instead, and its next execve fails. The
// count is taken before the task joins the user, as commit_creds charges
// it afterwards. uid 0 is never marked.
func (t *Task) flagNprocExceeded(to *User) {
	limit := t.tg.rlimits.Load()[unix.RLIMIT_NPROC].Cur
	t.flags.set(flagNprocExceeded, to.counted() && uint64(to.Tasks()) > limit)
}

// checkNprocAtExec is do_execveat_common's recheck of a task that
// set*uid marked: the exec fails with EAGAIN while the task's user still
// has more tasks than its RLIMIT_NPROC allows (zombies count until they
// are released); once it has not, the mark is cleared for good.
func (t *Task) checkNprocAtExec() error {
	if t.flags.has(flagNprocExceeded) {
		u := t.user.Load()
		if u.counted() && uint64(u.Tasks()) > t.tg.rlimits.Load()[unix.RLIMIT_NPROC].Cur {
			return unix.EAGAIN
		}
	}
	t.flags.set(flagNprocExceeded, false)
	return nil
}

// commitCreds publishes new credentials (commit_creds). A change of
// effective or filesystem ids, or a gain of permitted capabilities, clears
// the parent-death signal and makes the process non-dumpable
// (suid_dumpable 0), which only CAP_SYS_PTRACE may trace.
func (t *Task) commitCreds(old, c *Creds) {
	if old.EUID != c.EUID || old.EGID != c.EGID || old.FSUID != c.FSUID || old.FSGID != c.FSGID ||
		c.CapPermitted&^old.CapPermitted != 0 {
		t.pdeathSignal.Store(0)
		t.tg.nonDumpable.Store(true)
	}
	t.creds.Store(c)
}

// Setgid is setgid(2): with CAP_SETGID it sets real, effective and saved
// gid; otherwise gid must be the real or saved gid. Errors: EINVAL, EPERM.
func (t *Task) Setgid(gid int) error {
	if !t.alive() {
		return unix.ESRCH
	}
	g := uint32(gid)
	if g == invalidID {
		return unix.EINVAL
	}
	old := t.creds.Load()
	c := *old
	switch {
	case old.HasCap(unix.CAP_SETGID):
		c.GID, c.EGID, c.SGID, c.FSGID = g, g, g, g
	case g == old.GID || g == old.SGID:
		c.EGID, c.FSGID = g, g
	default:
		return unix.EPERM
	}
	t.commitCreds(old, &c)
	return nil
}

// Setresgid is setresgid(2), with the rules of Setresuid for gids and
// CAP_SETGID.
func (t *Task) Setresgid(rgid, egid, sgid int) error {
	if !t.alive() {
		return unix.ESRCH
	}
	old := t.creds.Load()
	c := *old
	changed, err := setres([3]*uint32{&c.GID, &c.EGID, &c.SGID}, [3]int{rgid, egid, sgid}, old.HasCap(unix.CAP_SETGID))
	if !changed {
		return err
	}
	c.FSGID = c.EGID
	t.commitCreds(old, &c)
	return nil
}

// Getuid, Geteuid, Getgid and Getegid read the task's credentials without
// a lock.
func (t *Task) Getuid() int  { return int(t.creds.Load().UID) }
func (t *Task) Geteuid() int { return int(t.creds.Load().EUID) }
func (t *Task) Getgid() int  { return int(t.creds.Load().GID) }
func (t *Task) Getegid() int { return int(t.creds.Load().EGID) }
