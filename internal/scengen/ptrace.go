package scengen

import "slices"

// Exec and ptrace moves.

var seizeOptions = []string{"0", "0", "PTRACE_O_TRACEEXEC", "PTRACE_O_TRACEEXIT",
	"PTRACE_O_TRACECLONE|PTRACE_O_TRACEFORK", "PTRACE_O_EXITKILL", "PTRACE_O_TRACEEXEC|PTRACE_O_TRACEEXIT"}

// mvAttach makes init or another process trace a task, seized or attached. A tracer is never
// traced itself: the stop its call causes sends it SIGCHLD, and whether it stops for that
// before its call returns is a race on Linux. Nor is a task of a process with an exec in
// flight attached: the attach waits for the exec (cred_guard_mutex), and when a signal then
// kills the exec, whether the attach finds the dying task still there is a race too.
func mvAttach(g *gen) {
	tracer := g.actor(func(t *task) bool { return t.tracer == nil && (t.name == "init" || g.chance(40)) })
	target := pick(g, g.live())
	if tracer == nil || target == nil || target.tracer != nil || target.proc == tracer.proc ||
		slices.ContainsFunc(target.proc.threads, func(o *task) bool { return o.bg == "exec" }) {
		return
	}
	if g.chance(25) {
		g.call(tracer, "ptrace", constant("PTRACE_ATTACH"), named(target.name))
		target.held = true
	} else {
		opts := pick(g, seizeOptions)
		g.call(tracer, "ptrace", constant("PTRACE_SEIZE"), named(target.name), num(0), constant(opts))
		target.traceNew = opts == "PTRACE_O_TRACECLONE|PTRACE_O_TRACEFORK"
		target.traceExec = opts == "PTRACE_O_TRACEEXEC" || opts == "PTRACE_O_TRACEEXEC|PTRACE_O_TRACEEXIT"
		target.exitKill = opts == "PTRACE_O_EXITKILL"
		target.held = target.proc.stopped
	}
	target.tracer = tracer
}

// traceEvent records a new task c made by p: with PTRACE_O_TRACEFORK or TRACECLONE both
// stop, and c starts traced by p's tracer.
func (g *gen) traceEvent(p, c *task) {
	if p.tracer == nil || !p.traceNew {
		return
	}
	p.held = true
	c.tracer, c.held, c.traceNew = p.tracer, true, true
}

// tracedPair returns a tracee whose tracer can act now.
func (g *gen) tracedPair() (tracer, tracee *task) {
	var tracees []*task
	for _, t := range g.live() {
		if t.tracer != nil && t.tracer.idle() && t.tracer.tracer == nil {
			tracees = append(tracees, t)
		}
	}
	t := pick(g, tracees)
	if t == nil {
		return nil, nil
	}
	return t.tracer, t
}

func mvPtraceRequest(g *gen) {
	tr, t := g.tracedPair()
	if t == nil {
		return
	}
	switch n := g.rng.IntN(12); {
	case n < 4:
		sig := "0"
		if g.chance(15) {
			sig = "SIGUSR1"
		}
		g.call(tr, "ptrace", constant("PTRACE_CONT"), named(t.name), num(0), constant(sig))
		t.held = t.proc.stopped
	case n < 7:
		g.call(tr, "ptrace", constant("PTRACE_INTERRUPT"), named(t.name))
		t.held, t.poked = true, t.bg != ""
	case n < 8:
		g.call(tr, "ptrace", constant("PTRACE_LISTEN"), named(t.name))
	case n < 10 && t.held:
		// Only a tracee in a stop can be detached: the picture must not
		// count as untraced one whose DETACH failed.
		g.call(tr, "ptrace", constant("PTRACE_DETACH"), named(t.name), num(0), num(0))
		t.tracer, t.held = nil, t.proc.stopped
		g.pokeWaiters(t.proc)
	case n < 10:
		g.call(tr, "ptrace", constant("PTRACE_INTERRUPT"), named(t.name))
		t.held, t.poked = true, t.bg != ""
	default:
		g.call(tr, "ptrace", constant("PTRACE_KILL"), named(t.name))
		g.killProc(t.proc)
	}
}

// mvTracerWait reports a tracee's stop or exit to its tracer; an exec waiting for the
// tracee's release may then go on.
func mvTracerWait(g *gen) {
	tr, t := g.tracedPair()
	if t == nil {
		return
	}
	switch g.rng.IntN(3) {
	case 0:
		g.call(tr, "wait4", constant("-1"), constant("WNOHANG|__WALL"))
	case 1:
		g.call(tr, "wait4", named(t.name), constant("WNOHANG|__WALL"))
	default:
		g.call(tr, "waitid", constant("P_ALL"), num(0), constant("WNOHANG|WEXITED|WSTOPPED|__WALL"))
	}
	for _, o := range t.proc.threads {
		if o.bg == "exec" {
			o.poked = true
		}
	}
}

// mvResume lets a task that may be stopped run again: its tracer resumes it, or init
// continues its process.
func mvResume(g *gen) {
	if tr, t := g.tracedPair(); t != nil && t.held {
		g.call(tr, "ptrace", constant("PTRACE_CONT"), named(t.name), num(0), num(0))
		t.held = t.proc.stopped
		return
	}
	if !g.init().idle() {
		return
	}
	for _, t := range g.live() {
		if t.proc.stopped && t.proc.leader == t {
			g.call(g.init(), "kill", named(t.name), constant("SIGCONT"))
			g.signalSent(t.proc, "SIGCONT")
			return
		}
	}
}

// mvExec execs in a task: in the background when the exec may have to wait for a traced
// sibling's release or stop for its own tracer.
func mvExec(g *gen) {
	t := g.actor(notInit)
	if t == nil {
		return
	}
	waits := t.tracer != nil || slices.ContainsFunc(t.proc.threads, func(o *task) bool {
		return o != t && !o.gone && o.tracer != nil
	})
	if waits {
		g.background(t, "exec", "execve")
	} else {
		g.call(t, "execve")
	}
	for _, o := range t.proc.threads {
		if o != t {
			o.gone = true
		}
	}
	if t.proc.leader != t {
		t.proc.leader = t
	}
	if t.proc.forker != nil {
		t.proc.forker = t // the other threads' children pass to it as they die
	}
	t.proc.threads = []*task{t}
	t.files = fileSet{} // a table of its own, its pidfds closed
	if v := t.vforkParent; v != nil {
		v.poked, t.vforkParent = true, nil
	}
	if t.tracer != nil {
		t.held = true
	}
}

// execDone records that a background exec has returned.
func (g *gen) execDone(t *task) {
	if t.tracer != nil && (t.traceExec || !t.traceNew) {
		t.held = true
	}
}
