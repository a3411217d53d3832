package sem

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/plan"
)

// TestStress runs semop and semtimedop with SEM_UNDO, exits, SETVAL, SETALL
// and IPC_RMID with re-creation together. Every sleeper must return without
// a cancelled context (IPC_RMID, a waker or its timeout must release it),
// no waker may leave a sleeper that could proceed, and every value stays
// within [0, SEMVMX].
func TestStress(t *testing.T) { eachLocking(t, testStress) }

func testStress(t *testing.T, lk plan.SemLocking) {
	const (
		workers = 6
		iters   = 1000
		nsems   = 4
		key     = 0x5eed
	)
	l := DefaultLimits()
	l.SEMVMX, l.SEMAEM = 8, 5
	ns := NewNamespaceLocking(l, lk)
	root := rootCaller()
	var cur atomic.Int64
	cur.Store(int64(mustGet(t, ns, root, key, nsems, unix.IPC_CREAT|0o600)))

	checkValues := func(id int) {
		a := make([]uint16, nsems)
		if _, err := ns.Semctl(root, id, 0, GETALL, Semun{Array: a}); err != nil {
			return // removed meanwhile
		}
		for i, v := range a {
			if int(v) > l.SEMVMX {
				t.Errorf("value %d = %d above SEMVMX", i, v)
			}
		}
	}

	var wg sync.WaitGroup
	var running atomic.Int32
	running.Store(workers)
	for w := range workers {
		wg.Go(func() {
			defer running.Add(-1)
			r := rand.New(rand.NewPCG(uint64(w), 1))
			c := rootCaller()
			for range iters {
				id := int(cur.Load())
				ops := make([]Sembuf, 1+r.IntN(3))
				mode := r.IntN(3)
				for i := range ops {
					ops[i] = Sembuf{Num: uint16(r.IntN(nsems)), Op: int16(r.IntN(5) - 2)}
					if r.IntN(2) == 0 {
						ops[i].Flg |= SEM_UNDO
					}
					if mode == 0 {
						ops[i].Flg |= unix.IPC_NOWAIT
					}
				}
				var err error
				switch mode {
				case 0, 1:
					err = ns.Semop(context.Background(), c, id, ops)
				default:
					err = ns.Semtimedop(context.Background(), c, id, ops, &unix.Timespec{Nsec: 1e6})
				}
				switch {
				case err == nil, errors.Is(err, unix.EAGAIN), errors.Is(err, unix.ERANGE),
					errors.Is(err, unix.EIDRM), errors.Is(err, unix.EINVAL):
				default:
					t.Errorf("semop %v: %v", ops, err)
				}
				if r.IntN(20) == 0 {
					c.Undo.Release(c.PID)
					c = rootCaller()
				}
			}
			c.Undo.Release(c.PID)
		})
	}

	r := rand.New(rand.NewPCG(99, 2))
	var k int32
	deadline := time.Now().Add(30 * time.Second)
	for running.Load() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d workers still running: a sleeper is stranded", running.Load())
		}
		id := int(cur.Load())
		switch r.IntN(8) {
		case 0:
			// Publish a new set under the other key, then remove the old
			// one under its sleepers and the callers still using its id.
			k++
			cur.Store(int64(mustGet(t, ns, root, key+k%2, nsems, unix.IPC_CREAT|unix.IPC_EXCL|0o600)))
			if _, err := ns.Semctl(root, id, 0, unix.IPC_RMID, Semun{}); err != nil {
				t.Errorf("IPC_RMID: %v", err)
			}
		case 1:
			vals := make([]uint16, nsems)
			for i := range vals {
				vals[i] = uint16(r.IntN(l.SEMVMX + 1))
			}
			if _, err := ns.Semctl(root, id, 0, SETALL, Semun{Array: vals}); err != nil {
				t.Errorf("SETALL: %v", err)
			}
		default:
			if _, err := ns.Semctl(root, id, r.IntN(nsems), SETVAL, Semun{Val: r.IntN(l.SEMVMX + 1)}); err != nil {
				t.Errorf("SETVAL: %v", err)
			}
		}
		checkValues(id)
		if msg := stranded(ns.mustObtain(t, int(cur.Load()))); msg != "" {
			t.Fatal(msg)
		}
		time.Sleep(200 * time.Microsecond)
	}
	wg.Wait()
	id := int(cur.Load())
	checkValues(id)
	for _, cmd := range []int{GETNCNT, GETZCNT} {
		for i := range nsems {
			if n := mustCtl(t, ns, root, id, i, cmd, Semun{}); n != 0 {
				t.Errorf("count %d of sem %d = %d after every worker returned", cmd, i, n)
			}
		}
	}
	s := ns.mustObtain(t, id)
	s.lockAll()
	undos, cc := len(s.undos), s.complexCount
	s.unlockAll()
	if undos != 0 || cc != 0 {
		t.Errorf("after every exit: %d undo entries, complexCount %d; want 0, 0", undos, cc)
	}
}
