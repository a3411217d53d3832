package refmodel

import (
	"context"
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"tasklist/kernel"
)

// The tests here pin behaviour checked on a Linux 6.18 host that the
// kernel package once got wrong. Each asserts that the model does what
// Linux does, then that the kernel package does the same.

func newPair(t *testing.T) (*kernel.Kernel, *Model) {
	t.Helper()
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return k, New(Config{})
}

// must and must2 unwrap results in test set-up; an error there is a
// broken test, so they panic.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Linux's do_wait scans the children list in fork order and reports the
// first zombie, not the first to die (host: fork A, fork B, B exits, A
// exits, wait() returns A).
func TestWaitReportsInChildrenListOrder(t *testing.T) {
	k, m := newPair(t)
	init := k.Init()
	a := must(init.Fork())
	b := must(init.Fork())
	ok(t, b.Exit(2))
	ok(t, a.Exit(1))
	k.Quiesce()
	ra, _ := must2(m.Clone(1, 0, int(unix.SIGCHLD)))
	rb, _ := must2(m.Clone(1, 0, int(unix.SIGCHLD)))
	ok(t, m.Exit(rb, 2))
	ok(t, m.Exit(ra, 1))
	want := must(m.Wait4(1, -1, unix.WNOHANG))
	if want.Pid != 2 || want.Status != 1<<8 {
		t.Fatalf("model reports %+v, Linux reports pid 2 status 0x100", want)
	}
	got := must(init.Wait4(context.Background(), -1, unix.WNOHANG))
	if got.Pid != want.Pid {
		t.Fatalf("wait4(-1) reports the child that became a zombie first (pid %d); "+
			"Linux scans the children list in order and reports pid %d", got.Pid, want.Pid)
	}
}

func must2(a, b int, err error) (int, int) {
	if err != nil {
		panic(err)
	}
	return a, b
}

// A zombie has nothing to report to a waitid without WEXITED, so it does
// not keep notask_error at 0: with only zombie children the call fails
// with ECHILD (host: waitid(P_ALL, WSTOPPED|WNOHANG) → ECHILD).
func TestWaitidWithoutWEXITEDOnZombiesIsECHILD(t *testing.T) {
	k, m := newPair(t)
	init := k.Init()
	a := must(init.Fork())
	ok(t, a.Exit(3))
	k.Quiesce()
	ra, _ := must2(m.Clone(1, 0, int(unix.SIGCHLD)))
	ok(t, m.Exit(ra, 3))
	const opts = unix.WSTOPPED | unix.WNOHANG
	if _, err := m.Waitid(1, unix.P_ALL, 0, opts); !errors.Is(err, unix.ECHILD) {
		t.Fatalf("model: %v, Linux: ECHILD", err)
	}
	if r, err := init.Waitid(context.Background(), unix.P_ALL, 0, opts); !errors.Is(err, unix.ECHILD) {
		t.Fatalf("waitid(P_ALL, WSTOPPED|WNOHANG) with only a zombie child returns %+v, %v; Linux: ECHILD", r, err)
	}
}

// commit_creds clears the parent-death signal when the euid (or egid,
// fsuid, fsgid) changes (host: PR_GET_PDEATHSIG reads 0 after
// setresuid(-1, 1000, -1), and stays set after a ruid- or suid-only change).
func TestEUIDChangeClearsPdeathsig(t *testing.T) {
	k, m := newPair(t)
	a := must(k.Init().Fork())
	ok(t, a.PrctlSetPdeathsig(int(unix.SIGUSR1)))
	ok(t, a.Setresuid(-1, 1000, -1))
	ra, _ := must2(m.Clone(1, 0, int(unix.SIGCHLD)))
	ok(t, m.PrctlSetPdeathsig(ra, int(unix.SIGUSR1)))
	ok(t, m.Setresuid(ra, -1, 1000, -1))
	if info, _ := m.Info(ra); info.Pdeath != 0 {
		t.Fatalf("model keeps pdeath signal %d; Linux clears it", info.Pdeath)
	}
	ok(t, m.Setresuid(ra, -1, 0, -1))
	ok(t, m.PrctlSetPdeathsig(ra, int(unix.SIGUSR1)))
	ok(t, m.Setresuid(ra, 2000, -1, 3000))
	if info, _ := m.Info(ra); info.Pdeath != int(unix.SIGUSR1) {
		t.Fatalf("model clears the pdeath signal on a ruid/suid change; Linux keeps it")
	}
	if got := a.PrctlGetPdeathsig(); got != 0 {
		t.Fatalf("the parent-death signal survives an euid change (still %d); Linux clears it in commit_creds", got)
	}
}

// The parent-death signal is sent with SEND_SIG_NOINFO from the exiting
// parent and so passes check_kill_permission: an unprivileged parent whose
// uids match none of the child's cannot kill it (host: parent drops to
// uid 1000, root child with PR_SET_PDEATHSIG(SIGKILL) survives).
func TestPdeathsigNeedsKillPermission(t *testing.T) {
	k, m := newPair(t)
	p := must(k.Init().Fork())
	c := must(p.Fork())
	ok(t, c.PrctlSetPdeathsig(int(unix.SIGKILL)))
	ok(t, p.Setresuid(1000, 1000, 1000))
	ok(t, p.Exit(0))
	k.Quiesce()
	rp, _ := must2(m.Clone(1, 0, int(unix.SIGCHLD)))
	rc, _ := must2(m.Clone(rp, 0, int(unix.SIGCHLD)))
	ok(t, m.PrctlSetPdeathsig(rc, int(unix.SIGKILL)))
	ok(t, m.Setresuid(rp, 1000, 1000, 1000))
	ok(t, m.Exit(rp, 0))
	info, _ := m.Info(rc)
	if !info.Running || info.PPid != 1 || m.PdeathDenied != 1 {
		t.Fatalf("model: child %+v, denied %d; Linux: the child lives on under init", info, m.PdeathDenied)
	}
	if c.Exited() {
		t.Fatal("an unprivileged exiting parent kills its root child with the parent-death signal; " +
			"Linux refuses it (check_kill_permission, EPERM)")
	}
}
