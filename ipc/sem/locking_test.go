package sem

import (
	"errors"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/lockstat"
	"tasklist/plan"
)

// TestLockingsCoverPresets checks that lockings, the designs every semantic
// test runs under, holds the design of every safe plan: each preset alone
// and with each safe toggle.
func TestLockingsCoverPresets(t *testing.T) {
	for _, pre := range plan.PresetNames() {
		specs := []string{pre}
		for _, tg := range plan.Toggles() {
			if !tg.Unsafe {
				specs = append(specs, pre+","+tg.Name)
			}
		}
		for _, spec := range specs {
			lk := plan.MustParse(spec, false).SemLocking()
			if !slices.ContainsFunc(lockings, func(d design) bool { return d.lk == lk }) {
				t.Errorf("plan %s locks semaphores as %+v, which no test runs under", spec, lk)
			}
		}
	}
}

// TestSetLockOnlyTakesNoSemaphoreLock checks that under SetLockOnly a set
// stays in global mode and no semaphore lock is ever taken (Linux before
// 3.10), while the fine design leaves global mode and takes them.
func TestSetLockOnlyTakesNoSemaphoreLock(t *testing.T) {
	defer lockstat.SetStats(lockstat.SetStats(true))
	for _, m := range lockings {
		t.Run(m.name, func(t *testing.T) {
			ns := newNS(m.lk)
			c := rootCaller()
			id := mustGet(t, ns, c, unix.IPC_PRIVATE, 2, 0o600)
			s := ns.mustObtain(t, id)
			ctx := t.Context()
			before := semClass.Stats().Write.Acquisitions
			for range 3 {
				for range 2 * hysteresis {
					wantErr(t, "single", ns.Semop(ctx, c, id, []Sembuf{op(0, 1, 0)}), nil)
				}
				wantErr(t, "complex", ns.Semop(ctx, c, id, []Sembuf{op(0, -1, 0), op(1, 1, 0)}), nil)
			}
			taken := semClass.Stats().Write.Acquisitions - before
			global := s.useGlobal.Load() != 0
			if m.lk.SetLockOnly && (taken != 0 || !global) {
				t.Errorf("semaphore locks taken %d times, global mode %v; want 0 times, in global mode", taken, global)
			}
			if !m.lk.SetLockOnly && taken == 0 {
				t.Error("the fine design took no semaphore lock")
			}
		})
	}
}

// TestWakeAllLooksAgain checks WakeAll's herd: a change that completes no
// sleeper still wakes every sleeper of the set, each of which takes the
// set lock, finds no outcome and sleeps again, still queued in its place.
func TestWakeAllLooksAgain(t *testing.T) {
	defer lockstat.SetStats(lockstat.SetStats(true))
	const sleepers = 4
	for _, m := range lockings {
		if !m.lk.WakeAll {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			ns := newNS(m.lk)
			c := rootCaller()
			id := mustGet(t, ns, c, unix.IPC_PRIVATE, 2, 0o600)
			ctx := t.Context()
			var chs []<-chan error
			for i := range sleepers {
				chs = append(chs, async(ns, ctx, c, id, op(0, -1, 0)))
				waitCount(t, ns, id, 0, GETNCNT, i+1)
			}
			before := setClass.Stats().Write.Acquisitions
			// A change to the other semaphore: no sleeper can proceed.
			wantErr(t, "change", ns.Semop(ctx, c, id, []Sembuf{op(1, 1, 0)}), nil)
			// The waker's own acquisition, then one per sleeper looking.
			deadline := time.Now().Add(5 * time.Second)
			for setClass.Stats().Write.Acquisitions-before < 1+sleepers {
				if time.Now().After(deadline) {
					t.Fatalf("set lock taken %d times after the change, want at least %d",
						setClass.Stats().Write.Acquisitions-before, 1+sleepers)
				}
				time.Sleep(time.Millisecond)
			}
			// Still asleep, and served in the order they came.
			waitCount(t, ns, id, 0, GETNCNT, sleepers)
			for i, ch := range chs {
				wantErr(t, "unit", ns.Semop(ctx, c, id, []Sembuf{op(0, 1, 0)}), nil)
				wantErr(t, "sleeper", result(t, ch), nil)
				for _, later := range chs[i+1:] {
					if !pending(later) {
						t.Fatalf("sleeper %d served before sleeper %d", i+1, i)
					}
				}
			}
		})
	}
}

// TestPermUnderLockWaitsForTheLock checks where the permission check runs:
// a caller without permission is refused at once while another holds the
// set lock, unless the check runs under that lock (PermUnderLock, before
// seed 003, docs/seeds.md), where the refusal waits for it.
func TestPermUnderLockWaitsForTheLock(t *testing.T) {
	for _, m := range lockings {
		t.Run(m.name, func(t *testing.T) {
			ns := newNS(m.lk)
			id := mustGet(t, ns, rootCaller(), unix.IPC_PRIVATE, 1, 0o600)
			s := ns.mustObtain(t, id)
			user := userCaller(1000, 1000)
			calls := map[string]func() error{
				"semop": func() error { return ns.Semop(t.Context(), user, id, []Sembuf{op(0, 1, 0)}) },
				"semctl": func() error {
					_, err := ns.Semctl(user, id, 0, GETVAL, Semun{})
					return err
				},
			}
			for name, call := range calls {
				ch := make(chan error, 1)
				s.lockAll()
				go func() { ch <- call() }()
				var err error
				if m.lk.PermUnderLock {
					if !pending(ch) {
						s.unlockAll()
						t.Errorf("%s returned while the set lock was held", name)
						continue
					}
					s.unlockAll()
					err = result(t, ch)
				} else {
					err = result(t, ch)
					s.unlockAll()
				}
				wantErr(t, name, err, unix.EACCES)
			}
		})
	}
}

// sleepSignal is a Sleeper that tells when its call has gone to sleep.
type sleepSignal chan struct{}

func (s sleepSignal) Sleeping(func() bool) <-chan struct{} {
	s <- struct{}{}
	return nil
}

func (sleepSignal) Awake() {}

// removalRace races a semop that adds 1 against IPC_RMID of its set, with a
// sleeper waiting for that unit as witness. Linux orders them one way or
// the other: the semop first (it returns 0 and completes the sleeper) or
// IPC_RMID first (the sleeper fails with EIDRM, the semop with EIDRM after
// its lookup or EINVAL before it). It reports whether the semop returned 0
// although the sleeper failed with EIDRM: the semop acted on the set after
// IPC_RMID had removed it.
func removalRace(t *testing.T, ns *Namespace) bool {
	c := rootCaller()
	id := mustGet(t, ns, c, unix.IPC_PRIVATE, 1, 0o600)
	asleep := make(sleepSignal, 1)
	witness := c
	witness.Sleeper = asleep
	slept := async(ns, t.Context(), witness, id, op(0, -1, 0))
	<-asleep
	start := make(chan struct{})
	added := make(chan error, 1)
	go func() {
		<-start
		added <- ns.Semop(t.Context(), c, id, []Sembuf{op(0, 1, 0)})
	}()
	removed := make(chan error, 1)
	go func() {
		<-start
		_, err := ns.Semctl(c, id, 0, unix.IPC_RMID, Semun{})
		removed <- err
	}()
	close(start)
	errAdd, errSleep := result(t, added), result(t, slept)
	wantErr(t, "IPC_RMID", result(t, removed), nil)
	switch {
	case errAdd == nil && errSleep == nil:
	case (errors.Is(errAdd, unix.EIDRM) || errors.Is(errAdd, unix.EINVAL)) && errors.Is(errSleep, unix.EIDRM):
	case errAdd == nil && errors.Is(errSleep, unix.EIDRM):
		return true
	default:
		t.Errorf("semop %v, sleeper %v: neither order gives that", errAdd, errSleep)
	}
	return false
}

// TestRemovalRace runs removalRace under every safe design, where the
// semop must never act on the removed set (unsafetoggles_test.go runs it
// under NoRevalidate, where it must).
func TestRemovalRace(t *testing.T) {
	const safeTries = 300
	for _, m := range lockings {
		t.Run(m.name, func(t *testing.T) {
			ns := newNS(m.lk)
			for range safeTries {
				if removalRace(t, ns) {
					t.Fatal("a semop succeeded on a set IPC_RMID had removed")
				}
			}
		})
	}
}
