package sem

import (
	"testing"

	"golang.org/x/sys/unix"

	"tasklist/plan"
)

func TestH15SemctlErrorOrder(t *testing.T) { eachLocking(t, testH15SemctlErrorOrder) }

func testH15SemctlErrorOrder(t *testing.T, lk plan.SemLocking) {
	ns := newNS(lk)
	root := rootCaller()
	id := mustGet(t, ns, root, unix.IPC_PRIVATE, 2, 0o600)
	user := userCaller(1000, 1000)
	var ds SemidDS
	cases := []struct {
		name   string
		c      Caller
		id     int
		semnum int
		cmd    int
		arg    Semun
		want   error
	}{
		{"id < 0", root, -1, 0, GETVAL, Semun{}, unix.EINVAL},
		{"unknown command", root, id, 0, 9999, Semun{}, unix.EINVAL},
		{"unknown command, unknown id", root, 12345, 0, 9999, Semun{}, unix.EINVAL},
		{"unknown id", root, 12345, 0, GETVAL, Semun{}, unix.EINVAL},
		{"IPC_STAT permission", user, id, 0, unix.IPC_STAT, Semun{Buf: &ds}, unix.EACCES},
		{"IPC_STAT without a buffer", root, id, 0, unix.IPC_STAT, Semun{}, unix.EFAULT},
		{"GETVAL permission before semnum", user, id, 9, GETVAL, Semun{}, unix.EACCES},
		{"GETVAL semnum", root, id, 2, GETVAL, Semun{}, unix.EINVAL},
		{"GETPID semnum < 0", root, id, -1, GETPID, Semun{}, unix.EINVAL},
		{"GETALL short array", root, id, 0, GETALL, Semun{Array: make([]uint16, 1)}, unix.EFAULT},
		{"SETALL permission", user, id, 0, SETALL, Semun{Array: []uint16{1, 40000}}, unix.EACCES},
		{"SETALL range", root, id, 0, SETALL, Semun{Array: []uint16{1, 40000}}, unix.ERANGE},
		{"SETVAL range before lookup", root, 12345, 0, SETVAL, Semun{Val: 40000}, unix.ERANGE},
		{"SETVAL negative", root, id, 0, SETVAL, Semun{Val: -1}, unix.ERANGE},
		{"SETVAL semnum before permission", user, id, 9, SETVAL, Semun{Val: 1}, unix.EINVAL},
		{"SETVAL permission", user, id, 0, SETVAL, Semun{Val: 1}, unix.EACCES},
		{"IPC_RMID by another user", user, id, 0, unix.IPC_RMID, Semun{}, unix.EPERM},
		{"IPC_SET by another user", user, id, 0, unix.IPC_SET, Semun{Buf: &SemidDS{}}, unix.EPERM},
		{"IPC_SET without a buffer", root, id, 0, unix.IPC_SET, Semun{}, unix.EFAULT},
		{"IPC_SET invalid uid", root, id, 0, unix.IPC_SET, Semun{Buf: &SemidDS{Perm: IPCPerm{UID: ^uint32(0)}}}, unix.EINVAL},
	}
	for _, tc := range cases {
		_, err := ns.Semctl(tc.c, tc.id, tc.semnum, tc.cmd, tc.arg)
		wantErr(t, tc.name, err, tc.want)
	}
}

func TestH16IPCSet(t *testing.T) { eachLocking(t, testH16IPCSet) }

func testH16IPCSet(t *testing.T, lk plan.SemLocking) {
	ns := newNS(lk)
	owner := userCaller(1000, 1000)
	id := mustGet(t, ns, owner, 0x40, 1, unix.IPC_CREAT|0o600)
	mustCtl(t, ns, owner, id, 0, unix.IPC_SET, Semun{Buf: &SemidDS{Perm: IPCPerm{UID: 2000, GID: 3000, Mode: 0xffff, CUID: 7}}})
	var ds SemidDS
	mustCtl(t, ns, owner, id, 0, unix.IPC_STAT, Semun{Buf: &ds})
	want := IPCPerm{Key: 0x40, UID: 2000, GID: 3000, CUID: 1000, CGID: 1000, Mode: 0o777}
	if ds.Perm != want {
		t.Errorf("after IPC_SET perm = %+v, want %+v", ds.Perm, want)
	}
	// The new owner may remove it; so may the creator.
	mustCtl(t, ns, userCaller(2000, 1), id, 0, unix.IPC_RMID, Semun{})
	if _, err := ns.Semget(owner, 0x40, 1, 0); err != unix.ENOENT {
		t.Errorf("key after IPC_RMID: %v, want ENOENT", err)
	}
	_, err := ns.Semctl(owner, id, 0, unix.IPC_RMID, Semun{})
	wantErr(t, "second IPC_RMID", err, unix.EINVAL)
}

func TestH17GetpidSeenByCaller(t *testing.T) { eachLocking(t, testH17GetpidSeenByCaller) }

func testH17GetpidSeenByCaller(t *testing.T, lk plan.SemLocking) {
	ns := newNS(lk)
	root := rootCaller()
	id := mustGet(t, ns, root, unix.IPC_PRIVATE, 1, 0o666)
	if p := mustCtl(t, ns, root, id, 0, GETPID, Semun{}); p != 0 {
		t.Errorf("GETPID on a fresh set = %d, want 0", p)
	}
	inner := Caller{PID: &tpid{ns: "child", nrs: map[string]int{"root": 500, "child": 3}}}
	wantErr(t, "semop", ns.Semop(t.Context(), inner, id, []Sembuf{op(0, 1, 0)}), nil)
	if p := mustCtl(t, ns, root, id, 0, GETPID, Semun{}); p != 500 {
		t.Errorf("GETPID from the root namespace = %d, want 500", p)
	}
	if p := mustCtl(t, ns, inner, id, 0, GETPID, Semun{}); p != 3 {
		t.Errorf("GETPID from the child namespace = %d, want 3", p)
	}
	sibling := Caller{PID: &tpid{ns: "other", nrs: map[string]int{"other": 1}}}
	if p := mustCtl(t, ns, sibling, id, 0, GETPID, Semun{}); p != 0 {
		t.Errorf("GETPID from an unrelated namespace = %d, want 0", p)
	}
}

func TestH18CountsByBlockingOp(t *testing.T) { eachLocking(t, testH18CountsByBlockingOp) }

func testH18CountsByBlockingOp(t *testing.T, lk plan.SemLocking) {
	ns := newNS(lk)
	c := rootCaller()
	id := mustGet(t, ns, c, unix.IPC_PRIVATE, 3, 0o600)
	ctx := t.Context()
	mustCtl(t, ns, c, id, 2, SETVAL, Semun{Val: 1})
	// Blocked on semaphore 0 (a decrement); its later ops do not count.
	a := async(ns, ctx, c, id, op(0, -1, 0), op(1, -1, 0))
	// Blocked on semaphore 2 (wait for zero).
	b := async(ns, ctx, c, id, op(2, 0, 0), op(0, 0, 0))
	waitCount(t, ns, id, 0, GETNCNT, 1)
	waitCount(t, ns, id, 2, GETZCNT, 1)
	for _, q := range []struct{ num, cmd, want int }{{1, GETNCNT, 0}, {0, GETZCNT, 0}, {1, GETZCNT, 0}} {
		if got := mustCtl(t, ns, c, id, q.num, q.cmd, Semun{}); got != q.want {
			t.Errorf("count %d of sem %d = %d, want %d", q.cmd, q.num, got, q.want)
		}
	}
	// Raising semaphore 0 moves a's blocking op to semaphore 1.
	wantErr(t, "raise", ns.Semop(ctx, c, id, []Sembuf{op(0, 1, 0)}), nil)
	waitCount(t, ns, id, 1, GETNCNT, 1)
	waitCount(t, ns, id, 0, GETNCNT, 0)
	mustCtl(t, ns, c, id, 0, SETALL, Semun{Array: []uint16{1, 1, 0}})
	wantErr(t, "a", result(t, a), nil)
	wantErr(t, "b", result(t, b), nil)
}

func TestH12Undo(t *testing.T) { eachLocking(t, testH12Undo) }

func testH12Undo(t *testing.T, lk plan.SemLocking) {
	ns := newNS(lk)
	root := rootCaller()
	id := mustGet(t, ns, root, unix.IPC_PRIVATE, 2, 0o600)
	ctx := t.Context()
	mustCtl(t, ns, root, id, 0, SETALL, Semun{Array: []uint16{10, 10}})

	// Shared by CLONE_SYSVSEM: applied once the last sharer releases.
	parent := rootCaller()
	child := Caller{PID: newPID(), Creds: parent.Creds, Undo: parent.Undo.Share()}
	wantErr(t, "parent", ns.Semop(ctx, parent, id, []Sembuf{op(0, -3, SEM_UNDO)}), nil)
	wantErr(t, "child", ns.Semop(ctx, child, id, []Sembuf{op(0, -2, SEM_UNDO), op(1, 4, SEM_UNDO)}), nil)
	parent.Undo.Release(parent.PID)
	if got := values(t, ns, id, 2); got[0] != 5 || got[1] != 14 {
		t.Fatalf("after the first release values = %v, want [5 14]", got)
	}
	child.Undo.Release(child.PID)
	if got := values(t, ns, id, 2); got[0] != 10 || got[1] != 10 {
		t.Fatalf("after the last release values = %v, want [10 10]", got)
	}
	if p := mustCtl(t, ns, root, id, 0, GETPID, Semun{}); p != child.PID.NrSeenBy(root.PID) {
		t.Errorf("GETPID after exit = %d, want the last sharer", p)
	}

	// Clamped to [0, SEMVMX]; the release wakes sleepers and never blocks.
	a := rootCaller()
	wantErr(t, "a", ns.Semop(ctx, a, id, []Sembuf{op(0, -5, SEM_UNDO), op(1, 5, SEM_UNDO)}), nil)
	mustCtl(t, ns, root, id, 0, SETALL, Semun{Array: []uint16{32765, 2}})
	// SETALL zeroed a's adjustments; make new ones.
	wantErr(t, "a again", ns.Semop(ctx, a, id, []Sembuf{op(0, -5, SEM_UNDO), op(1, 2, SEM_UNDO)}), nil)
	wantErr(t, "others", ns.Semop(ctx, root, id, []Sembuf{op(0, 5, 0), op(1, -3, 0)}), nil)
	zero := async(ns, ctx, root, id, op(1, 0, 0))
	waitCount(t, ns, id, 1, GETZCNT, 1)
	a.Undo.Release(a.PID)
	if got := values(t, ns, id, 2); got[0] != 32767 || got[1] != 0 {
		t.Fatalf("clamped values = %v, want [32767 0]", got)
	}
	wantErr(t, "zero waiter woken by exit", result(t, zero), nil)

	// SETVAL zeroes one semaphore's adjustments in every list.
	b, d := rootCaller(), rootCaller()
	mustCtl(t, ns, root, id, 0, SETALL, Semun{Array: []uint16{10, 10}})
	wantErr(t, "b", ns.Semop(ctx, b, id, []Sembuf{op(0, -1, SEM_UNDO), op(1, -1, SEM_UNDO)}), nil)
	wantErr(t, "d", ns.Semop(ctx, d, id, []Sembuf{op(0, -2, SEM_UNDO)}), nil)
	mustCtl(t, ns, root, id, 0, SETVAL, Semun{Val: 7})
	b.Undo.Release(b.PID)
	d.Undo.Release(d.PID)
	if got := values(t, ns, id, 2); got[0] != 7 || got[1] != 10 {
		t.Fatalf("after SETVAL and exits values = %v, want [7 10]", got)
	}

	// IPC_RMID discards adjustments: the release skips the set.
	e := rootCaller()
	wantErr(t, "e", ns.Semop(ctx, e, id, []Sembuf{op(0, -1, SEM_UNDO)}), nil)
	mustCtl(t, ns, root, id, 0, unix.IPC_RMID, Semun{})
	e.Undo.Release(e.PID)
	e.Undo.mu.Lock()
	n := len(e.Undo.entries)
	e.Undo.mu.Unlock()
	if n != 0 {
		t.Errorf("undo list keeps %d entries after IPC_RMID", n)
	}
}
