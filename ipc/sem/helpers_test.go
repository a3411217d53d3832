package sem

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/plan"
)

// tpid is a pid with one number per named pid namespace.
type tpid struct {
	ns  string
	nrs map[string]int
}

func (p *tpid) NrSeenBy(viewer PID) int { return p.nrs[viewer.(*tpid).ns] }

var pidSerial atomic.Int64

func newPID() *tpid {
	return &tpid{ns: "root", nrs: map[string]int{"root": int(pidSerial.Add(1))}}
}

func rootCaller() Caller {
	return Caller{PID: newPID(), Creds: Creds{CapEffective: 1<<unix.CAP_IPC_OWNER | 1<<unix.CAP_SYS_ADMIN}, Undo: NewUndoList()}
}

func userCaller(uid, gid uint32, groups ...uint32) Caller {
	return Caller{PID: newPID(), Creds: Creds{EUID: uid, EGID: gid, Groups: groups}, Undo: NewUndoList()}
}

// design is a locking design, named by what it turns on.
type design struct {
	name string
	lk   plan.SemLocking
}

// lockings are the locking designs of the safe plans (package plan).
var lockings = []design{
	{"fine", plan.SemLocking{}},
	{"setlock+permlock", plan.SemLocking{SetLockOnly: true, PermUnderLock: true}},
	{"setlock", plan.SemLocking{SetLockOnly: true}},
	{"setlock+permlock+wakeall", plan.SemLocking{SetLockOnly: true, PermUnderLock: true, WakeAll: true}},
	{"setlock+wakeall", plan.SemLocking{SetLockOnly: true, WakeAll: true}},
}

// eachLocking runs test under every locking design of lockings, one
// subtest each: every design must give the same results.
func eachLocking(t *testing.T, test func(t *testing.T, lk plan.SemLocking)) {
	for _, m := range lockings {
		t.Run(m.name, func(t *testing.T) { test(t, m.lk) })
	}
}

func newNS(lk plan.SemLocking) *Namespace { return NewNamespaceLocking(DefaultLimits(), lk) }

func mustGet(t *testing.T, ns *Namespace, c Caller, key int32, nsems, flags int) int {
	t.Helper()
	id, err := ns.Semget(c, key, nsems, flags)
	if err != nil {
		t.Fatalf("Semget(%#x, %d, %#o): %v", key, nsems, flags, err)
	}
	return id
}

func ctl(ns *Namespace, c Caller, id, semnum, cmd int, arg Semun) (int, error) {
	return ns.Semctl(c, id, semnum, cmd, arg)
}

func mustCtl(t *testing.T, ns *Namespace, c Caller, id, semnum, cmd int, arg Semun) int {
	t.Helper()
	v, err := ns.Semctl(c, id, semnum, cmd, arg)
	if err != nil {
		t.Fatalf("Semctl(%d, %d, %d): %v", id, semnum, cmd, err)
	}
	return v
}

func values(t *testing.T, ns *Namespace, id, n int) []uint16 {
	t.Helper()
	a := make([]uint16, n)
	mustCtl(t, ns, rootCaller(), id, 0, GETALL, Semun{Array: a})
	return a
}

func wantErr(t *testing.T, what string, got, want error) {
	t.Helper()
	if want == nil && got != nil || want != nil && !errors.Is(got, want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func op(num uint16, o int16, flg int16) Sembuf { return Sembuf{Num: num, Op: o, Flg: flg} }

// async runs a semop in its own goroutine and returns its result channel.
func async(ns *Namespace, ctx context.Context, c Caller, id int, ops ...Sembuf) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- ns.Semop(ctx, c, id, ops) }()
	return ch
}

// waitCount waits until GETNCNT (or GETZCNT) of semnum reaches n.
func waitCount(t *testing.T, ns *Namespace, id, semnum, cmd, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, err := ctl(ns, rootCaller(), id, semnum, cmd, Semun{})
		if err == nil && v == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("count %d of sem %d: got %d (%v), want %d", cmd, semnum, v, err, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func result(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("sleeper did not return")
		return nil
	}
}

func pending(ch <-chan error) bool {
	select {
	case <-ch:
		return false
	case <-time.After(20 * time.Millisecond):
		return true
	}
}

// stranded returns a description of a sleeper that a waker should have
// completed: one whose operations would now proceed or fail. Linux's wake
// logic leaves no such sleeper behind once a critical section ends.
func stranded(s *Set) string {
	s.lockAll()
	defer s.unlockAll()
	return strandedLocked(s)
}

// +checklocks:s.mu
func strandedLocked(s *Set) string {
	queues := []*queue{&s.pendingAlter, &s.pendingConst}
	for i := range s.sems {
		queues = append(queues, &s.sems[i].pendingAlter, &s.sems[i].pendingConst)
	}
	for _, q := range queues {
		for l := q.head.next; l != &q.head; l = l.next {
			if !blocks(s, l.w) {
				return fmt.Sprintf("sleeper %v could proceed", l.w.ops)
			}
		}
	}
	return ""
}

// blocks evaluates w's operations without changing anything and reports
// whether the first one that does not proceed must wait.
func blocks(s *Set, w *waiter) bool {
	vals := map[uint16]int{}
	adj := map[uint16]int{}
	l := s.ns.limits
	for _, o := range w.ops {
		v, ok := vals[o.Num]
		if !ok {
			v = int(s.sems[o.Num].val)
		}
		r := v + int(o.Op)
		if o.Op == 0 && v != 0 || r < 0 {
			return o.Flg&unix.IPC_NOWAIT == 0
		}
		if r > l.SEMVMX {
			return false
		}
		if o.Flg&SEM_UNDO != 0 {
			a, ok := adj[o.Num]
			if !ok {
				a = int(w.undo.adj[o.Num])
			}
			a -= int(o.Op)
			if a < -l.SEMAEM-1 || a > l.SEMAEM {
				return false
			}
			adj[o.Num] = a
		}
		vals[o.Num] = r
	}
	return false
}

func (ns *Namespace) mustObtain(t *testing.T, id int) *Set {
	t.Helper()
	s, err := ns.obtain(id)
	if err != nil {
		t.Fatalf("obtain(%d): %v", id, err)
	}
	return s
}
