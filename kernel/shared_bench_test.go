package kernel

import (
	"fmt"
	"testing"

	"tasklist/internal/parbench"
	"tasklist/lockstat"
)

// The structures that workers forking, spawning and exiting side by side
// write in common (the census in doc.go), each in a benchmark of its own
// at one and two goroutines. Each goroutine stands for a worker process
// of its own, so its tasks sit in its own shard of whatever is sharded by
// creator; ns/op is wall time per operation of the whole machine.

// benchMember returns a process that joins groups in shard: a stand-in for
// a child of a worker whose creator shard is shard.
func benchMember(shard uint8) *ThreadGroup {
	tg := &ThreadGroup{serial: uint64(shard) + 1}
	tg.leader.Store(&Task{userShard: shard})
	return tg
}

// BenchmarkPgrpJoinLeave is what a fork into a process group and the
// release of that member write in the group: its lock for reading, the
// member list and its counts. The goroutines' members join one group, as
// fork-exit's workers' children join init's.
func BenchmarkPgrpJoinLeave(b *testing.B) {
	defer lockstat.SetChecking(lockstat.SetChecking(false))
	for _, n := range parbench.Counts {
		b.Run(fmt.Sprintf("goroutines=%d", n), func(b *testing.B) {
			e := newEnv(b, Config{})
			g := e.init.tg.pgrp.Load()
			members := make([]*ThreadGroup, n)
			for w := range members {
				members[w] = benchMember(uint8(w + 1))
				members[w].pgrp.Store(g)
			}
			parbench.Split(b, n, func(w, _ int) {
				benchJoin(g, members[w])
				members[w].leavePgrp()
			})
		})
	}
}

// BenchmarkUserCharge is what a fork or a thread spawn and the release of
// the task write in their user: the RLIMIT_NPROC count and the member
// list, in the shard of the task's creator. The goroutines' tasks are one
// user's, as threadspawn's workers are.
func BenchmarkUserCharge(b *testing.B) {
	defer lockstat.SetChecking(lockstat.SetChecking(false))
	for _, n := range parbench.Counts {
		b.Run(fmt.Sprintf("goroutines=%d", n), func(b *testing.B) {
			e := newEnv(b, Config{})
			u := e.k.user(1000)
			tasks := make([]*Task, n)
			for w := range tasks {
				tasks[w] = &Task{userShard: uint8(w + 1)}
			}
			parbench.Split(b, n, func(w, _ int) {
				t := tasks[w]
				u.charge(t.userShard, RLimInfinity)
				u.addMember(t)
				u.removeMember(t)
				u.uncharge(t.userShard)
			})
		})
	}
}

// benchJoin is what linkProcess does to the group a child joins.
func benchJoin(g *ProcessGroup, tg *ThreadGroup) {
	shard := tg.leader.Load().userShard
	g.mu.RLock(shard)
	g.joinPgrpLocked(tg)
	g.mu.RUnlock(shard)
}
