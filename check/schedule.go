package check

import (
	"math/rand/v2"

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
	// keys are the keys of the semaphore sets the setup makes
	// (IPC_PRIVATE for a private set), by slot; a keyed set can be
	// removed and made again under its key.
	keys []int
	// parts gives each setup task the partition of the task calls whose
	// results and final state depend on it: 0 for the workers' tasks, one
	// of its own for each race (see partition).
	parts []int
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
	watch           int // for kSemAsleep: the sleeper, an index into schedule.sleepers
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
