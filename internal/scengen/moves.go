package scengen

import (
	"slices"
	"strings"
)

// The moves areas are made of: process and thread creation, exits, waits, signals, process
// groups and credentials (this file); exec and ptrace, semaphores (their own files).

// areaMoves weights the moves of each area; "mixed" takes a little of everything.
var areaMoves = map[string][]move{
	"exec": {
		{6, mvFork}, {8, mvThread}, {8, mvAttach}, {10, mvExec}, {6, mvTracerWait}, {6, mvPtraceRequest},
		{4, mvResume}, {4, mvExit}, {3, mvKill}, {3, mvWaitNohang}, {2, mvWaitBlock}, {3, mvGetters},
		{2, mvSignal},
	},
	"wait": {
		{10, mvFork}, {3, mvThread}, {8, mvExit}, {10, mvWaitNohang}, {6, mvWaitBlock}, {6, mvSetpgid},
		{2, mvSetsid}, {4, mvSubreaper}, {5, mvKill}, {3, mvSignal}, {3, mvGetters}, {2, mvExec},
		{2, mvAttach}, {2, mvTracerWait}, {2, mvResume}, {2, mvPdeath},
	},
	"creds": {
		{8, mvFork}, {4, mvThread}, {10, mvSetuid}, {6, mvRlimit}, {6, mvExec}, {5, mvExit},
		{5, mvWaitNohang}, {4, mvKill}, {3, mvPrio}, {2, mvAttach}, {2, mvPdeath}, {3, mvGetters},
	},
	"sem": {
		{5, mvFork}, {4, mvThread}, {10, mvSemopNowait}, {4, mvSemTimed}, {10, mvSemopBlock},
		{6, mvSemctl}, {5, mvKill}, {4, mvSignal}, {3, mvAttach}, {3, mvPtraceRequest}, {3, mvResume},
		{3, mvExit}, {2, mvWaitNohang}, {1, mvNewSet},
	},
	"signals": {
		{6, mvFork}, {5, mvThread}, {10, mvSigmask}, {4, mvSigpending}, {6, mvSigwait}, {8, mvKill},
		{4, mvTkill}, {6, mvSignal}, {4, mvWaitNohang}, {3, mvWaitBlock}, {3, mvExit}, {2, mvExec},
		{2, mvAttach}, {2, mvTracerWait}, {2, mvResume}, {2, mvSemopBlock}, {1, mvGetters},
	},
	"mixed": {
		{6, mvFork}, {5, mvThread}, {5, mvExit}, {5, mvWaitNohang}, {3, mvWaitBlock}, {3, mvSetpgid},
		{1, mvSetsid}, {2, mvSubreaper}, {4, mvKill}, {3, mvSignal}, {3, mvGetters}, {4, mvExec},
		{4, mvAttach}, {3, mvTracerWait}, {3, mvPtraceRequest}, {3, mvResume}, {3, mvSetuid},
		{2, mvRlimit}, {3, mvSemopNowait}, {3, mvSemopBlock}, {2, mvSemctl}, {1, mvSemTimed},
		{1, mvPdeath}, {1, mvPrio}, {2, mvSigmask}, {1, mvSigpending}, {1, mvSigwait}, {1, mvTkill},
		{1, mvPdeath}, {1, mvPrio}, {1, mvVfork}, {1, mvPidfdOpen}, {1, mvPidfdSignal},
	},
	"pidfd": pidfdMoves,
}

// exitSignals are the exit signals of cloned children: none is fatal by default, since a parent
// killed by its child's exit signal while its own call (a kill of that child) returns races
// with the reply on Linux.
var exitSignals = []string{"SIGCHLD", "SIGCHLD", "SIGCHLD", "SIGCHLD", "SIGURG", "0"}

func mvFork(g *gen) {
	if !g.room() {
		return
	}
	p := g.actor(mayParent)
	if p == nil {
		return
	}
	name := g.newName("P")
	call, args, parent := "clone", []arg(nil), p
	switch {
	case g.chance(60):
		call = "fork"
	case g.chance(15) && p.name != "init" && mayParent(p.proc.parent):
		args, parent = []arg{constant("CLONE_PARENT"), constant("SIGCHLD")}, p.proc.parent
	case g.chance(15):
		args = []arg{constant("CLONE_SYSVSEM"), constant("SIGCHLD")}
	default:
		args = []arg{num(0), constant(pick(g, exitSignals))}
	}
	g.bind(name, p, call, args...)
	c := &task{name: name}
	newProc(c, p, parent)
	g.made(p, c, false, false)
}

// mayParent reports whether thread t may have a child: it is the only thread of its process
// that has any (proc.forker).
func mayParent(t *task) bool { return t.proc.forker == nil || t.proc.forker == t }

func mvThread(g *gen) {
	if !g.room() {
		return
	}
	p := g.actor(notInit)
	if p == nil {
		return
	}
	name := g.newName("T")
	flags := "CLONE_THREAD|CLONE_SIGHAND|CLONE_VM"
	if g.chance(20) {
		flags += "|CLONE_SYSVSEM"
	}
	g.bind(name, p, "clone", constant(flags))
	g.made(p, &task{name: name}, true, false)
}

func mvExit(g *gen) {
	t := g.actor(notInit)
	if t == nil {
		return
	}
	code := g.rng.IntN(8)
	if g.chance(30) {
		g.call(t, "exit_group", num(code))
		g.killProc(t.proc)
		return
	}
	g.call(t, "exit", num(code))
	g.markGone(t)
}

// waitOptions are wait4's extra options, WNOHANG aside.
var waitOptions = []string{"0", "0", "0", "WUNTRACED", "WCONTINUED", "WUNTRACED|WCONTINUED", "__WCLONE",
	"__WALL", "__WALL", "__WNOTHREAD", "WUNTRACED|__WALL"}

// waitidOptions are waitid's, WNOHANG aside.
var waitidOptions = []string{"WEXITED", "WEXITED", "WSTOPPED", "WCONTINUED", "WEXITED|WSTOPPED|WCONTINUED",
	"WEXITED|WNOWAIT", "WEXITED|__WALL", "WSTOPPED|__WALL", "WEXITED|__WCLONE"}

// waitCall returns a wait4 or waitid by a thread of p, blocking or not, as the call's name and
// arguments.
func (g *gen) waitCall(p *proc, nohang bool) (string, []arg) {
	kids := append(g.childrenOf(p), g.traceesOf(p)...)
	if g.chance(55) {
		sel := constant("-1")
		switch n := g.rng.IntN(10); {
		case n < 3 && len(kids) > 0:
			sel = named(pick(g, kids).name)
		case n < 5:
			sel = num(0)
		case n < 6 && len(kids) > 0:
			sel = group(pick(g, kids).proc.pgrp)
		}
		opts := pick(g, waitOptions)
		if nohang {
			opts = "WNOHANG|" + opts
		}
		return "wait4", []arg{sel, constant(strings.TrimSuffix(opts, "|0"))}
	}
	idtype, id := "P_ALL", num(0)
	switch n := g.rng.IntN(10); {
	case n < 3 && len(kids) > 0:
		idtype, id = "P_PID", named(pick(g, kids).name)
	case n < 5:
		idtype = "P_PGID"
	case n < 6 && len(kids) > 0:
		idtype, id = "P_PGID", named(pick(g, kids).proc.pgrp)
	}
	opts := pick(g, waitidOptions)
	if nohang {
		opts = "WNOHANG|" + opts
	}
	return "waitid", []arg{constant(idtype), id, constant(opts)}
}

func mvWaitNohang(g *gen) {
	t := g.actor(func(t *task) bool { return len(g.childrenOf(t.proc))+len(g.traceesOf(t.proc)) > 0 })
	if t == nil {
		return
	}
	call, args := g.waitCall(t.proc, true)
	g.call(t, call, args...)
}

// mvWaitBlock starts a blocking wait, at most one per process so that no two waiters race
// for a child; init waits in the background only rarely, as it acts for everyone else.
func mvWaitBlock(g *gen) {
	t := g.actor(func(t *task) bool {
		busy := false
		for _, o := range t.proc.threads {
			busy = busy || o.bg == "wait"
		}
		return !busy && len(g.childrenOf(t.proc))+len(g.traceesOf(t.proc)) > 0 &&
			(t.name != "init" || g.chance(10))
	})
	if t == nil {
		return
	}
	call, args := g.waitCall(t.proc, false)
	g.background(t, "wait", call, args...)
}

var killSignals = []string{"SIGKILL", "SIGSTOP", "SIGCONT", "SIGCONT", "SIGTERM", "SIGUSR1", "SIGCHLD",
	"SIGTSTP", "SIGURG", "0"}

// mvKill sends a signal to a task, its process group, or with tgkill to one thread.
func mvKill(g *gen) {
	from := g.actor(func(t *task) bool { return t.tracer == nil })
	to := pick(g, g.live())
	if from == nil || to == nil {
		return
	}
	sig := pick(g, killSignals)
	switch n := g.rng.IntN(10); {
	case n < 6:
		if g.mayKill(from, to, sig, toProcess) {
			g.call(from, "kill", named(to.name), constant(sig))
			g.killed(to, sig, toProcess)
		}
	case n < 8:
		if g.mayKill(from, to, sig, toGroup) {
			g.call(from, "kill", group(to.proc.pgrp), constant(sig))
			g.killed(to, sig, toGroup)
		}
	default:
		if g.mayKill(from, to, sig, toThread) {
			g.call(from, "tgkill", named(to.proc.leader.name), named(to.name), constant(sig))
			g.killed(to, sig, toThread)
		}
	}
}

// A signal's scope: to's process, the process group it is in, or to alone.
type scope int

const (
	toProcess scope = iota
	toGroup
	toThread
)

// mayKill reports whether from may send sig to to's process, group or thread with Linux
// giving one answer. A stop signal never goes to the sender's own process: which of its
// threads takes it, and so whether the sender stops before its call returns, is a race on
// Linux; nor does a traced task send signals, as the SIGCHLD its child's stop or death sends
// back may stop it before its call returns, or not. Nor does a signal go where its death could
// come back to the sender while its call returns (racesWithSender), nor a fatal signal where
// its effect comes back to the sender while its call returns (killRaces); nor to init's
// process group.
func (g *gen) mayKill(from, to *task, sig string, s scope) bool {
	stop := sig == "SIGSTOP" || sig == "SIGTSTP"
	hitsProc := func(o *task) bool { return o.proc == to.proc }
	switch {
	case from.tracer != nil, stop && to.proc == from.proc, g.racesWithSender(from.proc, to.proc):
		return false
	case s != toGroup:
		return !g.killRaces(from, sig, hitsProc)
	}
	return g.mayKillGroup(from, to.proc.pgrp, sig)
}

// mayKillGroup is mayKill for the process group pgrp.
func (g *gen) mayKillGroup(from *task, pgrp, sig string) bool {
	stop := sig == "SIGSTOP" || sig == "SIGTSTP"
	return from.tracer == nil && pgrp != "init" && !(stop && from.proc.pgrp == pgrp) &&
		!g.killRaces(from, sig, func(o *task) bool { return o.proc.pgrp == pgrp }) &&
		!slices.ContainsFunc(g.live(), func(o *task) bool {
			return o.proc.pgrp == pgrp && g.racesWithSender(from.proc, o.proc)
		})
}

// killed updates the picture after sig went to to's process, group or thread.
func (g *gen) killed(to *task, sig string, s scope) {
	if s != toGroup {
		g.signalSent(to.proc, sig)
		return
	}
	g.killedGroup(to.proc.pgrp, sig)
}

// killedGroup updates the picture after sig went to the process group pgrp.
func (g *gen) killedGroup(pgrp, sig string) {
	for _, o := range g.live() {
		if o.proc.leader == o && o.proc.pgrp == pgrp {
			g.signalSent(o.proc, sig)
		}
	}
}

// killRaces reports whether a signal that may be fatal, sent by from to the processes hit
// selects, races with from's own call on Linux: when it kills a tracer whose exit kills from's
// process (PTRACE_O_EXITKILL), or goes to from's own process while a thread of it is traced, so
// that it may be taken, and the process killed, by another thread than from after from's call
// has returned or before (complete_signal kills the whole group at once only when the task the
// signal was sent to is not traced).
func (g *gen) killRaces(from *task, sig string, hit func(*task) bool) bool {
	if sig != "SIGKILL" && sig != "SIGTERM" && sig != "SIGUSR1" {
		return false
	}
	for _, t := range from.proc.threads {
		if t.gone || t.tracer == nil {
			continue
		}
		if t.exitKill && hit(t.tracer) || sig != "SIGKILL" && hit(from) {
			return true
		}
	}
	return false
}

// signalSent updates the picture after a signal to p.
func (g *gen) signalSent(p *proc, sig string) {
	if p == g.init().proc || sig == "0" {
		return
	}
	switch sig {
	case "SIGKILL":
		g.killProc(p)
		return
	case "SIGSTOP", "SIGTSTP":
		p.stopped = true
		g.childNews(p.leader)
	case "SIGCONT":
		p.stopped = false
		g.childNews(p.leader)
	}
	g.signalled(p)
}

func mvSignal(g *gen) {
	t := g.actor(notInit)
	if t == nil {
		return
	}
	sig := pick(g, []string{"SIGCHLD", "SIGUSR1", "SIGTERM", "SIGTSTP", "SIGCONT", "SIGURG"})
	if g.chance(50) {
		g.call(t, "signal", constant(sig), constant(pick(g, []string{"HANDLER", "SIG_IGN", "SIG_DFL"})))
		return
	}
	flags := pick(g, []string{"0", "SA_RESTART", "SA_NOCLDSTOP", "SA_NOCLDWAIT", "SA_RESTART|SA_NOCLDSTOP"})
	g.call(t, "sigaction", constant(sig), constant(pick(g, []string{"HANDLER", "SIG_IGN", "SIG_DFL"})), constant(flags))
}

func mvSetpgid(g *gen) {
	t := g.actor(notInit)
	if t == nil {
		return
	}
	switch n := g.rng.IntN(3); {
	case n == 0:
		g.call(t, "setpgid", num(0), num(0))
		t.proc.pgrp = t.proc.leader.name
	case n == 1 && t.proc.parent != nil && t.proc.parent.idle():
		g.call(t.proc.parent, "setpgid", named(t.proc.leader.name), num(0))
		t.proc.pgrp = t.proc.leader.name
	default:
		other := pick(g, g.live())
		if other == nil || other.proc.pgrp == "init" {
			return
		}
		g.call(t, "setpgid", num(0), named(other.proc.pgrp))
		t.proc.pgrp = other.proc.pgrp
	}
}

func mvSetsid(g *gen) {
	if t := g.actor(notInit); t != nil {
		g.call(t, "setsid")
		t.proc.pgrp = t.proc.leader.name
	}
}

func mvSubreaper(g *gen) {
	if t := g.actor(notInit); t != nil {
		g.call(t, "prctl", constant("PR_SET_CHILD_SUBREAPER"), num(g.rng.IntN(2)))
	}
}

// mvPdeath sets a parent-death signal that is not fatal by default: a child killed by its
// parent's death while its own call (a kill of that parent) returns races with the reply.
func mvPdeath(g *gen) {
	if t := g.actor(notInit); t != nil {
		g.call(t, "prctl", constant("PR_SET_PDEATHSIG"), constant(pick(g, []string{"SIGCONT", "SIGURG", "SIGCHLD", "0"})))
	}
}

func mvGetters(g *gen) {
	t := g.actor(nil)
	if t == nil {
		return
	}
	other := pick(g, g.live())
	switch n := g.rng.IntN(6); {
	case n == 0:
		g.call(t, "getppid")
	case n == 1:
		g.call(t, "getpgrp")
	case n == 2:
		g.call(t, "gettid")
	case n == 3 && other != nil:
		g.call(t, "getpgid", named(other.name))
	case n == 4 && other != nil:
		g.call(t, "getsid", named(other.name))
	default:
		g.call(t, "getpid")
	}
}

var ids = []string{"0", "1000", "1000", "1001", "-1"}

func mvSetuid(g *gen) {
	t := g.actor(notInit)
	if t == nil {
		return
	}
	switch g.rng.IntN(4) {
	case 0:
		g.call(t, "setuid", constant(pick(g, ids[:4])))
	case 1:
		g.call(t, "setresuid", constant(pick(g, ids)), constant(pick(g, ids)), constant(pick(g, ids)))
	case 2:
		g.call(t, "setgid", constant(pick(g, ids[:4])))
	default:
		g.call(t, "setresgid", constant(pick(g, ids)), constant(pick(g, ids)), constant(pick(g, ids)))
	}
}

// mvRlimit lowers or raises RLIMIT_NPROC's soft limit only: the host may withhold
// CAP_SYS_RESOURCE, and its hard limit is its own.
func mvRlimit(g *gen) {
	if t := g.actor(notInit); t != nil {
		g.call(t, "setrlimit", constant("RLIMIT_NPROC"), num(g.rng.IntN(5)))
	}
}

func mvPrio(g *gen) {
	t := g.actor(nil)
	if t == nil {
		return
	}
	which, who := "PRIO_PROCESS", num(0)
	switch g.rng.IntN(3) {
	case 0:
		if o := pick(g, g.live()); o != nil {
			who = named(o.name)
		}
	case 1:
		which = "PRIO_PGRP"
	default:
		which, who = "PRIO_USER", constant(pick(g, ids[:4]))
	}
	if g.chance(50) {
		g.call(t, "getpriority", constant(which), who)
		return
	}
	g.call(t, "setpriority", constant(which), who, num(g.rng.IntN(30)-10))
}

// racesWithSender reports whether a fatal signal to process to could kill process from, the
// sender's, after the sender's call has returned or before, as the host's scheduling decides:
// to's death kills from when to traces a thread of from (PTRACE_O_EXITKILL); and a signal to
// one's own process through a traced thread takes no shortcut to the group exit
// (complete_signal), so another thread, woken to take it, kills the process while the sender
// returns.
func (g *gen) racesWithSender(from, to *proc) bool {
	for _, t := range from.threads {
		if !t.gone && t.tracer != nil && (to == from || t.tracer.proc == to) {
			return true
		}
	}
	return false
}
