package scengen

// The killrace area: a task asleep in a wait is killed in the same step as the news it waits
// for (docs/linux-semantics.md B13, C12). Each file sets a parent up (a process of init's, or
// a pid namespace's init) with a thread or two and a few children, puts one of its threads to
// sleep in wait4 or waitid with a random selector and options, and then makes one step deliver
// both the news and a fatal signal:
//
//   - the child exits, or is killed, and its exit signal is fatal to the parent (an init
//     ignores it, a SIGHUP the parent inherited ignoring is not fatal at all);
//   - the child traces the parent with PTRACE_O_EXITKILL and exits (exit_ptrace's kill and
//     do_notify_parent in one tasklist_lock section);
//   - a thread of another process traces the parent with PTRACE_O_EXITKILL and a zombie child
//     of the parent's, and exits: exit_ptrace kills the parent and hands the zombie back;
//   - another process traces the child, whose exit signal is fatal, and its wait reaps the
//     child's zombie, handing it back to the parent with that signal.
//
// Every other task is made to exit afterwards, and init's waits then show which zombies the
// killed waiter reaped and which it left. What a file may do is chosen so that Linux gives one
// answer: the waiter sleeps before the step (its selector matches nothing ready), only one
// thread of the parent has children, and nothing else runs while the step's exits settle.

// killKinds are the ways one step kills the waiter as its news comes.
var killKinds = []string{"exit-signal", "exitkill-child", "exitkill-thread", "handback"}

// fatalExitSignals are exit signals that kill a parent with default dispositions: not SIGHUP,
// which every task inherits init's SIG_IGN for, nor one that dumps core, which
// complete_signal leaves to the thread that dequeues it, so that a woken wait may return first.
var fatalExitSignals = []string{"SIGKILL", "SIGTERM", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGINT", "SIGPIPE"}

func generateKillRace(g *gen) {
	kind := pick(g, killKinds)
	g.emit("# kill: %s", kind)
	nsInit := g.chance(15)
	parent := g.newName("P")
	if nsInit {
		g.bind(parent, g.init(), "clone", constant("CLONE_NEWPID|SIGCHLD"))
	} else {
		g.bind(parent, g.init(), "fork")
	}
	var threads []string
	for range g.rng.IntN(3) {
		th := g.newName("T")
		g.bind(th, g.task(parent), "clone", constant("CLONE_THREAD|CLONE_SIGHAND|CLONE_VM"))
		threads = append(threads, th)
	}
	waiter := parent
	if len(threads) > 0 && g.chance(50) {
		waiter = pick(g, threads)
	}
	sig := "SIGCHLD"
	switch kind {
	case "exit-signal", "handback":
		sig = pick(g, fatalExitSignals)
	}
	child := g.newName("C")
	cloneClass := sig != "SIGCHLD"
	if cloneClass {
		g.bind(child, g.task(parent), "clone", num(0), constant(sig))
	} else {
		g.bind(child, g.task(parent), "fork")
	}
	var others []string
	for range g.rng.IntN(3) {
		o := g.newName("O")
		g.bind(o, g.task(parent), "fork")
		others = append(others, o)
	}
	moved := !nsInit && g.chance(25)
	if moved {
		g.call(g.task(child), "setpgid", num(0), num(0))
	}

	// A tracer set up before the waiter sleeps.
	var tracer, tracerThread, held string
	switch kind {
	case "exitkill-child":
		tracer = child
		g.call(g.task(child), "ptrace", constant("PTRACE_SEIZE"), parentPid(nsInit, parent), num(0), constant("PTRACE_O_EXITKILL"))
	case "exitkill-thread":
		tracer = g.newName("X")
		g.bind(tracer, g.init(), "fork")
		tracerThread = g.newName("TX")
		g.bind(tracerThread, g.task(tracer), "clone", constant("CLONE_THREAD|CLONE_SIGHAND|CLONE_VM"))
		if !nsInit {
			held = child
			g.call(g.task(tracerThread), "ptrace", constant("PTRACE_SEIZE"), named(child), num(0), num(0))
		}
		g.call(g.task(tracerThread), "ptrace", constant("PTRACE_SEIZE"), named(parent), num(0), constant("PTRACE_O_EXITKILL"))
	case "handback":
		if nsInit {
			break // a tracer outside the namespace would see the child by another pid
		}
		tracer = g.newName("R")
		g.bind(tracer, g.init(), "fork")
		g.call(g.task(tracer), "ptrace", constant("PTRACE_SEIZE"), named(child), num(0), num(0))
	}

	// A namespace's init ignores its children's exit signals: with no tracer to kill it, its
	// wait must be one the child's exit ends.
	survives := nsInit && (kind == "exit-signal" || kind == "handback")
	call, args := killRaceWait(g, child, moved, cloneClass, survives)
	g.emit("%s.%s &", waiter, callText(call, args...))

	switch kind {
	case "exit-signal":
		if g.chance(25) && !nsInit {
			g.call(g.init(), "kill", named(child), constant("SIGKILL"))
		} else {
			g.call(g.task(child), "exit", num(g.rng.IntN(8)))
		}
	case "exitkill-child":
		g.call(g.task(child), "exit", num(g.rng.IntN(8)))
	case "exitkill-thread":
		if held != "" {
			g.call(g.task(child), "exit", num(g.rng.IntN(8)))
		}
		g.call(g.task(tracerThread), "exit", num(0))
	case "handback":
		g.call(g.task(child), "exit", num(g.rng.IntN(8)))
		if tracer != "" {
			g.call(g.task(tracer), "wait4", named(child), constant("__WALL"))
		}
	}
	g.emit("join %s", waiter)

	// Afterwards: everyone else exits, and init's waits show what was left.
	survivors := append([]string{}, others...)
	if kind == "exitkill-thread" || kind == "handback" && tracer != "" {
		survivors = append(survivors, tracer)
	}
	for _, s := range survivors {
		g.call(g.task(s), "exit", num(0))
	}
	if nsInit {
		// The namespace dies with its init, if that was killed; otherwise kill it.
		g.call(g.init(), "kill", named(parent), constant("SIGKILL"))
	} else {
		g.call(g.task(parent), "exit_group", num(0))
	}
	for range len(survivors) + 3 {
		g.call(g.init(), "wait4", num(-1), constant("__WALL|WNOHANG"))
	}
}

// parentPid is how the parent's child names it: a namespace's init is pid 1 there.
func parentPid(nsInit bool, parent string) arg {
	if nsInit {
		return num(1)
	}
	return named(parent)
}

// killRaceWait returns the waiter's call: wait4 or waitid, with a selector that names the child
// among others (any child, its pid, its process group, or the parent's group it left) and
// options that include its wait class, or, now and then, leave it out; with matchChild, one
// that any child's exit ends.
func killRaceWait(g *gen, child string, moved, cloneClass, matchChild bool) (string, []arg) {
	if matchChild {
		if g.chance(50) {
			return "wait4", []arg{num(-1), constant("__WALL")}
		}
		return "waitid", []arg{constant("P_ALL"), num(0), constant(pick(g, []string{"WEXITED|__WALL", "WEXITED|WNOWAIT|__WALL"}))}
	}
	class := ""
	switch {
	case g.chance(50):
		class = "|__WALL"
	case cloneClass:
		class = "|__WCLONE"
	}
	if g.chance(50) {
		sel := pick(g, []arg{num(-1), named(child), num(0)})
		if moved && g.chance(50) {
			sel = group(child)
		}
		opts := pick(g, []string{"", "WUNTRACED", "WCONTINUED"}) + class
		switch {
		case opts == "":
			opts = "0"
		case opts[0] == '|':
			opts = opts[1:]
		}
		return "wait4", []arg{sel, constant(opts)}
	}
	opts := "WEXITED" + class
	if g.chance(35) {
		opts += "|WNOWAIT"
	}
	switch g.rng.IntN(3) {
	case 0:
		return "waitid", []arg{constant("P_ALL"), num(0), constant(opts)}
	case 1:
		return "waitid", []arg{constant("P_PID"), named(child), constant(opts)}
	}
	id := num(0)
	if moved && g.chance(50) {
		id = named(child)
	}
	return "waitid", []arg{constant("P_PGID"), id, constant(opts)}
}

// task returns the generator's task of that name, made on first use: the killrace area keeps
// no picture beyond the names, as its files follow one plan.
func (g *gen) task(name string) *task {
	for _, t := range g.tasks {
		if t.name == name {
			return t
		}
	}
	t := &task{name: name}
	t.proc = &proc{leader: t, threads: []*task{t}}
	g.tasks = append(g.tasks, t)
	return t
}
