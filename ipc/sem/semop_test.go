package sem

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/plan"
)

func TestH7SemopErrorOrder(t *testing.T) { eachLocking(t, testH7SemopErrorOrder) }

func testH7SemopErrorOrder(t *testing.T, lk plan.SemLocking) {
	ns := newNS(lk)
	root := rootCaller()
	id := mustGet(t, ns, root, unix.IPC_PRIVATE, 2, 0o600)
	user := userCaller(1000, 1000)
	ctx := t.Context()
	many := make([]Sembuf, 501)
	bad := &unix.Timespec{Sec: -1}
	cases := []struct {
		name    string
		c       Caller
		id      int
		ops     []Sembuf
		timeout *unix.Timespec
		want    error
	}{
		// Linux checks nsops > SEMOPM first (do_semtimedop), so a bad id
		// with too many ops gives E2BIG; the spec text orders them the
		// other way round.
		{"E2BIG before id < 0", root, -1, many, nil, unix.E2BIG},
		{"E2BIG before bad timeout", root, 12345, many, bad, unix.E2BIG},
		{"no ops", root, id, nil, nil, unix.EINVAL},
		{"id < 0", root, -1, []Sembuf{op(0, 1, 0)}, nil, unix.EINVAL},
		{"bad timeout before lookup", root, 12345, []Sembuf{op(0, 1, 0)}, bad, unix.EINVAL},
		{"nsec too large", root, id, []Sembuf{op(0, 1, 0)}, &unix.Timespec{Nsec: 1e9}, unix.EINVAL},
		{"unknown id", root, 12345, []Sembuf{op(9, 1, 0)}, nil, unix.EINVAL},
		{"EFBIG before EACCES", user, id, []Sembuf{op(2, 1, 0)}, nil, unix.EFBIG},
		{"write permission", user, id, []Sembuf{op(0, 1, 0)}, nil, unix.EACCES},
		{"read permission", user, id, []Sembuf{op(0, 0, 0)}, nil, unix.EACCES},
		{"zero timeout times out", root, id, []Sembuf{op(0, -1, 0)}, &unix.Timespec{}, unix.EAGAIN},
	}
	for _, tc := range cases {
		err := ns.Semtimedop(ctx, tc.c, tc.id, tc.ops, tc.timeout)
		wantErr(t, tc.name, err, tc.want)
	}
	// EIDRM after the lookup needs an IPC_RMID racing with the call;
	// TestStress provokes such races, TestH10 covers sleepers.
}

func TestH8AllOrNothing(t *testing.T) { eachLocking(t, testH8AllOrNothing) }

func testH8AllOrNothing(t *testing.T, lk plan.SemLocking) {
	ns := newNS(lk)
	c := rootCaller()
	id := mustGet(t, ns, c, unix.IPC_PRIVATE, 3, 0o600)
	ctx := t.Context()
	mustCtl(t, ns, c, id, 0, SETALL, Semun{Array: []uint16{1, 32766, 0}})
	other := rootCaller()
	// The last op would block: nothing is written.
	err := ns.Semop(ctx, other, id, []Sembuf{op(0, -1, 0), op(1, 1, 0), op(2, -1, unix.IPC_NOWAIT)})
	wantErr(t, "blocked at the last op", err, unix.EAGAIN)
	// An op past SEMVMX: ERANGE, nothing written.
	err = ns.Semop(ctx, other, id, []Sembuf{op(0, -1, 0), op(1, 2, 0)})
	wantErr(t, "SEMVMX", err, unix.ERANGE)
	if got := values(t, ns, id, 3); got[0] != 1 || got[1] != 32766 || got[2] != 0 {
		t.Fatalf("values after failed calls = %v, want [1 32766 0]", got)
	}
	// A wait-for-zero op after an increment of the same semaphore sees the
	// increment (operations apply in order).
	err = ns.Semop(ctx, other, id, []Sembuf{op(2, 1, 0), op(2, 0, unix.IPC_NOWAIT)})
	wantErr(t, "zero after increment", err, unix.EAGAIN)
	wantErr(t, "zero before increment", ns.Semop(ctx, other, id, []Sembuf{op(2, 0, 0), op(2, 1, 0)}), nil)
	// Success: every touched semaphore records the caller.
	wantErr(t, "success", ns.Semop(ctx, other, id, []Sembuf{op(0, -1, 0), op(1, 1, 0)}), nil)
	for i, want := range []PID{other.PID, other.PID, other.PID} {
		if got := mustCtl(t, ns, c, id, i, GETPID, Semun{}); got != want.NrSeenBy(c.PID) {
			t.Errorf("GETPID %d = %d, want %d", i, got, want.NrSeenBy(c.PID))
		}
	}
}

// TestH8UndoRange checks the adjustment's range at Linux's default SEMAEM:
// arithmetic that every locking design shares, so it runs under one (its
// 65536 calls are slow with lock checking on).
func TestH8UndoRange(t *testing.T) {
	ns := NewNamespace(DefaultLimits())
	c := rootCaller()
	ctx := t.Context()
	// SEM_UNDO: the adjustment must stay within [-32768, 32767].
	u := mustGet(t, ns, c, unix.IPC_PRIVATE, 1, 0o600)
	n := 0
	var err error
	for ; n < 40000; n++ {
		if err = ns.Semop(ctx, c, u, []Sembuf{op(0, 1, SEM_UNDO)}); err != nil {
			break
		}
		if err := ns.Semop(ctx, c, u, []Sembuf{op(0, -1, 0)}); err != nil {
			t.Fatal(err)
		}
	}
	if n != 32768 {
		t.Errorf("SEM_UNDO increments before ERANGE = %d (%v), want 32768 as on the host", n, err)
	}
	wantErr(t, "undo range", err, unix.ERANGE)
}

func TestH9FirstBlockingOpDecides(t *testing.T) { eachLocking(t, testH9FirstBlockingOpDecides) }

func testH9FirstBlockingOpDecides(t *testing.T, lk plan.SemLocking) {
	ns := newNS(lk)
	c := rootCaller()
	id := mustGet(t, ns, c, unix.IPC_PRIVATE, 2, 0o600)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// The first op that cannot proceed has IPC_NOWAIT: EAGAIN.
	wantErr(t, "nowait first", ns.Semop(ctx, c, id, []Sembuf{op(0, -1, unix.IPC_NOWAIT), op(1, -1, 0)}), unix.EAGAIN)
	// The first has none: the caller sleeps although a later op has it.
	ch := async(ns, ctx, c, id, op(0, -1, 0), op(1, -1, unix.IPC_NOWAIT))
	waitCount(t, ns, id, 0, GETNCNT, 1)
	// Once semaphore 0 is raised the sleeper is retried and now blocks at
	// op 1, which has IPC_NOWAIT: it fails with EAGAIN (as on the host).
	wantErr(t, "raise", ns.Semop(ctx, c, id, []Sembuf{op(0, 1, 0)}), nil)
	wantErr(t, "sleeper", result(t, ch), unix.EAGAIN)
	if got := values(t, ns, id, 2); got[0] != 1 || got[1] != 0 {
		t.Errorf("values = %v, want [1 0]", got)
	}
}

func TestH10SleepersCompletedByWaker(t *testing.T) { eachLocking(t, testH10SleepersCompletedByWaker) }

func testH10SleepersCompletedByWaker(t *testing.T, lk plan.SemLocking) {
	ns := newNS(lk)
	c := rootCaller()
	id := mustGet(t, ns, c, unix.IPC_PRIVATE, 1, 0o600)
	ctx := t.Context()
	sleeper := rootCaller()
	ch := async(ns, ctx, sleeper, id, op(0, -2, 0))
	waitCount(t, ns, id, 0, GETNCNT, 1)
	wantErr(t, "waker", ns.Semop(ctx, c, id, []Sembuf{op(0, 3, 0)}), nil)
	// The waker applied the sleeper's decrement before returning.
	if v := mustCtl(t, ns, c, id, 0, GETVAL, Semun{}); v != 1 {
		t.Errorf("value right after the waker returned = %d, want 1", v)
	}
	if p := mustCtl(t, ns, c, id, 0, GETPID, Semun{}); p != sleeper.PID.NrSeenBy(c.PID) {
		t.Errorf("GETPID = %d, want the sleeper's pid", p)
	}
	wantErr(t, "sleeper", result(t, ch), nil)

	// Cancellation plays the signal: EINTR, and the sleeper leaves its queue.
	cctx, cancel := context.WithCancel(ctx)
	ch = async(ns, cctx, c, id, op(0, -5, 0))
	waitCount(t, ns, id, 0, GETNCNT, 1)
	cancel()
	wantErr(t, "cancelled", result(t, ch), unix.EINTR)
	waitCount(t, ns, id, 0, GETNCNT, 0)

	// Timeout: EAGAIN after the deadline, not before.
	start := time.Now()
	err := ns.Semtimedop(ctx, c, id, []Sembuf{op(0, -5, 0)}, &unix.Timespec{Nsec: 30e6})
	wantErr(t, "timeout", err, unix.EAGAIN)
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("timed out after %v, want at least 30ms", d)
	}

	// IPC_RMID fails every sleeper, single-op and complex, with EIDRM.
	id2 := mustGet(t, ns, c, unix.IPC_PRIVATE, 2, 0o600)
	chs := []<-chan error{
		async(ns, ctx, c, id2, op(0, -1, 0)),
		async(ns, ctx, c, id2, op(1, 0, 0), op(0, -1, 0)),
		async(ns, ctx, c, id2, op(0, 0, 0), op(1, -1, SEM_UNDO)),
	}
	waitCount(t, ns, id2, 0, GETNCNT, 2)
	waitCount(t, ns, id2, 1, GETNCNT, 1)
	mustCtl(t, ns, c, id2, 0, unix.IPC_RMID, Semun{})
	for i, ch := range chs {
		wantErr(t, "rmid sleeper "+string(rune('0'+i)), result(t, ch), unix.EIDRM)
	}
}

// TestH11H13WakeOrder: which sleepers an operation completes, and in
// which order. Each case sets the values, queues its sleepers one after
// the other, then makes its operations, after each of which the sleepers
// it names must have returned 0 and the others must still sleep.
func TestH11H13WakeOrder(t *testing.T) {
	// queued is a sleeper: its operations, and the count (GETNCNT or
	// GETZCNT of a semaphore) that reaches n once it sleeps.
	type queued struct {
		ops         []Sembuf
		num, cmd, n int
	}
	// step is an operation that must succeed, and the sleepers it wakes.
	type step struct {
		ops  []Sembuf
		woke []int
	}
	for _, tc := range []struct {
		name     string
		vals     []uint16
		sleepers []queued
		steps    []step
	}{
		{"H11 a newcomer that can proceed goes ahead of an older sleeper", []uint16{1, 0},
			[]queued{{[]Sembuf{op(0, -2, 0)}, 0, GETNCNT, 1}},
			[]step{{[]Sembuf{op(0, -1, unix.IPC_NOWAIT)}, nil}, {[]Sembuf{op(0, 2, 0)}, []int{0}}}},
		{"H13 decrements are served in FIFO order", []uint16{0, 0},
			[]queued{{[]Sembuf{op(0, -1, 0)}, 0, GETNCNT, 1}, {[]Sembuf{op(0, -1, 0)}, 0, GETNCNT, 2}},
			[]step{{[]Sembuf{op(0, 1, 0)}, []int{0}}, {[]Sembuf{op(0, 1, 0)}, []int{1}}}},
		{"H13 wait-for-zero sleepers, single and complex, wake when a decrement reaches zero", []uint16{0, 2},
			[]queued{{[]Sembuf{op(1, 0, 0)}, 1, GETZCNT, 1}, {[]Sembuf{op(0, 0, 0), op(1, 0, 0)}, 1, GETZCNT, 2}},
			[]step{{[]Sembuf{op(1, -1, 0)}, nil}, {[]Sembuf{op(1, -1, 0)}, []int{0, 1}}}},
		{"H13 a complex sleeper queued before a single-op one is served first", []uint16{0, 1},
			[]queued{{[]Sembuf{op(0, -1, 0), op(1, -1, 0)}, 0, GETNCNT, 1}, {[]Sembuf{op(0, -1, 0)}, 0, GETNCNT, 2}},
			[]step{{[]Sembuf{op(0, 1, 0)}, []int{0}}, {[]Sembuf{op(0, 1, 0)}, []int{1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachLocking(t, func(t *testing.T, lk plan.SemLocking) {
				ns := newNS(lk)
				c := rootCaller()
				id := mustGet(t, ns, c, unix.IPC_PRIVATE, len(tc.vals), 0o600)
				ctx := t.Context()
				mustCtl(t, ns, c, id, 0, SETALL, Semun{Array: tc.vals})
				asleep := map[int]<-chan error{}
				for i, q := range tc.sleepers {
					asleep[i] = async(ns, ctx, c, id, q.ops...)
					waitCount(t, ns, id, q.num, q.cmd, q.n)
				}
				for n, st := range tc.steps {
					wantErr(t, fmt.Sprintf("operation %d", n), ns.Semop(ctx, c, id, st.ops), nil)
					for _, i := range st.woke {
						wantErr(t, fmt.Sprintf("sleeper %d after operation %d", i, n), result(t, asleep[i]), nil)
						delete(asleep, i)
					}
					for i, ch := range asleep {
						if !pending(ch) {
							t.Fatalf("sleeper %d returned after operation %d", i, n)
						}
					}
				}
			})
		})
	}
}

func TestGlobalModeHysteresis(t *testing.T) {
	ns := NewNamespace(DefaultLimits())
	c := rootCaller()
	id := mustGet(t, ns, c, unix.IPC_PRIVATE, 2, 0o600)
	s, _ := ns.obtain(id)
	ctx := t.Context()
	if s.useGlobal.Load() == 0 {
		t.Fatal("a new set starts in global mode")
	}
	for range hysteresis {
		wantErr(t, "simple", ns.Semop(ctx, c, id, []Sembuf{op(0, 1, 0)}), nil)
	}
	if g := s.useGlobal.Load(); g != 0 {
		t.Fatalf("after %d simple ops useGlobal = %d, want 0", hysteresis, g)
	}
	wantErr(t, "complex", ns.Semop(ctx, c, id, []Sembuf{op(0, 1, 0), op(1, 1, 0)}), nil)
	if g := s.useGlobal.Load(); g != hysteresis-1 {
		t.Fatalf("after a complex op useGlobal = %d, want %d", g, hysteresis-1)
	}
	// A complex sleeper holds the set in global mode.
	ch := async(ns, ctx, c, id, op(0, 0, 0), op(1, -1000, 0))
	waitCount(t, ns, id, 0, GETZCNT, 1)
	for range 2 * hysteresis {
		wantErr(t, "simple", ns.Semop(ctx, c, id, []Sembuf{op(1, 1, 0)}), nil)
	}
	if g := s.useGlobal.Load(); g == 0 {
		t.Fatal("left global mode with a complex sleeper")
	}
	mustCtl(t, ns, c, id, 0, SETALL, Semun{Array: []uint16{0, 1000}})
	wantErr(t, "complex sleeper", result(t, ch), nil)
}

// TestNilContextIsBackground: a nil context is context.Background for a
// blocking semop and semtimedop: the call sleeps until a waker completes
// it, and does not panic.
func TestNilContextIsBackground(t *testing.T) {
	var nilCtx context.Context // a caller that passes nil
	ns := newNS(plan.SemLocking{})
	c := rootCaller()
	id := mustGet(t, ns, c, unix.IPC_PRIVATE, 1, 0o600)
	calls := map[string]func() error{
		"Semop": func() error { return ns.Semop(nilCtx, c, id, []Sembuf{op(0, -1, 0)}) },
		"Semtimedop": func() error {
			return ns.Semtimedop(nilCtx, c, id, []Sembuf{op(0, -1, 0)}, &unix.Timespec{Sec: 3600})
		},
	}
	for name, call := range calls {
		ch := make(chan error, 1)
		go func() {
			defer func() {
				if r := recover(); r != nil {
					ch <- fmt.Errorf("panic: %v", r)
				}
			}()
			ch <- call()
		}()
		waitCount(t, ns, id, 0, GETNCNT, 1)
		if err := ns.Semop(context.Background(), c, id, []Sembuf{op(0, 1, 0)}); err != nil {
			t.Fatal(err)
		}
		if err := result(t, ch); err != nil {
			t.Errorf("%s with a nil context: %v", name, err)
		}
	}
}
