package check

import (
	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
)

// addRaces adds the races aimed at where the unsafe plans break, each a
// pair of goroutines started at the same instant: a parent's exit against
// its child's PTRACE_TRACEME (seed 000; the seeds are in docs/seeds.md), all pairs at once, so that the
// exits contend for init, which adopts the children; a process's move
// out of its group against a PRIO_PGRP walk of the group, the mover its
// newest member, which the walk visits first (seed 002); and, once a
// sleeper is seen asleep on a set, the set's removal against a semop that
// would wake the sleeper (seed 003): a semop that looked the set up before
// the removal must not act on it after, where it would succeed while the
// sleeper it should have woken fails with EIDRM. The set is then made
// again under its key.
func (b *builder) addRaces() {
	meet, phase := 0, 0
	var sleeperPhases []int
	race := func(a, c []step) {
		meet++
		a[0].rendezvous, c[0].rendezvous = meet, meet
		b.lag(&a[0], &c[0])
		b.s.racers = append(b.s.racers, a, c)
		b.s.phase = append(b.s.phase, phase, phase)
	}
	for _, p := range b.l.pairs {
		part := b.s.parts[p[0]]
		race([]step{{kind: kExit, actor: p[0], part: part}}, []step{{kind: kTraceme, actor: p[1], part: part}})
	}
	racer := 0
	for _, w := range b.l.walks {
		phase++
		from, to := w[0], w[1]
		if b.r.IntN(2) == 0 {
			from, to = to, from
		}
		members := b.l.members[from]
		part := b.s.parts[from]
		walk := step{kind: kSetpriority, actor: b.l.racers[racer], arg: unix.PRIO_PGRP, pid: pidOf(from), arg2: b.nextNice(), part: part}
		racer++
		if b.r.IntN(3) == 0 {
			walk.kind = kGetpriority
		}
		race([]step{{kind: kSetpgid, actor: members[len(members)-1], pid: lit(0), pgid: pidOf(to), part: part}}, []step{walk})
	}
	for i := range b.l.sleeperCount() {
		phase++
		// Each race its own set, which no earlier race removed.
		slot := i % len(b.s.keys)
		sleeper, remover, waker := b.l.racers[racer], b.l.racers[racer+1], b.l.racers[racer+2]
		racer += 3
		sleep := step{kind: kSemop, actor: sleeper, slot: slot, sleeps: true, sops: []sem.Sembuf{{Num: 1, Op: -1}}}
		remove := []step{
			{kind: kSemAsleep, actor: sleeper, watch: len(b.s.sleepers)},
			{kind: kSemctl, actor: remover, slot: slot, arg: unix.IPC_RMID},
		}
		if slot < keyedSlots {
			remove = append(remove, step{kind: kSemget, actor: remover, slot: slot,
				arg: b.s.keys[slot], arg2: setSize, arg3: unix.IPC_CREAT | 0o600})
		}
		wake := []step{{kind: kSemop, actor: waker, slot: slot, sops: []sem.Sembuf{{Num: 1, Op: 1, Flg: unix.IPC_NOWAIT}}}}
		meet++
		remove[1].rendezvous, wake[0].rendezvous = meet, meet
		b.lag(&remove[1], &wake[0])
		b.s.sleepers = append(b.s.sleepers, []step{sleep})
		b.s.racers = append(b.s.racers, remove, wake)
		b.s.phase = append(b.s.phase, phase, phase)
		sleeperPhases = append(sleeperPhases, phase)
	}
	b.s.phase = append(b.s.phase, sleeperPhases...)
}

// lags are the offsets a race's sides start at, in nanoseconds.
var lags = []int{0, 0, 0, 500, 1000, 2000, 4000}

// lag delays one side of a race, drawn at random, by one of lags.
func (b *builder) lag(x, y *step) {
	d := lags[b.r.IntN(len(lags))]
	if b.r.IntN(2) == 0 {
		x.lag = d
	} else {
		y.lag = d
	}
}

func (l layout) sleeperCount() int { return (len(l.racers) - len(l.walks)) / 3 }
