package scengen

import (
	"fmt"
	"strings"
	"testing"

	"tasklist/scenario"
)

// Every area's files parse, stay within the bounds and are the same for the same seed.
func TestGenerate(t *testing.T) {
	for _, area := range Areas {
		for seed := range uint64(60) {
			src, err := Generate(area, seed)
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%s-%d.scn", area, seed)
			if _, err := scenario.Parse(name, []byte(src)); err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			statements := 0
			for _, l := range strings.Split(src, "\n") {
				if l != "" && !strings.HasPrefix(l, "#") {
					statements++
				}
			}
			if statements > MaxStatements {
				t.Errorf("%s: %d statements, more than %d", name, statements, MaxStatements)
			}
			if again, _ := Generate(area, seed); again != src {
				t.Errorf("%s: a second run gave another file", name)
			}
		}
	}
}

// The picture of the tasks keeps the rules that make a file deterministic on Linux.
func TestGeneratedFilesAvoidRaces(t *testing.T) {
	for _, area := range Areas {
		for seed := range uint64(200) {
			src, _ := Generate(area, seed)
			checkNoRaces(t, fmt.Sprintf("%s-%d", area, seed), src)
			checkProcessRules(t, fmt.Sprintf("%s-%d", area, seed), src)
		}
	}
}

// checkNoRaces checks what can be read off the text: init never exits and is never signalled,
// no actor issues a call while its background call is pending, and init ignores SIGHUP before
// anything else and nothing changes that, so an orphaned process group's SIGHUP kills nobody.
func checkNoRaces(t *testing.T, name, src string) {
	t.Helper()
	pending := map[string]bool{}
	first := true
	for i, l := range strings.Split(src, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if first && l != "init.signal(SIGHUP, SIG_IGN)" || !first && strings.Contains(l, "SIGHUP") {
			t.Fatalf("%s:%d: %q: init must ignore SIGHUP first, and nothing may touch it after", name, i+1, l)
		}
		first = false
		if actor, ok := strings.CutPrefix(l, "join "); ok {
			delete(pending, actor)
			continue
		}
		call := l
		if _, rest, ok := strings.Cut(l, " = "); ok {
			call = rest
		}
		actor, rest, _ := strings.Cut(call, ".")
		if pending[actor] {
			t.Fatalf("%s:%d: %s calls while its background call is pending", name, i+1, actor)
		}
		if strings.HasSuffix(rest, "&") {
			pending[actor] = true
		}
		for _, bad := range []string{"init.exit", "kill(init", "kill(-init", "tgkill(init"} {
			if strings.Contains(l, bad) {
				t.Fatalf("%s:%d: %q", name, i+1, l)
			}
		}
	}
}

// checkProcessRules checks two rules about processes that the text shows. Only one thread of a
// process has children, so a process's death hands them on in one order: Linux does not order
// its threads' exits, each of which passes its own children on. No task is attached while a
// thread of its process has an exec in flight, which the attach would wait for, and whose
// death by a signal the attach races with. It reads who creates what off the text: a thread
// joins its creator's process, and an exec leaves the execing thread alone in it, with every
// child of the process.
func checkProcessRules(t *testing.T, name, src string) {
	t.Helper()
	procOf := map[string]string{"init": "init"} // task -> its process's first name
	parentOf := map[string]string{}             // process -> its parent thread
	forker := map[string]string{}               // process -> the thread whose children it has
	execing := map[string]string{}              // process -> its thread with an exec in flight
	for i, l := range strings.Split(src, "\n") {
		if actor, ok := strings.CutPrefix(l, "join "); ok && execing[procOf[actor]] == actor {
			delete(execing, procOf[actor])
		}
		if _, rest, ok := strings.Cut(l, ".ptrace(PTRACE_"); ok && (strings.HasPrefix(rest, "ATTACH, ") ||
			strings.HasPrefix(rest, "SEIZE, ")) {
			_, target, _ := strings.Cut(rest, ", ")
			target, _, _ = strings.Cut(strings.TrimSuffix(target, ")"), ",")
			if e := execing[procOf[target]]; e != "" {
				t.Fatalf("%s:%d: %s is attached while %s, a thread of its process, execs", name, i+1, target, e)
			}
		}
		bound, call, ok := strings.Cut(l, " = ")
		if !ok {
			if actor, ok := strings.CutSuffix(strings.TrimSuffix(l, " &"), ".execve()"); ok {
				if forker[procOf[actor]] != "" {
					forker[procOf[actor]] = actor
				}
				if strings.HasSuffix(l, " &") {
					execing[procOf[actor]] = actor
				}
			}
			continue
		}
		bound, _, _ = strings.Cut(bound, ", ") // a task and its pidfd
		actor, rest, _ := strings.Cut(call, ".")
		switch {
		case strings.Contains(rest, "CLONE_THREAD"):
			procOf[bound] = procOf[actor]
		case strings.HasPrefix(rest, "fork(") || strings.HasPrefix(rest, "vfork(") ||
			strings.HasPrefix(rest, "clone(") || strings.HasPrefix(rest, "clone3("):
			procOf[bound] = bound
			parent := actor
			if strings.Contains(rest, "CLONE_PARENT") {
				parent = parentOf[procOf[actor]]
			}
			parentOf[bound] = parent
			if f := forker[procOf[parent]]; f != "" && f != parent {
				t.Fatalf("%s:%d: %s has a child, and %s, another thread of its process, has one too",
					name, i+1, parent, f)
			}
			forker[procOf[parent]] = parent
		}
	}
}

// No signal goes where its death could come back to the sender while the sender's call returns:
// to the sender's own process while one of its threads is traced, or to a process that traces
// one of the sender's threads (PTRACE_O_EXITKILL).
func TestKillAvoidsRacesWithSender(t *testing.T) {
	for seed := range uint64(2000) {
		g := newGen(seed)
		mk := func(name string) *task {
			c := &task{name: name}
			c.proc = &proc{leader: c, threads: []*task{c}, parent: g.init(), pgrp: name}
			g.tasks = append(g.tasks, c)
			return c
		}
		a, b := mk("A"), mk("B")
		ta := &task{name: "TA", proc: a.proc, tracer: b}
		a.proc.threads = append(a.proc.threads, ta)
		g.tasks = append(g.tasks, ta)
		mvKill(g)
		for _, l := range g.lines {
			for _, bad := range []string{"kill(B,", "kill(-B,", "kill(A,", "kill(-A,", "tgkill(B,", "tgkill(A,"} {
				if strings.HasPrefix(l, "A.") && strings.Contains(l, bad) {
					t.Fatalf("seed %d: %q: the signal could kill A while its call returns", seed, l)
				}
			}
		}
	}
}
