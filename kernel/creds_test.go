package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The capability rules below were checked on Linux 6.18 (capget(2) after
// setuid/setresuid from root, no SECURE_KEEP_CAPS): leaving uid 0 in all
// of real, effective and saved clears permitted and effective; dropping
// only the effective uid clears effective and keeps permitted; regaining
// euid 0 restores effective from permitted.

func wantCaps(t *testing.T, task *Task, eff, prm bool, what string) {
	t.Helper()
	c := task.Creds()
	if (c.CapEffective == allCaps) != eff || (c.CapEffective == 0) == eff ||
		(c.CapPermitted == allCaps) != prm || (c.CapPermitted == 0) == prm {
		t.Fatalf("%s: effective %#x permitted %#x, want full effective %v, full permitted %v",
			what, c.CapEffective, c.CapPermitted, eff, prm)
	}
}

func wantUIDs(t *testing.T, task *Task, r, e, s uint32) {
	t.Helper()
	c := task.Creds()
	if c.UID != r || c.EUID != e || c.SUID != s || c.FSUID != e {
		t.Fatalf("uids %d/%d/%d fs %d, want %d/%d/%d", c.UID, c.EUID, c.SUID, c.FSUID, r, e, s)
	}
}

// TestCredsCapabilityDrop_A7 (host): the capability rules of
// cap_emulate_setxuid, which decide the RLIMIT_NPROC exemption.
func TestCredsCapabilityDrop_A7(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	wantCaps(t, p, true, true, "root")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.Setresuid(-1, 1000, -1))
	wantUIDs(t, p, 0, 1000, 0)
	wantCaps(t, p, false, true, "seteuid(1000)")
	must(p.Setresuid(-1, 0, -1))
	wantCaps(t, p, true, true, "seteuid(0) again")
	must(p.Setresuid(1000, 1000, 0))
	wantCaps(t, p, false, true, "setresuid(1000, 1000, 0)")
	must(p.Setresuid(-1, 0, -1))
	wantUIDs(t, p, 1000, 0, 0)
	wantCaps(t, p, true, true, "euid 0 from saved uid 0")
	must(p.Setuid(1000)) // privileged: all three
	wantUIDs(t, p, 1000, 1000, 1000)
	wantCaps(t, p, false, false, "setuid(1000) from euid 0")
	errIs(t, "setuid(0) unprivileged", p.Setuid(0), unix.EPERM)
	errIs(t, "setresuid to a new uid unprivileged", p.Setresuid(-1, 2000, -1), unix.EPERM)
	errIs(t, "setuid(-1)", p.Setuid(-1), unix.EINVAL)

	// Unprivileged setuid to the saved uid changes only the effective uid
	// and, for uid 0, restores the effective set (host).
	q := e.fork(e.init)
	must(q.Setresuid(1000, 0, 0))
	wantCaps(t, q, true, true, "setresuid(1000, 0, 0)")
	must(q.Setresuid(-1, 1000, -1))
	wantCaps(t, q, false, true, "euid 1000 with saved 0")
	must(q.Setuid(0))
	wantUIDs(t, q, 1000, 0, 0)
	wantCaps(t, q, true, true, "setuid(0) to the saved uid")
	// A no-op setresuid succeeds without privilege checks.
	must(p.Setresuid(1000, 1000, 1000))
	must(p.Setresuid(-1, -1, -1))
	// Unprivileged may shuffle among its current ids.
	r := e.fork(e.init)
	must(r.Setresuid(1, 2, 3))
	wantCaps(t, r, false, false, "setresuid(1, 2, 3)")
	must(r.Setresuid(3, 1, 2))
	wantUIDs(t, r, 3, 1, 2)
	errIs(t, "setresuid to an id not held", r.Setresuid(4, -1, -1), unix.EPERM)

	for _, x := range []*Task{p, q, r} {
		e.exitReaped(e.init, 0, x)
	}
	e.settle()
}

// TestCredsGid: setgid with CAP_SETGID sets all four gids; without it only
// to the real or saved gid, changing the effective and fs gid.
func TestCredsGid(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	mustOK(t, p.Setgid(50))
	if c := p.Creds(); c.GID != 50 || c.EGID != 50 || c.SGID != 50 || c.FSGID != 50 || p.Getgid() != 50 {
		t.Fatalf("gids %+v", c)
	}
	mustOK(t, p.Setresgid(50, 60, 70))
	if err := p.Setuid(1000); err != nil { // drops CAP_SETGID
		t.Fatal(err)
	}
	errIs(t, "setgid to a gid not held", p.Setgid(80), unix.EPERM)
	errIs(t, "setgid(-1)", p.Setgid(-1), unix.EINVAL)
	mustOK(t, p.Setgid(70))
	if c := p.Creds(); c.GID != 50 || c.EGID != 70 || c.SGID != 70 || c.FSGID != 70 || p.Getegid() != 70 {
		t.Fatalf("gids after unprivileged setgid %+v", c)
	}
	errIs(t, "setresgid to a new gid", p.Setresgid(-1, 90, -1), unix.EPERM)
	mustOK(t, p.Setresgid(70, 50, -1))
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestCredsExitedTask: an exited task can make no credential calls.
func TestCredsExitedTask(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	e.exit(p, 0)
	errIs(t, "setuid", p.Setuid(0), unix.ESRCH)
	errIs(t, "setresuid", p.Setresuid(1, 1, 1), unix.ESRCH)
	errIs(t, "setgid", p.Setgid(0), unix.ESRCH)
	errIs(t, "setresgid", p.Setresgid(1, 1, 1), unix.ESRCH)
	e.reap(e.init, -1, 0, p.Getpid(), exited(0))
	e.settle()
}
