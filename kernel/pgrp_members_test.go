package kernel

import (
	"slices"
	"testing"
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
