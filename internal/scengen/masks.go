package scengen

import "strings"

// Signal masks: blocking and unblocking, the pending set, tkill, and the calls that wait for
// signals. The picture does not follow masks: a signal a task blocks is still taken as acted
// on (a task believed stopped or gone merely makes no more calls, which loses nothing), and a
// task that unblocks signals is counted as signalled, since it may take one now.

// maskSignals are the signals masks are made of: SIGKILL and SIGSTOP, which no mask holds,
// among them now and then.
var maskSignals = []string{"SIGUSR1", "SIGUSR1", "SIGUSR2", "SIGTERM", "SIGTERM", "SIGCHLD", "SIGCHLD",
	"SIGTSTP", "SIGCONT", "SIGINT", "SIGURG", "SIGRTMIN+2", "SIGKILL", "SIGSTOP"}

// sigset is a random signal set of up to three signals.
func (g *gen) sigset() arg {
	var names []string
	for range g.rng.IntN(4) {
		if s := pick(g, maskSignals); !strings.Contains(strings.Join(names, " "), s) {
			names = append(names, s)
		}
	}
	return arg{formList, "[" + strings.Join(names, " ") + "]"}
}

func mvSigmask(g *gen) {
	t := g.actor(notInit)
	if t == nil {
		return
	}
	how := pick(g, []string{"SIG_BLOCK", "SIG_BLOCK", "SIG_UNBLOCK", "SIG_SETMASK"})
	g.call(t, "sigprocmask", constant(how), g.sigset())
	if how != "SIG_BLOCK" {
		// Pending signals it unblocks are taken now.
		g.signalled(t.proc)
	}
}

func mvSigpending(g *gen) {
	if t := g.actor(notInit); t != nil {
		g.call(t, "sigpending")
	}
}

// mvSigwait waits for signals: sigtimedwait with a short timeout in the foreground, or without
// one, or sigsuspend, in the background, joined once a signal may have come.
func mvSigwait(g *gen) {
	t := g.actor(notInit)
	if t == nil {
		return
	}
	switch g.rng.IntN(3) {
	case 0:
		g.call(t, "sigtimedwait", g.sigset(), constant(pick(g, []string{"0", "0", "5"})))
	case 1:
		g.background(t, "sig", "sigtimedwait", g.sigset(), num(-1))
	default:
		g.background(t, "sig", "sigsuspend", g.sigset())
	}
}

// mvTkill sends a signal to one thread with tkill, as mvKill's tgkill does.
func mvTkill(g *gen) {
	from := g.actor(func(t *task) bool { return t.tracer == nil })
	to := pick(g, g.live())
	if from == nil || to == nil {
		return
	}
	sig := pick(g, killSignals)
	stop := sig == "SIGSTOP" || sig == "SIGTSTP"
	if stop && to.proc == from.proc || g.racesWithSender(from.proc, to.proc) ||
		g.killRaces(from, sig, func(o *task) bool { return o.proc == to.proc }) {
		return
	}
	g.call(from, "tkill", named(to.name), constant(sig))
	g.signalSent(to.proc, sig)
}
