// Package scengen generates random scenario files (docs/scenario-language.md) for
// differential testing: `tasklist diff` runs each on the model and on the host kernel, and every
// line where the two print different results is a difference to explain.
//
// A generated file is valid scenario language, bounded in size (at most MaxStatements
// statements and MaxTasks tasks), and the same for the same area and seed. It is written to be
// deterministic on Linux, within what the runners' quiescence orders: at most one blocking wait
// per process is in flight, so no two waiters race for one child; a semaphore operation in the
// foreground never sleeps for good (every operation carries IPC_NOWAIT, or the call is a
// semtimedop with a short timeout); blocking calls run in the background and are joined only
// after something that may have woken them; a task that may be stopped (traced, or sent a stop
// signal) makes no foreground call until its tracer resumes it or SIGCONT arrives. init never
// exits and is never sent a signal, so every file runs to its end. init ignores SIGHUP, first
// thing, and every task inherits that through fork and exec: a process group orphaned while a
// member is stopped is sent SIGHUP (kill_orphaned_pgrp), which would kill its members at once,
// and a parent and its child dying together hand the child on in an order Linux leaves to the
// scheduler.
//
// The generator keeps a rough picture of the tasks it made — which exist, which are threads of
// which process, who traces whom, which process group each process is in — only to choose
// plausible calls; it does not predict results, and a call on a task that has in fact gone
// simply prints ESRCH on both runners.
package scengen

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// Bounds on a generated file.
const (
	MaxStatements = 40
	MaxTasks      = 10
)

// Areas are the kinds of scenario the generator makes, each weighting its own set of moves.
var Areas = []string{"exec", "wait", "creds", "sem", "signals", "mixed", "killrace", "pidfd"}

// Generate returns the text of a scenario for area, fully determined by seed.
func Generate(area string, seed uint64) (string, error) {
	moves, ok := areaMoves[area]
	if !ok && area != "killrace" {
		return "", fmt.Errorf("scengen: unknown area %q (have %s)", area, strings.Join(Areas, ", "))
	}
	g := newGen(seed)
	g.emit("# generated: area %s, seed %d", area, seed)
	g.call(g.init(), "signal", constant("SIGHUP"), constant("SIG_IGN"))
	if area == "killrace" {
		generateKillRace(g)
		return strings.Join(g.lines, "\n") + "\n", nil
	}
	if area == "sem" || area == "signals" || area == "mixed" {
		g.newSet()
	}
	if area == "pidfd" {
		startPidfd(g)
	}
	for range 1 + g.rng.IntN(2) {
		mvFork(g)
	}
	total := 0
	for _, m := range moves {
		total += m.weight
	}
	// Moves that find no task able to act emit nothing; a bounded number of tries ends a
	// file whose tasks are all busy, stopped or gone.
	for tries := 0; g.statements < MaxStatements && tries < 20*MaxStatements; tries++ {
		n := g.rng.IntN(total)
		for _, m := range moves {
			if n < m.weight {
				m.do(g)
				break
			}
			n -= m.weight
		}
		g.maybeJoin()
	}
	return strings.Join(g.lines, "\n") + "\n", nil
}

// move is one kind of step an area takes, with its relative weight.
type move struct {
	weight int
	do     func(*gen)
}

type gen struct {
	rng        *rand.Rand
	lines      []string
	statements int
	tasks      []*task
	sets       []semSet
	named      int
}

// task is the generator's picture of one task it named.
type task struct {
	name string
	proc *proc
	gone bool
	// bg is the kind of the background call not yet joined ("" if none); poked records
	// that something may have woken it since.
	bg    string
	poked bool
	// tracer is the task that traces this one; held marks a task that may sit in a stop
	// (a ptrace stop, or its process's group stop) and must not make a foreground call.
	tracer *task
	held   bool
	// traceNew marks a tracee whose options make its new children and threads start
	// traced (PTRACE_O_TRACEFORK, TRACECLONE); traceExec one that stops at exec; exitKill
	// one its tracer's exit kills (PTRACE_O_EXITKILL).
	traceNew, traceExec, exitKill bool
	// files is the task's descriptor table, shared with the tasks made with CLONE_FILES;
	// vforkParent, for a vfork child, the task that waits for it to exit or exec.
	files       fileSet
	vforkParent *task
}

// proc is the generator's picture of a process.
type proc struct {
	leader  *task
	threads []*task
	parent  *task
	pgrp    string // the name whose pid is the process group id
	stopped bool   // sent a stop signal, no SIGCONT since
	// forker is the one thread of the process whose children it has: when a process dies,
	// each thread's children reach their new parent as that thread exits, in an order the
	// threads' exits, which Linux does not order, decide.
	forker *task
	// locksHard bounds the process's hard RLIMIT_LOCKS from below (the pidfd area).
	locksHard int
}

func newGen(seed uint64) *gen {
	g := &gen{rng: rand.New(rand.NewPCG(seed, 0x5ce9))}
	init := &task{name: "init", files: fileSet{}}
	init.proc = &proc{leader: init, threads: []*task{init}, pgrp: "init"}
	g.tasks = []*task{init}
	return g
}

func (g *gen) emit(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if !strings.HasPrefix(line, "#") {
		g.statements++
	}
	g.lines = append(g.lines, line)
}

func (g *gen) init() *task { return g.tasks[0] }

// pick returns a random element of xs, or the zero value when there is none.
func pick[T any](g *gen, xs []T) T {
	var zero T
	if len(xs) == 0 {
		return zero
	}
	return xs[g.rng.IntN(len(xs))]
}

func (g *gen) chance(percent int) bool { return g.rng.IntN(100) < percent }

// idle reports whether t can make a foreground call now.
func (t *task) idle() bool { return !t.gone && t.bg == "" && !t.held && !t.proc.stopped }

// actors returns the tasks that can make a call now and satisfy ok (nil: any).
func (g *gen) actors(ok func(*task) bool) []*task {
	var out []*task
	for _, t := range g.tasks {
		if t.idle() && (ok == nil || ok(t)) {
			out = append(out, t)
		}
	}
	return out
}

func (g *gen) actor(ok func(*task) bool) *task { return pick(g, g.actors(ok)) }

// live returns the tasks believed to exist, init aside.
func (g *gen) live() []*task {
	var out []*task
	for _, t := range g.tasks[1:] {
		if !t.gone {
			out = append(out, t)
		}
	}
	return out
}

func notInit(t *task) bool { return t.name != "init" }

func (g *gen) newName(prefix string) string {
	g.named++
	return fmt.Sprintf("%s%d", prefix, g.named)
}

func (g *gen) room() bool { return len(g.live()) < MaxTasks-1 }

// childrenOf returns the live processes whose parent is a thread of p.
func (g *gen) childrenOf(p *proc) []*task {
	var out []*task
	for _, t := range g.live() {
		if t.proc.leader == t && t.proc.parent != nil && t.proc.parent.proc == p {
			out = append(out, t)
		}
	}
	return out
}

// traceesOf returns the live tasks traced by a thread of p.
func (g *gen) traceesOf(p *proc) []*task {
	var out []*task
	for _, t := range g.live() {
		if t.tracer != nil && t.tracer.proc == p {
			out = append(out, t)
		}
	}
	return out
}

// signalled records that p was sent a signal or had news for its waiters: its traced threads
// may stop for it, and a call any of its threads sleeps in may have ended.
func (g *gen) signalled(p *proc) {
	for _, t := range p.threads {
		if t.tracer != nil {
			t.held = true
		}
		if t.bg != "" {
			t.poked = true
		}
	}
}

// childNews records that child c's process changed state: its parent and its tracers hear
// of it (SIGCHLD and a wake-up).
func (g *gen) childNews(c *task) {
	if par := c.proc.parent; par != nil && par.proc != g.init().proc {
		g.signalled(par.proc)
	} else if par != nil {
		g.pokeWaiters(par.proc)
	}
	for _, t := range c.proc.threads {
		if t.tracer != nil {
			if t.tracer.proc == g.init().proc {
				g.pokeWaiters(t.tracer.proc)
			} else {
				g.signalled(t.tracer.proc)
			}
		}
	}
}

func (g *gen) pokeWaiters(p *proc) {
	for _, t := range p.threads {
		if t.bg == "wait" {
			t.poked = true
		}
	}
}

// markGone records that t has exited; a process whose last thread went has exited.
func (g *gen) markGone(t *task) {
	if t.gone {
		return
	}
	t.gone = true
	if t.proc.leader == t || !slices.ContainsFunc(t.proc.threads, func(o *task) bool { return !o.gone }) {
		g.childNews(t)
	}
}

// killProc records that every thread of p is gone (a fatal signal or exit_group).
func (g *gen) killProc(p *proc) {
	for _, t := range p.threads {
		t.gone = true
	}
	g.childNews(p.leader)
	for _, t := range g.live() {
		if t.tracer != nil && t.tracer.proc == p {
			t.tracer, t.held = nil, false
		}
	}
}

// maybeJoin joins a background call that may have been woken.
func (g *gen) maybeJoin() {
	for _, t := range g.tasks {
		if g.statements >= MaxStatements {
			return
		}
		if t.bg == "" || !t.poked || t.held || t.proc.stopped || !g.chance(60) {
			continue
		}
		g.emit("join %s", t.name)
		if t.bg == "exec" {
			g.execDone(t)
		}
		t.bg, t.poked = "", false
	}
}
