package scengen

import (
	"fmt"
	"strings"
)

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
	g.emit("%s = init.semget(IPC_PRIVATE, %d, %s)", name, n, pick(g, []string{"0600", "0666"}))
	g.sets = append(g.sets, semSet{name, n})
}

func mvNewSet(g *gen) { g.newSet() }

// sembufs returns one or two operations on set s; nowait puts IPC_NOWAIT on each.
func (g *gen) sembufs(s semSet, nowait bool) string {
	var ops []string
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
		ops = append(ops, fmt.Sprintf("{%d, %d, %s}", g.rng.IntN(s.nsems), g.rng.IntN(5)-2, f))
	}
	return strings.Join(ops, ", ")
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
	g.emit("%s.semop(%s, %s)", t.name, s.name, g.sembufs(s, true))
	g.semChanged()
}

func mvSemTimed(g *gen) {
	t := g.actor(nil)
	if t == nil || len(g.sets) == 0 {
		return
	}
	s := pick(g, g.sets)
	g.emit("%s.semtimedop(%s, %d, %s)", t.name, s.name, 1+g.rng.IntN(5), g.sembufs(s, false))
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
	g.background(t, "sem", fmt.Sprintf("semop(%s, %s)", s.name, g.sembufs(s, false)))
}

func mvSemctl(g *gen) {
	t := g.actor(func(t *task) bool { return t.name == "init" || g.chance(30) })
	if t == nil || len(g.sets) == 0 {
		return
	}
	s := pick(g, g.sets)
	num := g.rng.IntN(s.nsems)
	switch n := g.rng.IntN(40); {
	case n < 16:
		g.emit("%s.semctl(%s, %d, %s)", t.name, s.name, num,
			pick(g, []string{"GETVAL", "GETNCNT", "GETZCNT", "GETPID", "GETALL"}))
	case n < 28:
		g.emit("%s.semctl(%s, %d, SETVAL, %d)", t.name, s.name, num, g.rng.IntN(4))
		g.semChanged()
	case n < 39:
		vals := make([]string, s.nsems)
		for i := range vals {
			vals[i] = fmt.Sprint(g.rng.IntN(4))
		}
		g.emit("%s.semctl(%s, 0, SETALL, [%s])", t.name, s.name, strings.Join(vals, " "))
		g.semChanged()
	default:
		g.emit("%s.semctl(%s, 0, IPC_RMID)", t.name, s.name)
		g.semChanged()
	}
}
