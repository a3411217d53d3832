package check

import (
	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
)

// makeSetup draws the setup: sessions of process groups with distinct
// nice values, some threads, parents with a child that will TRACEME,
// sleepers and semaphore sets.
func (b *builder) makeSetup(workers int) {
	b.l.tasks = 1 // init
	b.l.session = []int{-1}
	b.s.parts = []int{0}
	part := 0
	clone := func(parent ref, flags uint64, sess int) ref {
		sig := int(unix.SIGCHLD)
		if flags != 0 {
			sig = 0
		}
		r := b.add(step{kind: kClone, actor: parent, flags: flags, arg: sig, makesTask: true})
		b.l.session = append(b.l.session, sess)
		b.s.parts = append(b.s.parts, part)
		return r
	}
	fork := func(parent ref, sess int) ref { return clone(parent, 0, sess) }
	for sess := range sessions {
		leader := fork(0, sess)
		b.add(step{kind: kSetsid, actor: leader})
		// The races' processes of the session: root's, like every task
		// but the workers'.
		parent := fork(leader, sess)
		// The workers' processes run as workerUID, so that no call they
		// make, not even kill(-1) or PRIO_USER, reaches another user's
		// tasks: the races' tasks, whose calls are checked apart.
		b.add(step{kind: kSetresuid, actor: leader, arg: workerUID})
		b.l.groups = append(b.l.groups, []ref{leader})
		b.l.members[leader] = []ref{leader}
		procs := []ref{leader}
		for range extraGroups {
			first := fork(leader, sess)
			b.add(step{kind: kSetpgid, actor: first, pid: lit(0), pgid: lit(0)})
			b.l.members[first] = []ref{first}
			procs = append(procs, first)
			n := 1 + b.r.IntN(maxMembers-1)
			// Enough processes for every worker to own one.
			n = max(n, (workers+sessions*extraGroups-1)/(sessions*extraGroups)-1)
			for range n {
				m := fork(leader, sess)
				b.add(step{kind: kSetpgid, actor: m, pid: lit(0), pgid: pidOf(first)})
				b.l.members[first] = append(b.l.members[first], m)
				procs = append(procs, m)
			}
			b.l.groups[sess] = append(b.l.groups[sess], first)
		}
		// By root, which may set any value.
		for _, g := range b.l.groups[sess] {
			b.add(step{kind: kSetpriority, actor: 0, arg: unix.PRIO_PGRP, pid: pidOf(g), arg2: b.nextNice()})
		}
		b.l.procs = append(b.l.procs, procs)
		// Two groups for a walk to race a move over, children of the
		// races' process, so that no worker's call sees them.
		part = b.newPart()
		var walk [2]ref
		for i := range walk {
			walk[i] = fork(parent, sess)
			b.add(step{kind: kSetpgid, actor: walk[i], pid: lit(0), pgid: lit(0)})
			b.l.members[walk[i]] = []ref{walk[i]}
			for range walkMembers - 1 {
				m := fork(parent, sess)
				b.add(step{kind: kSetpgid, actor: m, pid: lit(0), pgid: pidOf(walk[i])})
				b.l.members[walk[i]] = append(b.l.members[walk[i]], m)
			}
			b.add(step{kind: kSetpriority, actor: parent, arg: unix.PRIO_PGRP, pid: pidOf(walk[i]), arg2: b.nextNice()})
		}
		b.l.walks = append(b.l.walks, walk)
		part = 0
		for _, p := range procs {
			if b.r.IntN(4) == 0 {
				b.l.procs[sess] = append(b.l.procs[sess], clone(p, threadFlags, sess))
			}
		}
	}
	for range tracemePairs {
		// A child of init, which waits for no one; the child in a
		// session of its own, which no group signal or setpgid reaches,
		// so that a traced child never stops.
		part = b.newPart()
		parent := fork(0, -1)
		c := fork(parent, -1)
		b.add(step{kind: kSetsid, actor: c})
		b.l.pairs = append(b.l.pairs, [2]ref{parent, c})
		part = 0
	}
	for range sessions + 3*sleeperCount {
		b.l.racers = append(b.l.racers, fork(0, -1))
	}
	for range workers {
		b.l.helpers = append(b.l.helpers, fork(0, -1))
	}
	for i := range keyedSlots + privateSlots {
		key := unix.IPC_PRIVATE
		if i < keyedSlots {
			key = 0x7a50 + i
		}
		b.s.keys = append(b.s.keys, key)
		b.add(step{kind: kSemget, actor: 0, arg: key, arg2: setSize, arg3: unix.IPC_CREAT | 0o600, slot: i})
		if b.r.IntN(2) == 0 {
			// Semaphore 1 stays 0, for a sleeper to wait on.
			b.add(step{kind: kSemctl, actor: 0, slot: i, arg: sem.SETVAL, arg2: 0, arg3: 1})
		}
	}
}

// assignOwners deals the sessions' processes, each with its threads, to
// the workers: only its owner makes calls as a task, as a thread makes
// one system call at a time.
func (b *builder) assignOwners(workers int) [][]ref {
	made := b.creators()
	isThread := func(r ref) bool { return made[r].flags&unix.CLONE_THREAD != 0 }
	owners := make([][]ref, workers)
	w := 0
	for _, procs := range b.l.procs {
		threads := map[ref][]ref{} // by the process that cloned them
		for _, t := range procs {
			if isThread(t) {
				threads[made[t].actor] = append(threads[made[t].actor], t)
			}
		}
		for i, p := range procs {
			if i > 0 && isThread(p) {
				continue
			}
			owners[w] = append(append(owners[w], p), threads[p]...)
			w = (w + 1) % workers
		}
	}
	return owners
}

// creators returns, for each setup task by its ref, the setup step that
// made it (init's is the zero step).
func (b *builder) creators() []step {
	made := []step{{}}
	for _, s := range b.s.setup {
		if s.makesTask {
			made = append(made, s)
		}
	}
	return made
}
