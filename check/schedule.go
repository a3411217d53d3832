package check

import (
	"math/rand/v2"

	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
)

// A schedule is everything a round does, drawn from the round's seed
// before it runs: the setup, made by one goroutine, and the burst. The
// burst runs the races first, in phases: pairs of goroutines, each making
// a step or two with tasks of their own, the two started at the same
// instant; the sleepers among them make a semop that may sleep until the
// end of the burst. Then the workers make their random steps, all at
// once. The races have the processors to themselves, so that the two
// sides of a race run at the same time. Steps name tasks symbolically (a
// setup task, or the n-th task the goroutine itself made), so a schedule
// replays exactly; only the interleaving differs from run to run.
type schedule struct {
	setup    []step
	workers  [][]step
	racers   [][]step
	sleepers [][]step
	// phase gives each racer's and then each sleeper's phase: a phase
	// starts once the racers of the one before have returned.
	phase []int
	slots []slot // the semaphore sets the setup makes
	// parts gives each setup task the partition of the task calls whose
	// results and final state depend on it: 0 for the workers' tasks, one
	// of its own for each race (see partition).
	parts []int
}

// slot is a semaphore set of the setup; keyed sets can be removed and
// made again under the same key.
type slot struct {
	key   int
	nsems int
}

// setSize is the number of semaphores in every set.
const setSize = 2

// ref names a task in a schedule: a setup task by its index (init is 0),
// or, when negative, the worker's own tasks: -1 the first it cloned, -2
// the second, and so on.
type ref int

// none is the ref of no task: a pidArg with it is its literal.
const none ref = -1 << 30

func child(n int) ref { return ref(-1 - n) }

// pidArg is a pid argument: the pid of a task, negated to name its
// process group where a call takes groups as negative pids, or a literal
// (0, -1) when ref is none.
type pidArg struct {
	ref ref
	lit int
	neg bool
}

func lit(n int) pidArg     { return pidArg{ref: none, lit: n} }
func pidOf(r ref) pidArg   { return pidArg{ref: r} }
func groupOf(r ref) pidArg { return pidArg{ref: r, neg: true} }

// step is a call to make, with symbolic tasks. Its numeric fields are
// call's.
type step struct {
	kind            kind
	actor           ref
	pid, pgid       pidArg
	arg, arg2, arg3 int
	opts            int
	flags           uint64
	slot            int // the semaphore set, for semop and semctl; semget updates it
	sops            []sem.Sembuf
	timed, sleeps   bool
	rendezvous      int // nonzero: start together with the other step of that number
	// lag is how long, in nanoseconds, a step of a race waits after the
	// rendezvous: the races' two sides start at offsets drawn from a few
	// microseconds, as wide as their windows, so that runs sweep them.
	lag       int
	makesTask bool
	part      int // the partition of the call, as for schedule.parts
}

// workerUID is the user the workers' processes run as.
const workerUID = 1000

// Sizes of a round.
const (
	sessions     = 2
	extraGroups  = 2 // process groups per session besides its leader's, for the workers
	maxMembers   = 4 // processes per extra group, at most
	tracemePairs = 8 // parents about to exit, each with a child about to TRACEME
	walkMembers  = 4 // processes in each group a walk races a move out of
	sleeperCount = 2 // tasks that make one blocking semop each, against a removal
	keyedSlots   = 2
	privateSlots = 1
)

// layout is what the setup made, by ref: who is in which session and
// group, and which tasks have a role of their own.
type layout struct {
	tasks   int     // setup tasks, init included
	session []int   // per task: its session's index, -1 for none of them
	groups  [][]ref // per session: the leader of each process group, the session leader's first
	members map[ref][]ref
	procs   [][]ref // per session: each process with its threads, leader first
	pairs   [][2]ref
	// walks are, per session, the groups a move and a walk race over:
	// from's newest member moves to to while a walk visits from.
	walks [][2]ref
	// racers are processes that only racers use: a walk's caller, a
	// removal's caller, a sleeper.
	racers []ref
	// helpers make each worker's semaphore calls: root's processes,
	// which may use every set.
	helpers []ref
}

// builder draws a schedule.
type builder struct {
	parts int // partitions handed out
	r     *rand.Rand
	s     schedule
	l     layout
	nices []int // distinct nice values for setpriority, drawn in turn
}

// newSchedule draws the schedule of a round with the given number of
// workers and steps per worker.
func newSchedule(seed uint64, workers, steps int) schedule {
	b := &builder{r: rand.New(rand.NewPCG(seed, 0x636865636b)), l: layout{members: map[ref][]ref{}}}
	b.nices = b.r.Perm(40)
	b.makeSetup(workers)
	b.s.workers = make([][]step, workers)
	owners := b.assignOwners(workers)
	for w := range workers {
		b.s.workers[w] = b.randomSteps(owners[w], b.l.helpers[w], steps)
	}
	b.addRaces()
	return b.s
}

// newPart returns a new partition number.
func (b *builder) newPart() int {
	b.parts++
	return b.parts
}

func (b *builder) add(s step) ref {
	b.s.setup = append(b.s.setup, s)
	if !s.makesTask {
		return none
	}
	r := ref(b.l.tasks)
	b.l.tasks++
	return r
}

func (b *builder) nextNice() int {
	n := b.nices[0] - 20
	b.nices = append(b.nices[1:], b.nices[0])
	return n
}

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
	for range sessions + 2*sleeperCount {
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
		b.s.slots = append(b.s.slots, slot{key: key, nsems: setSize})
		b.add(step{kind: kSemget, actor: 0, arg: key, arg2: setSize, arg3: unix.IPC_CREAT | 0o600, slot: i})
		if b.r.IntN(2) == 0 {
			b.add(step{kind: kSemctl, actor: 0, slot: i, arg: sem.SETVAL, arg2: b.r.IntN(setSize), arg3: 1})
		}
	}
}

// assignOwners deals the sessions' processes, each with its threads, to
// the workers: only its owner makes calls as a task, as a thread makes
// one system call at a time.
func (b *builder) assignOwners(workers int) [][]ref {
	owners := make([][]ref, workers)
	w := 0
	for _, procs := range b.l.procs {
		for i, p := range procs {
			if i > 0 && b.isThread(p) {
				continue
			}
			owners[w] = append(owners[w], p)
			for _, t := range procs {
				if b.isThread(t) && b.s.setup[b.creator(t)].actor == p {
					owners[w] = append(owners[w], t)
				}
			}
			w = (w + 1) % workers
		}
	}
	return owners
}

// creator returns the index of the setup step that made r.
func (b *builder) creator(r ref) int {
	n := 0
	for i, s := range b.s.setup {
		if s.makesTask {
			n++
			if ref(n) == r {
				return i
			}
		}
	}
	return -1
}

func (b *builder) isThread(r ref) bool { return b.s.setup[b.creator(r)].flags&unix.CLONE_THREAD != 0 }

// actorState is what the builder knows of a worker's tasks while it draws
// its steps.
type actorState struct {
	refs    []ref
	session []int
	exited  []bool
	created int // tasks the worker cloned so far
}

func (a *actorState) pick(r *rand.Rand) (int, bool) {
	var live []int
	for i, e := range a.exited {
		if !e {
			live = append(live, i)
		}
	}
	if len(live) == 0 {
		return 0, false
	}
	return live[r.IntN(len(live))], true
}

// randomSteps draws n steps for a worker owning tasks, whose semaphore
// calls helper makes.
func (b *builder) randomSteps(tasks []ref, helper ref, n int) []step {
	a := &actorState{}
	for _, t := range tasks {
		a.refs = append(a.refs, t)
		a.session = append(a.session, b.l.session[t])
		a.exited = append(a.exited, false)
	}
	var steps []step
	for len(steps) < n {
		i, ok := a.pick(b.r)
		if !ok {
			break
		}
		s, ok := b.randomStep(a, i)
		if ok {
			if s.kind.semaphore() {
				s.actor = helper
			}
			steps = append(steps, s)
		}
	}
	return steps
}

// weights of the random calls, in kind order of randomStep's switch.
var weights = []int{10, 4, 4, 2, 8, 4, 10, 2, 6, 8, 6, 8, 3, 2, 2, 1, 2}

func (b *builder) randomStep(a *actorState, i int) (step, bool) {
	r := b.r
	s := step{actor: a.refs[i]}
	sess := a.session[i]
	groups := b.l.groups[max(sess, 0)]
	someGroup := func() ref { return groups[r.IntN(len(groups))] }
	someTarget := func() pidArg {
		if a.created > 0 && r.IntN(3) == 0 {
			return pidOf(child(r.IntN(a.created)))
		}
		procs := b.l.procs[r.IntN(len(b.l.procs))]
		return pidOf(procs[r.IntN(len(procs))])
	}
	ownChild := func() pidArg {
		if a.created == 0 {
			return lit(-1)
		}
		return pidOf(child(r.IntN(a.created)))
	}
	total := 0
	for _, w := range weights {
		total += w
	}
	pick := r.IntN(total)
	choice := 0
	for pick >= weights[choice] {
		pick -= weights[choice]
		choice++
	}
	switch choice {
	case 0, 1: // fork, or a thread
		s.kind, s.makesTask, s.arg = kClone, true, int(unix.SIGCHLD)
		if choice == 1 {
			s.flags, s.arg = threadFlags, 0
		} else if r.IntN(5) == 0 {
			s.flags = unix.CLONE_PARENT
		}
		a.refs = append(a.refs, child(a.created))
		a.session = append(a.session, sess)
		a.exited = append(a.exited, false)
		a.created++
	case 2, 3:
		s.kind, s.arg = kExit, r.IntN(4)
		if choice == 3 {
			s.kind = kExitGroup
		}
		a.exited[i] = true
	case 4:
		s.kind, s.opts = kWait4, unix.WNOHANG|b.someWaitOptions(false)
		s.pid = []pidArg{lit(-1), lit(0), ownChild(), groupOf(someGroup())}[r.IntN(4)]
	case 5:
		s.kind, s.opts = kWaitid, unix.WNOHANG|unix.WEXITED|b.someWaitOptions(true)
		switch s.arg = r.IntN(3); s.arg {
		case unix.P_PID:
			s.pid = ownChild()
		case unix.P_PGID:
			s.pid = []pidArg{lit(0), pidOf(someGroup())}[r.IntN(2)]
		default:
			s.pid = lit(0)
		}
	case 6:
		s.kind, s.pid, s.pgid = kSetpgid, lit(0), pidOf(someGroup())
		if r.IntN(3) == 0 {
			s.pid = ownChild()
		}
		if r.IntN(6) == 0 {
			s.pgid = lit(0)
		}
	case 7:
		s.kind = kSetsid
	case 8:
		s.kind = kKill
		s.arg = []int{0, int(unix.SIGCHLD), int(unix.SIGURG), int(unix.SIGWINCH), int(unix.SIGCONT)}[r.IntN(5)]
		switch r.IntN(5) {
		case 0, 1:
			s.pid = someTarget()
		case 2:
			s.pid = groupOf(someGroup())
		case 3:
			s.pid = lit(0)
		default:
			s.pid = lit(-1) // every process of the workers' user
		}
	case 9, 10:
		s.kind = kGetpriority
		if choice == 10 {
			s.kind, s.arg2 = kSetpriority, b.nextNice()
		}
		switch r.IntN(7) {
		case 0, 1, 2:
			s.arg, s.pid = unix.PRIO_PGRP, pidOf(someGroup())
		case 3:
			s.arg, s.pid = unix.PRIO_PGRP, lit(0)
		case 4, 5:
			s.arg, s.pid = unix.PRIO_PROCESS, someTarget()
		default:
			// The workers' user: who 0 is the caller's.
			s.arg, s.pid = unix.PRIO_USER, lit([]int{0, workerUID}[r.IntN(2)])
		}
	case 11, 12:
		s.kind, s.slot, s.timed = kSemop, r.IntN(len(b.s.slots)), choice == 12
		s.sops = b.someSemops(!s.timed)
	case 13:
		s.kind, s.slot, s.arg = kSemctl, r.IntN(len(b.s.slots)), sem.GETALL
	case 14:
		s.kind, s.slot, s.arg = kSemctl, r.IntN(len(b.s.slots)), sem.SETVAL
		s.arg2, s.arg3 = r.IntN(setSize), r.IntN(3)
	case 15:
		s.kind, s.slot, s.arg = kSemctl, r.IntN(len(b.s.slots)), unix.IPC_RMID
	default:
		s.kind, s.slot = kSemget, r.IntN(keyedSlots)
		s.arg, s.arg2, s.arg3 = b.s.slots[s.slot].key, setSize, unix.IPC_CREAT|0o600
	}
	return s, true
}

func (b *builder) someWaitOptions(waitid bool) int {
	opts := 0
	extra := []int{unix.WUNTRACED, unix.WCONTINUED, unix.WALL, unix.WCLONE, unix.WNOTHREAD}
	if waitid {
		extra = append(extra, unix.WNOWAIT)
	}
	for _, o := range extra {
		if b.r.IntN(5) == 0 {
			opts |= o
		}
	}
	return opts
}

// someSemops draws one or two operations of -1, 0 or +1.
func (b *builder) someSemops(nowait bool) []sem.Sembuf {
	ops := make([]sem.Sembuf, 1+b.r.IntN(2))
	for i := range ops {
		ops[i] = sem.Sembuf{Num: uint16(b.r.IntN(setSize)), Op: int16(b.r.IntN(3) - 1)}
		if nowait {
			ops[i].Flg = unix.IPC_NOWAIT
		}
	}
	return ops
}

// addRaces adds the races aimed at where the unsafe plans break, each a
// pair of goroutines started at the same instant: a parent's exit against
// its child's PTRACE_TRACEME (seed 000), all pairs at once, so that the
// exits contend for init, which adopts the children; a process's move
// out of its group against a PRIO_PGRP walk of the group, the mover its
// newest member, which the walk visits first (seed 002); and a sleeper's
// semop against the removal of its set, which is then made again under
// its key (seed 003).
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
	for range b.l.sleeperCount() {
		phase++
		slot := b.r.IntN(len(b.s.slots))
		sleeper, remover := b.l.racers[racer], b.l.racers[racer+1]
		racer += 2
		sleep := step{kind: kSemop, actor: sleeper, slot: slot, sleeps: true,
			sops: []sem.Sembuf{{Num: uint16(b.r.IntN(setSize)), Op: -1}}}
		rmid := []step{{kind: kSemctl, actor: remover, slot: slot, arg: unix.IPC_RMID}}
		if slot < keyedSlots {
			rmid = append(rmid, step{kind: kSemget, actor: remover, slot: slot,
				arg: b.s.slots[slot].key, arg2: setSize, arg3: unix.IPC_CREAT | 0o600})
		}
		meet++
		sleep.rendezvous, rmid[0].rendezvous = meet, meet
		b.lag(&sleep, &rmid[0])
		b.s.sleepers = append(b.s.sleepers, []step{sleep})
		b.s.racers = append(b.s.racers, rmid)
		b.s.phase = append(b.s.phase, phase)
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

func (l layout) sleeperCount() int { return (len(l.racers) - len(l.walks)) / 2 }
