package sem

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"tasklist/plan"
)

func TestH1NsemsRange(t *testing.T) { eachLocking(t, testH1NsemsRange) }

func testH1NsemsRange(t *testing.T, lk plan.SemLocking) {
	ns := newNS(lk)
	c := rootCaller()
	for _, n := range []int{-1, 32001} {
		// Checked before the key lookup: a missing key still gives EINVAL.
		_, err := ns.Semget(c, 0x77, n, 0)
		wantErr(t, "semget nsems", err, unix.EINVAL)
	}
}

func TestH2Create(t *testing.T) { eachLocking(t, testH2Create) }

func testH2Create(t *testing.T, lk plan.SemLocking) {
	l := DefaultLimits()
	l.SEMMNS, l.SEMMNI = 5, 2
	ns := NewNamespaceLocking(l, lk)
	c := rootCaller()
	a := mustGet(t, ns, c, unix.IPC_PRIVATE, 1, 0o600)
	b := mustGet(t, ns, c, unix.IPC_PRIVATE, 1, 0o600)
	if a == b {
		t.Fatalf("IPC_PRIVATE returned the same id twice: %d", a)
	}
	_, err := ns.Semget(c, 0x10, 1, 0)
	wantErr(t, "missing key", err, unix.ENOENT)
	_, err = ns.Semget(c, 0x10, 0, unix.IPC_CREAT)
	wantErr(t, "create with nsems 0", err, unix.EINVAL)
	_, err = ns.Semget(c, unix.IPC_PRIVATE, 0, 0)
	wantErr(t, "private with nsems 0", err, unix.EINVAL)
	_, err = ns.Semget(c, 0x10, 1, unix.IPC_CREAT)
	wantErr(t, "SEMMNI", err, unix.ENOSPC)
	mustCtl(t, ns, c, b, 0, unix.IPC_RMID, Semun{})
	_, err = ns.Semget(c, 0x10, 5, unix.IPC_CREAT)
	wantErr(t, "SEMMNS", err, unix.ENOSPC)
	mustGet(t, ns, c, 0x10, 4, unix.IPC_CREAT)
}

func TestH3ExistingKey(t *testing.T) { eachLocking(t, testH3ExistingKey) }

func testH3ExistingKey(t *testing.T, lk plan.SemLocking) {
	ns := newNS(lk)
	owner := userCaller(1000, 1000)
	id := mustGet(t, ns, owner, 0x20, 2, unix.IPC_CREAT|0o640)
	_, err := ns.Semget(owner, 0x20, 3, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
	wantErr(t, "IPC_EXCL", err, unix.EEXIST)
	_, err = ns.Semget(owner, 0x20, 3, 0)
	wantErr(t, "nsems > existing", err, unix.EINVAL)
	other := userCaller(2000, 2000)
	_, err = ns.Semget(other, 0x20, 3, 0o400)
	wantErr(t, "nsems checked before permission", err, unix.EINVAL)
	_, err = ns.Semget(other, 0x20, 1, 0o400)
	wantErr(t, "permission", err, unix.EACCES)
	if got := mustGet(t, ns, other, 0x20, 0, 0); got != id {
		t.Errorf("flags 0 request nothing: got %d, want %d", got, id)
	}
	if got := mustGet(t, ns, userCaller(3000, 1000), 0x20, 1, unix.IPC_CREAT|0o040); got != id {
		t.Errorf("group read: got %d, want %d", got, id)
	}
}

func TestH4NewSet(t *testing.T) { eachLocking(t, testH4NewSet) }

func testH4NewSet(t *testing.T, lk plan.SemLocking) {
	ns := newNS(lk)
	c := userCaller(1000, 100)
	id := mustGet(t, ns, c, 0x30, 3, unix.IPC_CREAT|unix.IPC_EXCL|0o7640)
	var ds SemidDS
	mustCtl(t, ns, c, id, 0, unix.IPC_STAT, Semun{Buf: &ds})
	want := IPCPerm{Key: 0x30, UID: 1000, GID: 100, CUID: 1000, CGID: 100, Mode: 0o640}
	if ds.Perm != want || ds.Nsems != 3 || ds.Otime != 0 || ds.Ctime == 0 {
		t.Errorf("IPC_STAT = %+v, want perm %+v, 3 sems, otime 0", ds, want)
	}
	for i, v := range values(t, ns, id, 3) {
		if v != 0 {
			t.Errorf("value %d = %d, want 0", i, v)
		}
	}
}

func TestH5Ids(t *testing.T) { eachLocking(t, testH5Ids) }

func testH5Ids(t *testing.T, lk plan.SemLocking) {
	ns := newNS(lk)
	c := rootCaller()
	a := mustGet(t, ns, c, unix.IPC_PRIVATE, 1, 0o600)
	b := mustGet(t, ns, c, unix.IPC_PRIVATE, 1, 0o600)
	mustCtl(t, ns, c, a, 0, unix.IPC_RMID, Semun{})
	d := mustGet(t, ns, c, unix.IPC_PRIVATE, 1, 0o600)
	if a != 0 || b != 1 || d != 2 {
		t.Fatalf("ids %d %d %d, want 0 1 2 (cyclic, as on the host)", a, b, d)
	}
	_, err := ns.Semctl(c, a, 0, GETVAL, Semun{})
	wantErr(t, "removed id", err, unix.EINVAL)
	// Cycle through the minimum range until index 0 comes round again.
	for i := 3; i < minCycle; i++ {
		id := mustGet(t, ns, c, unix.IPC_PRIVATE, 1, 0o600)
		mustCtl(t, ns, c, id, 0, unix.IPC_RMID, Semun{})
	}
	e := mustGet(t, ns, c, unix.IPC_PRIVATE, 1, 0o600)
	if e != 1<<15 {
		t.Fatalf("reused index 0 got id %d, want %d (seq 1)", e, 1<<15)
	}
	_, err = ns.Semctl(c, a, 0, GETVAL, Semun{})
	wantErr(t, "stale id with a live index", err, unix.EINVAL)
	var ds SemidDS
	mustCtl(t, ns, c, e, 0, unix.IPC_STAT, Semun{Buf: &ds})
	if ds.Perm.Seq != 1 {
		t.Errorf("seq = %d, want 1", ds.Perm.Seq)
	}
	err = ns.Semop(t.Context(), c, b+1<<15, []Sembuf{op(0, 1, 0)})
	wantErr(t, "semop with a wrong seq", err, unix.EINVAL)
}

func TestH6Ipcperms(t *testing.T) { eachLocking(t, testH6Ipcperms) }

func testH6Ipcperms(t *testing.T, lk plan.SemLocking) {
	ns := newNS(lk)
	creator := userCaller(1000, 100)
	id := mustGet(t, ns, creator, unix.IPC_PRIVATE, 1, 0o046)
	ctx := t.Context()
	read := []Sembuf{op(0, 0, unix.IPC_NOWAIT)}
	write := []Sembuf{op(0, 1, 0), op(0, -1, 0)} // net zero, so reads keep succeeding
	cases := []struct {
		name        string
		c           Caller
		read, write error
	}{
		// The owner class is exclusive: owner bits 0 deny even though
		// group and other bits grant.
		{"owner", creator, unix.EACCES, unix.EACCES},
		{"group by egid", userCaller(2000, 100), nil, unix.EACCES},
		{"group by supplementary", userCaller(2000, 7, 100), nil, unix.EACCES},
		{"other", userCaller(2000, 7), nil, nil},
		{"CAP_IPC_OWNER", Caller{PID: newPID(), Creds: Creds{EUID: 1000, CapEffective: 1 << unix.CAP_IPC_OWNER}}, nil, nil},
	}
	for _, tc := range cases {
		wantErr(t, tc.name+" read", ns.Semop(ctx, tc.c, id, read), tc.read)
		wantErr(t, tc.name+" write", ns.Semop(ctx, tc.c, id, write), tc.write)
	}
	// The owner (not only the creator) gets the owner bits.
	root := rootCaller()
	mustCtl(t, ns, root, id, 0, unix.IPC_SET, Semun{Buf: &SemidDS{Perm: IPCPerm{UID: 3000, GID: 100, Mode: 0o600}}})
	wantErr(t, "new owner", ns.Semop(ctx, userCaller(3000, 9), id, write), nil)
	wantErr(t, "old owner is still the creator", ns.Semop(ctx, creator, id, write), nil)
	wantErr(t, "group after IPC_SET", ns.Semop(ctx, userCaller(2000, 100), id, read), unix.EACCES)
}

// TestLimitsDefaultsAndValidate: WithDefaults fills each zero field with
// Linux's default and leaves the others; Validate names the first field
// out of range in an error wrapping EINVAL.
func TestLimitsDefaultsAndValidate(t *testing.T) {
	got := Limits{SEMMNI: 8, SEMVMX: 100}.WithDefaults()
	want := DefaultLimits()
	want.SEMMNI, want.SEMVMX = 8, 100
	if got != want {
		t.Fatalf("WithDefaults = %+v, want %+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v", got, err)
	}
	for _, tc := range []struct {
		l     Limits
		field string
	}{
		{Limits{SEMMSL: -1}, "SEMMSL"},
		{Limits{SEMMNS: -1}, "SEMMNS"},
		{Limits{SEMOPM: -1}, "SEMOPM"},
		{Limits{SEMMNI: ipcmni + 1}, "SEMMNI"},
		{Limits{SEMVMX: 32768}, "SEMVMX"},
		{Limits{SEMAEM: 32768}, "SEMAEM"},
	} {
		err := tc.l.Validate()
		if !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Validate(%+v) = %v; want EINVAL naming %s", tc.l, err, tc.field)
		}
	}
}
