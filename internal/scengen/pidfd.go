package scengen

import (
	"maps"
	"slices"
	"strings"
)

// The pidfd area: vfork and CLONE_VFORK children named while their parents wait, clone3 with
// its own checks and set_tid, pidfds opened, inherited by fork, shared by CLONE_FILES and
// closed by exec, used to signal, wait and poll, and prlimit across processes. Every task
// stays root, so that prlimit of another process passes check_prlimit_permission on both
// runners (the host may withhold CAP_SYS_RESOURCE, which a change of ids would make count);
// the one limit changed is RLIMIT_LOCKS, which init lowers first, and no hard limit is ever
// raised.

// pfile is the generator's picture of a pidfd: its name, the task it was opened on, and
// whether it is a thread pidfd.
type pfile struct {
	name   string
	of     *task
	thread bool
}

// fileSet is a descriptor table: the pidfds open in it, by name.
type fileSet map[string]*pfile

func (fs fileSet) copy() fileSet {
	c := fileSet{}
	for n, f := range fs {
		c[n] = f
	}
	return c
}

// locksHard is the hard RLIMIT_LOCKS init sets first; each process's picture keeps a bound
// below which its hard limit never is.
const locksHard = 1000

var pidfdMoves = []move{
	{6, mvFork}, {4, mvThread}, {6, mvVfork}, {6, mvClone3}, {8, mvPidfdOpen}, {8, mvPidfdSignal},
	{5, mvPidfdWait}, {4, mvPidfdPoll}, {3, mvPidfdClose}, {5, mvPrlimit}, {4, mvExit}, {4, mvExec},
	{3, mvWaitNohang}, {2, mvWaitBlock}, {3, mvKill}, {2, mvSetpgid}, {2, mvGetters}, {2, mvAttach},
	{2, mvTracerWait}, {2, mvResume},
}

// startPidfd is the area's first step: init lowers RLIMIT_LOCKS, so that what the file reads
// of it does not depend on the host.
func startPidfd(g *gen) {
	g.call(g.init(), "setrlimit", constant("RLIMIT_LOCKS"), num(locksHard/10), num(locksHard))
	g.init().proc.locksHard = locksHard
}

// made records task c, which p made: a new process with a copy of p's table, or a thread of
// p's process (thread set), with p's table itself for CLONE_FILES (shared).
func (g *gen) made(p, c *task, thread, shared bool) {
	c.files = p.files.copy()
	if shared {
		c.files = p.files
	}
	if thread {
		c.proc = p.proc
		p.proc.threads = append(p.proc.threads, c)
	}
	g.tasks = append(g.tasks, c)
	g.traceEvent(p, c)
}

// newProc makes c the leader of a new process whose parent is parent, in p's process group,
// with p's limits.
func newProc(c, p, parent *task) {
	c.proc = &proc{leader: c, threads: []*task{c}, parent: parent, pgrp: p.proc.pgrp, locksHard: p.proc.locksHard}
	parent.proc.forker = parent
}

// mvVfork makes a vfork child in the background (vfork, or clone or clone3 with CLONE_VFORK),
// which the file may name at once while its parent waits: the parent is joined once the child
// has exited or exec'd.
func mvVfork(g *gen) {
	if !g.room() {
		return
	}
	p := g.actor(func(t *task) bool { return mayParent(t) && t.name != "init" })
	if p == nil {
		return
	}
	name := g.newName("V")
	switch g.rng.IntN(3) {
	case 0:
		g.bindBackground(name, p, "vfork", "vfork")
	case 1:
		g.bindBackground(name, p, "vfork", "clone", constant("CLONE_VFORK|CLONE_VM|SIGCHLD"))
	default:
		g.bindBackground(name, p, "vfork", "clone3", constant("CLONE_VFORK|CLONE_VM"), constant("SIGCHLD"))
	}
	c := &task{name: name, vforkParent: p}
	newProc(c, p, p)
	g.made(p, c, false, false)
}

// clone3Flags are clone3's flags in the area, with the exit signal each goes with; the last
// ones fail (EINVAL) and bind nothing.
var clone3Flags = []struct{ flags, sig string }{
	{"0", "SIGCHLD"}, {"0", "SIGCHLD"}, {"CLONE_PIDFD", "SIGCHLD"}, {"CLONE_PIDFD|CLONE_FILES", "SIGCHLD"},
	{"CLONE_CLEAR_SIGHAND", "SIGCHLD"}, {"CLONE_FILES", "SIGCHLD"}, {"CLONE_PARENT", "0"},
	{"CLONE_THREAD|CLONE_SIGHAND|CLONE_VM", "0"}, {"CLONE_THREAD|CLONE_SIGHAND|CLONE_VM|CLONE_PIDFD|CLONE_FILES", "0"},
	{"CLONE_PARENT", "SIGCHLD"}, {"CLONE_SIGHAND|CLONE_VM|CLONE_CLEAR_SIGHAND", "SIGCHLD"}, {"0", "65"},
}

// mvClone3 makes a process or thread with clone3, sometimes with a set_tid entry for init's
// namespace, the only level a child of the area has: 1, init's pid, is taken (EEXIST), 0 is
// no pid (EINVAL), and a number of its own from 500 up is free.
func mvClone3(g *gen) {
	if !g.room() {
		return
	}
	p := g.actor(mayParent)
	if p == nil {
		return
	}
	c := pick(g, clone3Flags)
	args := []arg{constant(c.flags), constant(c.sig)}
	ok := c.sig != "65" && c.flags != "CLONE_SIGHAND|CLONE_VM|CLONE_CLEAR_SIGHAND" &&
		!(c.flags == "CLONE_PARENT" && c.sig != "0")
	thread := c.flags[:min(len(c.flags), 12)] == "CLONE_THREAD"
	parent := p
	switch {
	case c.flags == "CLONE_PARENT" && (p.name == "init" || !mayParent(p.proc.parent)):
		return
	case c.flags == "CLONE_PARENT":
		parent = p.proc.parent
	case thread && p.name == "init":
		return
	}
	if g.chance(20) {
		tid := pick(g, []int{1, 0, 500 + g.named})
		ok = ok && tid > 1
		args = append(args, num(tid))
	}
	if !ok {
		g.call(p, "clone3", args...)
		return
	}
	name := g.newName("C")
	bound := name
	var f *pfile
	if containsFlag(c.flags, "CLONE_PIDFD") {
		f = &pfile{name: g.newName("F"), thread: thread}
		bound += ", " + f.name
	}
	g.bind(bound, p, "clone3", args...)
	t := &task{name: name}
	if !thread {
		newProc(t, p, parent)
	}
	g.made(p, t, thread, containsFlag(c.flags, "CLONE_FILES"))
	if f != nil {
		f.of = t
		p.files[f.name] = f
	}
}

func containsFlag(flags, flag string) bool { return slices.Contains(strings.Split(flags, "|"), flag) }

// mvPidfdOpen opens a pidfd of a task, live or gone, with or without PIDFD_THREAD and
// PIDFD_NONBLOCK; one that may fail (a thread that leads nothing without PIDFD_THREAD, a task
// that is gone, pid 0) binds nothing.
func mvPidfdOpen(g *gen) {
	t := g.actor(nil)
	target := pick(g, g.tasks[1:])
	if t == nil || target == nil {
		return
	}
	flags := pick(g, []string{"0", "0", "PIDFD_NONBLOCK", "PIDFD_THREAD", "PIDFD_NONBLOCK|PIDFD_THREAD"})
	thread := containsFlag(flags, "PIDFD_THREAD")
	switch {
	case g.chance(5):
		g.call(t, "pidfd_open", num(0), constant(flags))
	case target.gone || !thread && target.proc.leader != target || g.chance(10):
		g.call(t, "pidfd_open", named(target.name), constant(flags))
	default:
		f := &pfile{name: g.newName("F"), of: target, thread: thread}
		g.bind(f.name, t, "pidfd_open", named(target.name), constant(flags))
		t.files[f.name] = f
	}
}

// filed returns an actor that ok accepts and a pidfd: mostly one of the actor's table, else
// any the file has opened, which the actor's table may not hold (EBADF).
func (g *gen) filed(ok func(*task) bool) (*task, *pfile) {
	t := g.actor(ok)
	if t == nil {
		return nil, nil
	}
	seen := map[*pfile]bool{}
	var own, all []*pfile
	for _, u := range g.tasks {
		for _, name := range slices.Sorted(maps.Keys(u.files)) {
			if f := u.files[name]; !seen[f] {
				seen[f] = true
				all = append(all, f)
			}
		}
	}
	for _, f := range all {
		if t.files[f.name] == f {
			own = append(own, f)
		}
	}
	if len(own) > 0 && g.chance(85) {
		return t, pick(g, own)
	}
	return t, pick(g, all)
}

// mvPidfdSignal sends a signal through a pidfd, to its task's process, its thread (a thread
// pidfd, or PIDFD_SIGNAL_THREAD) or the process group its pid is the id of
// (PIDFD_SIGNAL_PROCESS_GROUP), under kill's rules of what may be sent (mayKill); sometimes
// with two scopes at once (EINVAL).
func mvPidfdSignal(g *gen) {
	from, f := g.filed(func(t *task) bool { return t.tracer == nil })
	if f == nil {
		return
	}
	sig := pick(g, killSignals)
	flags := pick(g, []string{"0", "0", "0", "PIDFD_SIGNAL_THREAD", "PIDFD_SIGNAL_THREAD_GROUP",
		"PIDFD_SIGNAL_PROCESS_GROUP", "PIDFD_SIGNAL_THREAD|PIDFD_SIGNAL_THREAD_GROUP"})
	s := toProcess
	switch {
	case flags == "PIDFD_SIGNAL_THREAD|PIDFD_SIGNAL_THREAD_GROUP":
		g.call(from, "pidfd_send_signal", file(f), constant(sig), constant(flags))
		return
	case flags == "PIDFD_SIGNAL_PROCESS_GROUP":
		s = toGroup
	case flags == "PIDFD_SIGNAL_THREAD", f.thread && flags == "0":
		s = toThread
	}
	if s == toGroup {
		// The group whose id is the pidfd's pid, which f.of may have left.
		if !g.mayKillGroup(from, f.of.name, sig) {
			return
		}
		g.call(from, "pidfd_send_signal", file(f), constant(sig), constant(flags))
		if from.files[f.name] == f {
			g.killedGroup(f.of.name, sig)
		}
		return
	}
	if !g.mayKill(from, f.of, sig, s) {
		return
	}
	g.call(from, "pidfd_send_signal", file(f), constant(sig), constant(flags))
	if !f.of.gone && from.files[f.name] == f {
		g.killed(f.of, sig, s)
	}
}

// mvPidfdWait waits for a pidfd's task: WNOHANG, or through a nonblocking pidfd, in the
// foreground; blocking in the background, at most one wait per process as mvWaitBlock.
func mvPidfdWait(g *gen) {
	t, f := g.filed(nil)
	if f == nil {
		return
	}
	opts := pick(g, waitidOptions)
	busy := false
	for _, o := range t.proc.threads {
		busy = busy || o.bg == "wait"
	}
	if !busy && t.name != "init" && g.chance(25) {
		g.background(t, "wait", "waitid", constant("P_PIDFD"), file(f), constant(opts))
		return
	}
	if g.chance(70) {
		opts = "WNOHANG|" + opts
	}
	g.call(t, "waitid", constant("P_PIDFD"), file(f), constant(opts))
}

func mvPidfdPoll(g *gen) {
	if t, f := g.filed(nil); f != nil {
		g.call(t, "poll", file(f))
	}
}

func mvPidfdClose(g *gen) {
	if t, f := g.filed(nil); f != nil {
		g.call(t, "close", file(f))
		if t.files[f.name] == f {
			delete(t.files, f.name)
		}
	}
}

// mvPrlimit reads or lowers RLIMIT_LOCKS of the caller's process or another's, and reads
// getrlimit's view of it; sometimes with an unknown resource or a soft limit above the hard
// one (EINVAL).
func mvPrlimit(g *gen) {
	t := g.actor(nil)
	target := pick(g, g.tasks)
	if t == nil || target == nil {
		return
	}
	who := named(target.name)
	if target == t && g.chance(50) {
		who = num(0)
	}
	switch n := g.rng.IntN(10); {
	case n < 2:
		g.call(t, "getrlimit", constant("RLIMIT_LOCKS"))
	case n < 5:
		g.call(t, "prlimit", who, constant("RLIMIT_LOCKS"))
	case n < 6:
		g.call(t, "prlimit", who, num(99))
	case n < 7:
		g.call(t, "prlimit", who, constant("RLIMIT_LOCKS"), num(20), num(10))
	default:
		hard := g.rng.IntN(target.proc.locksHard + 1)
		soft := g.rng.IntN(hard + 1)
		g.call(t, "prlimit", who, constant("RLIMIT_LOCKS"), num(soft), num(hard))
		target.proc.locksHard = min(target.proc.locksHard, hard)
	}
}
