package scengen

import "strings"

// Semaphore moves. A foreground operation never sleeps for good: each of its operations
// carries IPC_NOWAIT, or it is a semtimedop with a timeout of a few milliseconds, which nothing
// else can cut short while it runs in the foreground.

// semSet is a set the scenario made, and its number of semaphores.
type semSet struct {
	name  string
	nsems int
}

func (g *gen) newSet() {
	if len(g.sets) >= 3 {
		return
	}
	n := 1 + g.rng.IntN(3)
	name := g.newName("S")
	g.bind(name, g.init(), "semget", constant("IPC_PRIVATE"), num(n), constant(pick(g, []string{"0600", "0666"})))
	g.sets = append(g.sets, semSet{name, n})
}

func mvNewSet(g *gen) { g.newSet() }

// semop returns the arguments of a semop on set s, after those before is given: one or two
// operations, each with IPC_NOWAIT if nowait.
func (g *gen) semop(s semSet, nowait bool, before ...arg) []arg {
	ops := append([]arg{set(s)}, before...)
	for range 1 + g.rng.IntN(2) {
		var flags []string
		if nowait {
			flags = append(flags, "IPC_NOWAIT")
		}
		if g.chance(30) {
			flags = append(flags, "SEM_UNDO")
		}
		f := strings.Join(flags, "|")
		if f == "" {
			f = "0"
		}
		ops = append(ops, sembuf(g.rng.IntN(s.nsems), g.rng.IntN(5)-2, f))
	}
	return ops
}

// semChanged records that a set's values may have changed: its sleepers may be done.
func (g *gen) semChanged() {
	for _, t := range g.tasks {
		if t.bg == "sem" {
			t.poked = true
		}
	}
}

func mvSemopNowait(g *gen) {
	t := g.actor(nil)
	if t == nil || len(g.sets) == 0 {
		return
	}
	s := pick(g, g.sets)
	g.call(t, "semop", g.semop(s, true)...)
	g.semChanged()
}

func mvSemTimed(g *gen) {
	t := g.actor(nil)
	if t == nil || len(g.sets) == 0 {
		return
	}
	s := pick(g, g.sets)
	g.call(t, "semtimedop", g.semop(s, false, num(1+g.rng.IntN(5)))...)
	g.semChanged()
}

// mvSemopBlock starts a semop that may sleep, in the background.
func mvSemopBlock(g *gen) {
	t := g.actor(notInit)
	if t == nil || len(g.sets) == 0 {
		return
	}
	s := pick(g, g.sets)
	g.semChanged() // it may complete others' operations, not be completed by itself
	g.background(t, "sem", "semop", g.semop(s, false)...)
}

func mvSemctl(g *gen) {
	t := g.actor(func(t *task) bool { return t.name == "init" || g.chance(30) })
	if t == nil || len(g.sets) == 0 {
		return
	}
	s := pick(g, g.sets)
	semnum := g.rng.IntN(s.nsems)
	switch n := g.rng.IntN(40); {
	case n < 16:
		g.call(t, "semctl", set(s), num(semnum),
			constant(pick(g, []string{"GETVAL", "GETNCNT", "GETZCNT", "GETPID", "GETALL"})))
	case n < 28:
		g.call(t, "semctl", set(s), num(semnum), constant("SETVAL"), num(g.rng.IntN(4)))
		g.semChanged()
	case n < 39:
		vals := make([]int, s.nsems)
		for i := range vals {
			vals[i] = g.rng.IntN(4)
		}
		g.call(t, "semctl", set(s), num(0), constant("SETALL"), values(vals))
		g.semChanged()
	default:
		g.call(t, "semctl", set(s), num(0), constant("IPC_RMID"))
		g.semChanged()
	}
}
