package kernel

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// TestPgrpMembersWalkOrder (E1, E3): a group's members sit in the shards
// of the processes that created them, and a walk merges the shards so
// that it visits them as Linux does, the one that joined last first,
// whether it joined by fork or by setpgid, and whatever shard it sits in.
func TestPgrpMembersWalkOrder(t *testing.T) {
	e := newEnv(t, Config{})
	// Children of different parents land in different shards.
	var parents []*Task
	for range pgrpShards {
		parents = append(parents, e.fork(e.init))
	}
	leader := parents[0]
	if err := leader.Setpgid(0, 0); err != nil {
		t.Fatalf("setpgid: %v", err)
	}
	g := leader.tg.pgrp.Load()
	joined := []*ThreadGroup{leader.tg}
	shards := map[uint8]bool{leader.tg.pgrpShard: true}
	for _, p := range parents {
		// The leader's own child joins by fork, the others' children by
		// setpgid.
		c := e.fork(p)
		if p != leader {
			if err := c.Setpgid(0, leader.Getpid()); err != nil {
				t.Fatalf("setpgid of %d: %v", c.Getpid(), err)
			}
		}
		joined = append(joined, c.tg)
		shards[c.tg.pgrpShard] = true
	}
	if len(shards) < 3 {
		t.Fatalf("the members sit in %d shards; the test needs several", len(shards))
	}
	want := slices.Clone(joined)
	slices.Reverse(want)
	var got []*ThreadGroup
	g.mu.Lock()
	g.members.each(func(m *ThreadGroup) bool {
		got = append(got, m)
		return true
	})
	g.mu.Unlock()
	if !slices.Equal(got, want) {
		t.Fatalf("walk visits %v, want %v (the last to join first)", leaderPids(got), leaderPids(want))
	}
}

func leaderPids(tgs []*ThreadGroup) []int {
	var pids []int
	for _, tg := range tgs {
		pids = append(pids, tg.leader.Load().Getpid())
	}
	return pids
}

// TestPgrpJoinOrderByEpoch: a fork that joins after a walk is newer than
// every member the walk saw, even with a smaller serial (it allocated
// its pid first and joined later); within one epoch the newer process is
// the newer member, and a move is newer than the forks before it and
// older than those after it.
func TestPgrpJoinOrderByEpoch(t *testing.T) {
	var g ProcessGroup
	g.mu.Init(1)
	member := func(serial uint64, shard uint8) *ThreadGroup {
		tg := &ThreadGroup{serial: serial}
		tg.leader.Store(&Task{userShard: shard})
		return tg
	}
	join := func(tg *ThreadGroup) {
		shard := tg.leader.Load().userShard
		g.mu.RLock(shard)
		g.members.join(tg, g.mu.epochLocked())
		g.mu.RUnlock(shard)
	}
	a, b, c, d := member(10, 1), member(20, 2), member(5, 3), member(30, 4)
	join(a)
	join(b) // one epoch with a: the larger serial is newer
	g.mu.Lock()
	g.mu.Unlock() // a walk
	join(c)       // after the walk: newer than a and b despite its serial
	var other ProcessGroup
	other.mu.Init(2)
	moved := member(1, 5)
	other.mu.Lock()
	other.members.join(moved, other.mu.epochLocked())
	other.mu.Unlock()
	g.mu.Lock() // the older group's lock first
	other.mu.Lock()
	other.members.moveTo(moved, &g.members, g.mu.epochLocked())
	other.mu.Unlock()
	g.mu.Unlock()
	join(d)
	want := []*ThreadGroup{d, moved, c, b, a}
	var got []*ThreadGroup
	g.mu.Lock()
	g.members.each(func(m *ThreadGroup) bool {
		got = append(got, m)
		return true
	})
	if n := g.members.count(); n != 5 {
		t.Fatalf("the group counts %d members, want 5", n)
	}
	g.mu.Unlock()
	if !slices.Equal(got, want) {
		serials := func(tgs []*ThreadGroup) (s []uint64) {
			for _, tg := range tgs {
				s = append(s, tg.serial)
			}
			return s
		}
		t.Fatalf("walk visits serials %v, want %v", serials(got), serials(want))
	}
}

// TestPgrpLockShards: readers of different shards hold the group's lock
// at once, while a writer waits for the reader of any shard; the shards
// sit on cache lines of their own.
func TestPgrpLockShards(t *testing.T) {
	if size := unsafe.Sizeof(pgrpLockShard{}); size%64 != 0 {
		t.Fatalf("a lock shard is %d bytes, not whole cache lines", size)
	}
	var m pgrpRWMutex
	m.Init(1)
	m.RLock(3)
	other := make(chan struct{})
	go func() {
		m.RLock(5) // would block forever if readers excluded each other
		m.RUnlock(5)
		close(other)
	}()
	<-other
	var written atomic.Bool
	done := make(chan struct{})
	go func() {
		m.Lock()
		written.Store(true)
		m.Unlock()
		close(done)
	}()
	for range 100 {
		runtime.Gosched()
	}
	if written.Load() {
		t.Fatal("a writer got the lock while shard 3 was read-held")
	}
	m.RUnlock(3)
	<-done
}

// TestPgrpLastLeavesRace: when the last members of a group, in different
// shards, are released at the same moment, exactly one of the releases
// finds the group empty and frees it: with the leader reaped before them,
// moved to another group before them, or released among them.
func TestPgrpLastLeavesRace(t *testing.T) {
	e := newEnv(t, Config{})
	var parents []*Task
	for range 4 {
		parents = append(parents, e.fork(e.init))
	}
	for round := range 150 {
		leader := e.fork(parents[0])
		mustOK(t, leader.Setpgid(0, 0))
		leaving := map[*Task]*Task{}
		for _, p := range parents[1:] {
			c := e.fork(p)
			mustOK(t, c.Setpgid(0, leader.Getpid()))
			leaving[c] = p
		}
		g := leader.tg.pgrp.Load()
		switch round % 3 {
		case 0:
			e.exit(leader, 0)
			e.reap(parents[0], leader.Getpid(), 0, leader.Getpid(), exited(0))
		case 1:
			mustOK(t, leader.Setpgid(0, parents[0].Getpgrp()))
		case 2:
			leaving[leader] = parents[0]
		}
		if g.dead.Load() {
			t.Fatalf("round %d: the group died with members left", round)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for c, p := range leaving {
			wg.Go(func() {
				<-start
				e.exit(c, 0)
				e.reap(p, c.Getpid(), 0, c.Getpid(), exited(0))
			})
		}
		close(start)
		wg.Wait()
		if !g.dead.Load() || g.id.pgrp.Load() != nil {
			t.Fatalf("round %d: the emptied group is still alive", round)
		}
		if round%3 == 1 {
			e.exit(leader, 0)
			e.reap(parents[0], leader.Getpid(), 0, leader.Getpid(), exited(0))
		}
		e.check()
	}
}
