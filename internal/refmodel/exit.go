package refmodel

import (
	"slices"

	"golang.org/x/sys/unix"
)

// Exit is exit(2): only the calling thread ends (B1); the process ends
// with its last thread, whose code becomes the process's unless a group
// exit set one (B3).
func (m *Model) Exit(tid, code int) error {
	t := m.task(tid)
	if t == nil || t.state != running {
		return unix.ESRCH
	}
	if t.proc == m.init.proc && t.proc.live == 1 {
		return ErrInitExit
	}
	m.beginExit(t, (code&0xff)<<8)
	m.exitNotify(t)
	m.settle()
	return nil
}

// ExitGroup is exit_group(2) (do_group_exit): the first group exit code
// wins and every other thread is killed (B2). The root init's group exit
// would end with its last thread, so it is refused as a whole.
func (m *Model) ExitGroup(tid, code int) error {
	t := m.task(tid)
	if t == nil || t.state != running {
		return unix.ESRCH
	}
	pr := t.proc
	if pr == m.init.proc {
		return ErrInitExit
	}
	status := (code & 0xff) << 8
	if len(pr.threads) > 1 {
		pr.groupExit, pr.groupCode = true, status
	}
	endJobControl(pr)
	for _, o := range exitOrder(pr, nil) {
		if o == t {
			m.beginExit(o, status)
		} else {
			m.beginExit(o, int(unix.SIGKILL))
		}
		m.queue = append(m.queue, o)
	}
	m.settle()
	return nil
}

// exitOrder lists the running threads of pr but skip in the order their
// exits run when they all die at once: thread-list order, the
// namespace's child reaper swapped to the end (reaperLast). Linux runs
// them as they get the CPU; the order shows only in how their children
// are appended to a reaper's list, and this is the kernel package's
// choice.
func exitOrder(pr *process, skip *task) []*task {
	var order []*task
	for _, o := range pr.threads {
		if o.state == running && o != skip {
			order = append(order, o)
		}
	}
	reaperLast(order)
	return order
}

// beginExit is do_exit's start: PF_EXITING and signal->live. The thread
// that takes live to zero fixes what wait will report.
func (m *Model) beginExit(t *task, status int) {
	t.state = exiting
	t.exitCode = status
	pr := t.proc
	pr.live--
	if pr.live == 0 {
		t.dead = true
		pr.exitStatus = status
		if pr.groupExit {
			pr.exitStatus = pr.groupCode
		}
	}
}

// settle runs the exits that fatal signals started, and the ends of
// namespace inits' exits whose namespace has emptied, until none is left.
func (m *Model) settle() {
	for {
		if len(m.stoppers) > 0 {
			pr := m.stoppers[0]
			m.stoppers = m.stoppers[1:]
			m.doSignalStop(pr)
			continue
		}
		if len(m.queue) > 0 {
			t := m.queue[0]
			m.queue = m.queue[1:]
			m.exitNotify(t)
			continue
		}
		if i := m.drainedZapper(); i >= 0 {
			pr := m.zappers[i]
			m.zappers = slices.Delete(m.zappers, i, i+1)
			father := pr.zapping
			pr.zapping = nil
			m.becomeZombie(father)
			continue
		}
		return
	}
}

// drainedZapper returns the index of a namespace init whose namespace
// holds no pid but its own, or -1.
func (m *Model) drainedZapper() int {
	for i, pr := range m.zappers {
		want := 1
		if pr.zapping != pr.leader {
			want = 2 // the zombie leader's pid is still allocated
		}
		if len(pr.ns.pids) <= want {
			return i
		}
	}
	return -1
}

// exitNotify is forget_original_parent followed by exit_notify's end.
func (m *Model) exitNotify(father *task) {
	pr := father.proc
	ns := pr.ns
	m.exitPtrace(father)
	// find_child_reaper
	if ns.reaper == father {
		if alive := findAliveThread(pr); alive != nil {
			ns.reaper = alive
		} else {
			m.hits["zap"]++
			m.zap(father)
			m.orphanCheckOnExit(father)
			return
		}
	}
	m.reparentChildren(father)
	m.orphanCheckOnExit(father)
	m.becomeZombie(father)
}

// orphanCheckOnExit is exit_notify's kill_orphaned_pgrp(leader, NULL),
// when father's exit ended its process.
func (m *Model) orphanCheckOnExit(father *task) {
	if pr := father.proc; father.dead && pr.parent != nil {
		m.killOrphanedPgrp(pr, pr.parent.proc, pr)
	}
}

// findAliveThread is find_alive_thread: the first thread not exiting.
func findAliveThread(pr *process) *task {
	for _, t := range pr.threads {
		if t.state == running {
			return t
		}
	}
	return nil
}

// findNewReaper is find_new_reaper (B8).
func (m *Model) findNewReaper(father *task) *task {
	if t := findAliveThread(father.proc); t != nil {
		return t
	}
	if father.proc.hasSub {
		level := father.proc.ns.level
		for r := father.proc.parent; r != nil && r.proc.ns.level == level; r = r.proc.parent {
			if !r.proc.isSub {
				continue
			}
			if t := findAliveThread(r.proc); t != nil {
				m.hits["subreaper adopts"]++
				return t
			}
		}
	}
	return father.proc.ns.reaper
}

// reparentChildren is the rest of forget_original_parent (B9): every
// child goes to the new reaper, each thread with a parent-death signal
// sends it, and a reaper in another process takes over zombies as if they
// had just died.
func (m *Model) reparentChildren(father *task) {
	if len(father.children) == 0 {
		return
	}
	reaper := m.findNewReaper(father)
	var dead []*process
	for _, c := range father.children {
		c.parent = reaper
		for _, t := range slices.Clone(c.threads) {
			if t.pdeath != 0 {
				m.sendPdeath(father, t)
			}
		}
		if reaper.proc == father.proc {
			continue
		}
		// reparent_leader
		c.exitSignal = int(unix.SIGCHLD)
		if c.leader.state == zombie && len(c.threads) == 1 && c.tracer == nil {
			m.hits["zombie renotified"]++
			if m.notifyParent(c) {
				dead = append(dead, c)
			}
		}
	}
	moved := father.children
	reaper.children = append(reaper.children, moved...)
	father.children = nil
	for _, c := range dead {
		m.release(c.leader)
	}
	if reaper.proc != father.proc {
		for _, c := range moved {
			m.killOrphanedPgrp(c, father.proc, nil) // reparent_leader
		}
	}
}

// sendPdeath is group_send_sig_info(pdeath_signal, SEND_SIG_NOINFO) from
// the exiting parent thread: a signal from user context, so it is subject
// to check_kill_permission.
func (m *Model) sendPdeath(father, t *task) {
	s, c := father.creds, t.creds
	if !(s.EUID == c.SUID || s.EUID == c.UID || s.UID == c.SUID || s.UID == c.UID || s.hasCap(unix.CAP_KILL)) {
		m.PdeathDenied++
		m.hits["pdeath denied"]++
		return
	}
	// Forced when sent from an ancestor namespace, where the sender is
	// invisible from the target's.
	m.sendSignal(t.proc, t.pdeath, father.pid.nrIn(t.proc.ns) == 0)
}

// becomeZombie is the end of exit_notify (B5, B6).
func (m *Model) becomeZombie(t *task) {
	t.state = zombie
	pr := t.proc
	if t == pr.leader && pr.tracer != nil {
		m.notifyTracer(pr)
		return
	}
	autoreap := true // an untraced non-leader thread always reaps itself
	if t == pr.leader {
		autoreap = len(pr.threads) == 1 && m.notifyParent(pr)
	}
	if autoreap {
		m.release(t)
	}
}

// notifyParent is do_notify_parent for a process whose leader is a zombie
// alone in its group (B7); it reports whether the process is to be reaped
// at once.
func (m *Model) notifyParent(pr *process) bool {
	pp := pr.parent.proc
	sig := pr.exitSignal
	if sig != int(unix.SIGCHLD) && pr.parentExecSeq != pp.execSeq {
		m.hits["exit signal reset by parent's exec"]++
		sig = int(unix.SIGCHLD) // the parent changed security domain
	}
	act := pp.sighand.act[unix.SIGCHLD]
	autoreap := false
	if sig == int(unix.SIGCHLD) && (act.Handler == SigIgn || act.Flags&SaNoCldWait != 0) {
		autoreap = true
		if act.Handler == SigIgn {
			sig = 0
		}
	}
	// A namespace init in zap_pid_ns_processes reaps every child at once
	// with its wait loop, whatever the child's exit signal.
	if pp.zapping != nil {
		autoreap = true
	}
	if sig > 0 && sig <= nSig {
		m.sendSignal(pp, sig, false)
	}
	if !autoreap {
		pr.exitState = procZombie
	} else {
		m.hits["autoreap"]++
	}
	return autoreap
}

// release is release_task: the task's pid and RLIMIT_NPROC charge go; a
// leader takes its process off its parent's children list and out of its
// process group and session. The last thread besides a zombie leader
// notifies the leader's parent (B6).
func (m *Model) release(t *task) {
	pr := t.proc
	if t.creds.UID != 0 {
		m.nproc[t.creds.UID]--
	}
	m.nthreads--
	delete(m.tasks, t.pid.nrs[0])
	pr.threads = slices.DeleteFunc(pr.threads, func(o *task) bool { return o == t })
	t.pid.task = nil
	m.putPID(t.pid)
	if t != pr.leader {
		if l := pr.leader; len(pr.threads) == 1 && l.state == zombie {
			m.hits["delayed leader notified"]++
			if m.notifyParent(pr) {
				m.release(l)
			}
		}
		return
	}
	m.unlink(pr) // ptrace_release_task
	par := pr.parent
	par.children = slices.DeleteFunc(par.children, func(c *process) bool { return c == pr })
	pr.pgrp.pgrps--
	pr.sess.sesses--
	m.putPID(pr.pgrp)
	m.putPID(pr.sess)
}

// sendSignal delivers sig to the process pr (prepare_signal and
// complete_signal, for the dispositions the model has). force is set for
// a sender in an ancestor namespace, which may kill or stop a namespace
// init with SIGKILL or SIGSTOP, and for signals the kernel generates.
func (m *Model) sendSignal(pr *process, sig int, force bool) {
	m.sendSignalTo(pr, nil, sig, force)
}

// sendSignalTo is sendSignal for a signal queued on thread to (tgkill,
// tkill, send_sig_info) rather than on the process (to nil); a tracee's
// queue and the masks tell them apart.
func (m *Model) sendSignalTo(pr *process, to *task, sig int, force bool) {
	if sig < 1 || sig > nSig || pr.groupExit || pr.live == 0 {
		return
	}
	switch {
	case sig == int(unix.SIGCONT):
		m.cont(pr)
	case uint64(1)<<(sig-1)&stopMask != 0:
		flushQueues(pr, contBit)
	}
	if m.holdBlocked(pr, to, sig) {
		return
	}
	if pr.tracer != nil && sig != int(unix.SIGKILL) {
		m.queueTraced(pr, sig, to != nil)
		return
	}
	m.actOn(pr, sig, force)
}

// actOn is what a process not traced does with a signal that reaches a
// thread (the rest of send_signal; also get_signal's handling of one
// dequeued, with force set: past an init's send-time filter, only SIGKILL
// and SIGSTOP act on it).
func (m *Model) actOn(pr *process, sig int, force bool) {
	act := pr.sighand.act[sig]
	kernelOnly := sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP)
	if kernelOnly {
		act = SigAction{}
	}
	switch {
	case pr.unkillable && act.Handler == SigDfl && !(force && kernelOnly):
		return
	case act.Handler != SigDfl:
		return // ignored, or caught by a handler that returns
	}
	switch unix.Signal(sig) {
	case unix.SIGCHLD, unix.SIGURG, unix.SIGWINCH, unix.SIGCONT:
		return // ignored by default
	case unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
		// Acted on once the call is over (settle), as the target acts
		// on it when it next runs; a stopped process leaves it pending
		// until SIGCONT flushes it.
		if !pr.stopped {
			if pr.stopPending == 0 {
				m.stoppers = append(m.stoppers, pr)
			}
			pr.stopPending |= 1 << (sig - 1)
		}
		return
	}
	if pr.stopped && sig != int(unix.SIGKILL) {
		pr.pendingSigs |= 1 << (sig - 1) // taken when continued
		return
	}
	m.kill(pr, sig)
}

// kill starts the group exit of a fatal signal.
func (m *Model) kill(pr *process, sig int) {
	status := sig
	switch unix.Signal(sig) {
	case unix.SIGQUIT, unix.SIGILL, unix.SIGTRAP, unix.SIGABRT, unix.SIGBUS, unix.SIGFPE,
		unix.SIGSEGV, unix.SIGXCPU, unix.SIGXFSZ, unix.SIGSYS:
		if pr.rlim[unix.RLIMIT_CORE].Cur != 0 {
			status |= 0x80
		}
	}
	m.hits["killed by "+unix.SignalName(unix.Signal(sig))]++
	pr.groupExit, pr.groupCode = true, status
	endJobControl(pr)
	for _, t := range pr.threads {
		if t.state == running {
			m.beginExit(t, sig)
			m.queue = append(m.queue, t)
		}
	}
}

// zap is zap_pid_ns_processes (B11), run by a namespace init's last
// thread: no more pids, SIGCHLD ignored, zombie children reaped, every
// other task of the namespace killed; the exit resumes in settle once the
// namespace has emptied.
func (m *Model) zap(father *task) {
	pr := father.proc
	ns := pr.ns
	ns.disabled = true
	pr.sighand.act[unix.SIGCHLD] = SigAction{Handler: SigIgn}
	pr.zapping = father
	m.zappers = append(m.zappers, pr)
	for _, th := range slices.Clone(pr.threads) {
		for _, c := range slices.Clone(th.children) {
			if c.exitState == procZombie {
				m.release(c.leader)
			}
		}
	}
	nrs := make([]int, 0, len(ns.pids))
	for nr := range ns.pids {
		nrs = append(nrs, nr)
	}
	slices.Sort(nrs)
	start := len(m.queue)
	for _, nr := range nrs {
		if p := ns.pids[nr]; nr >= 2 && p != nil && p.task != nil && p.task.proc != pr {
			m.sendSignal(p.task.proc, int(unix.SIGKILL), true)
		}
	}
	reaperLast(m.queue[start:])
}

// reaperLast puts the first namespace child reaper among the exits that
// one kill starts last, swapping it with the last one: the kernel
// package's order (finishExits), one of the orders Linux may take.
func reaperLast(batch []*task) {
	for i, t := range batch {
		if t.proc.ns.reaper == t {
			last := len(batch) - 1
			batch[i], batch[last] = batch[last], batch[i]
			return
		}
	}
}
