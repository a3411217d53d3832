package refmodel

import (
	"math"
	"slices"

	"golang.org/x/sys/unix"
)

// endJobControl clears the job-control state when a group exit starts
// (signal->flags = SIGNAL_GROUP_EXIT).
func endJobControl(pr *process) {
	pr.stopped, pr.stopCode, pr.continued = false, 0, false
	pr.stopPending, pr.pendingSigs = 0, 0
	// A SIGKILLed tracee leaves its ptrace stop; its queue goes with it.
	pr.ptStop, pr.exitCode, pr.trapPending = ptRunning, 0, false
	pr.sigPrivate, pr.sigShared = 0, 0
}

// cont is prepare_signal's SIGCONT: pending stops go; a stopped process
// runs again, owes its parent a continue, and takes the fatal signals it
// got while stopped, synchronous ones first, lowest first.
func (m *Model) cont(pr *process) {
	pr.stopPending = 0
	pr.stopDequeued = false
	flushQueues(pr, stopMask)
	if !pr.stopped {
		return
	}
	m.hits["continued"]++
	pr.stopped, pr.stopCode, pr.continued = false, 0, true
	if pr.parent != nil {
		m.notifyCldstop(pr.parent.proc) // CLD_CONTINUED, from get_signal
	}
	pending := pr.pendingSigs
	pr.pendingSigs = 0
	sync := []int{int(unix.SIGILL), int(unix.SIGTRAP), int(unix.SIGBUS), int(unix.SIGFPE),
		int(unix.SIGSEGV), int(unix.SIGSYS)}
	var order []int
	for sig := 1; sig <= nSig; sig++ {
		if pending&(1<<(sig-1)) != 0 && slices.Contains(sync, sig) {
			order = append(order, sig)
		}
	}
	for sig := 1; sig <= nSig; sig++ {
		if pending&(1<<(sig-1)) != 0 && !slices.Contains(sync, sig) {
			order = append(order, sig)
		}
	}
	for _, sig := range order {
		if pr.sighand.act[sig].Handler == SigDfl {
			m.kill(pr, sig)
			return
		}
	}
}

// doSignalStop acts on pr's pending stop signals, lowest first: SIGTSTP,
// SIGTTIN and SIGTTOU do nothing in an orphaned group or once no longer
// at their default action; the first other one stops the process.
func (m *Model) doSignalStop(pr *process) {
	orphaned := m.orphaned(pr.pgrp, nil)
	pending := pr.stopPending
	pr.stopPending = 0
	for sig := 1; sig <= nSig && !pr.groupExit && pr.live > 0 && !pr.stopped; sig++ {
		if pending&(1<<(sig-1)) == 0 {
			continue
		}
		if sig != int(unix.SIGSTOP) && (orphaned || pr.sighand.act[sig].Handler != SigDfl) {
			m.hits["stop ignored"]++
			continue
		}
		m.groupStop(pr, sig)
	}
}

// groupStop is do_signal_stop completing for a process that is not
// traced: it is stopped, owes its parent the stop report, and the parent
// is told (do_notify_parent_cldstop, CLD_STOPPED).
func (m *Model) groupStop(pr *process, sig int) {
	if pr.stopped {
		return
	}
	m.hits["stopped"]++
	pr.stopped, pr.stopCode, pr.continued = true, sig, false
	if pr.parent != nil {
		m.notifyCldstop(pr.parent.proc)
	}
}

// members returns the processes of the group named by g, the one that
// joined last first.
func (m *Model) members(g *pid) []*process {
	var out []*process
	for _, tid := range m.Tasks() {
		if t := m.tasks[tid]; t.proc.leader == t && t.proc.pgrp == g {
			out = append(out, t.proc)
		}
	}
	slices.SortFunc(out, func(a, b *process) int { return b.joined - a.joined })
	return out
}

// orphaned is will_become_orphaned_pgrp.
func (m *Model) orphaned(g *pid, ignored *process) bool {
	for _, pr := range m.members(g) {
		if pr == ignored || (pr.leader.state == zombie && len(pr.threads) == 1) {
			continue
		}
		p := pr.parent
		if p == nil || p.proc == m.init.proc {
			continue
		}
		if p.proc.pgrp != g && p.proc.sess == pr.sess {
			return false
		}
	}
	return true
}

// killOrphanedPgrp is kill_orphaned_pgrp (B10).
func (m *Model) killOrphanedPgrp(pr, outside, ignored *process) {
	g := pr.pgrp
	if outside.pgrp == g || outside.sess != pr.sess || !m.orphaned(g, ignored) {
		return
	}
	ms := m.members(g)
	if !slices.ContainsFunc(ms, func(x *process) bool { return x.stopped }) {
		return
	}
	m.hits["orphaned group hung up"]++
	for _, sig := range []int{int(unix.SIGHUP), int(unix.SIGCONT)} {
		for _, x := range ms {
			m.sendSignal(x, sig, true)
		}
	}
}

// Setpgid is setpgid(2) (kernel/sys.c).
func (m *Model) Setpgid(tid, upid, pgid int) error {
	t := m.task(tid)
	if t == nil || t.state != running {
		return unix.ESRCH
	}
	ns := t.proc.ns
	if upid == 0 {
		upid = t.proc.leader.pid.nrIn(ns)
	}
	if pgid == 0 {
		pgid = upid
	}
	if pgid < 0 {
		return unix.EINVAL
	}
	p := ns.lookup(upid)
	switch {
	case p == nil:
		return unix.ESRCH
	case p.proc.leader != p:
		return unix.EINVAL
	}
	pr := p.proc
	if pr.parent != nil && pr.parent.proc == t.proc {
		if pr.sess != t.proc.sess {
			return unix.EPERM
		}
		if pr.execed {
			return unix.EACCES // PF_FORKNOEXEC cleared
		}
	} else if pr != t.proc {
		return unix.ESRCH
	}
	if p.pid.sesses > 0 && pr.sess == p.pid {
		return unix.EPERM
	}
	g := p.pid
	if pgid != upid {
		g = ns.pids[pgid]
		if g == nil || g.pgrps == 0 || m.members(g)[0].sess != t.proc.sess {
			return unix.EPERM
		}
	}
	if pr.pgrp != g {
		m.hits["setpgid moves"]++
		pr.pgrp.pgrps--
		m.putPID(pr.pgrp)
		pr.pgrp = g
		g.pgrps++
		pr.joined = m.next()
	}
	return nil
}

// prioTargets lists the threads getpriority and setpriority act on, in
// Linux's order; none when the target names nothing.
func (m *Model) prioTargets(t *task, which, who int) []*task {
	ns := t.proc.ns
	switch which {
	case unix.PRIO_PROCESS:
		if who == 0 {
			return []*task{t}
		}
		if p := ns.lookup(who); p != nil {
			return []*task{p}
		}
	case unix.PRIO_PGRP:
		g := t.proc.pgrp
		if who != 0 {
			g = ns.pids[who]
		}
		var out []*task
		if g != nil {
			for _, pr := range m.members(g) {
				out = append(out, pr.threads...)
			}
		}
		return out
	case unix.PRIO_USER:
		uid := uint32(who)
		if who == 0 {
			uid = t.creds.UID
		}
		var out []*task
		for _, tid := range m.Tasks() {
			if o := m.tasks[tid]; o.creds.UID == uid && o.pid.nrIn(ns) != 0 {
				out = append(out, o)
			}
		}
		slices.SortFunc(out, func(a, b *task) int {
			if a.proc != b.proc {
				return a.proc.leader.serial - b.proc.leader.serial
			}
			return a.serial - b.serial
		})
		return out
	}
	return nil
}

// Getpriority is getpriority(2): the largest 20 - nice over the targets.
func (m *Model) Getpriority(tid, which, who int) (int, error) {
	t := m.task(tid)
	if t == nil {
		return 0, unix.ESRCH
	}
	if which < unix.PRIO_PROCESS || which > unix.PRIO_USER {
		return 0, unix.EINVAL
	}
	best := -1
	for _, p := range m.prioTargets(t, which, who) {
		best = max(best, 20-p.nice)
	}
	if best < 0 {
		return 0, unix.ESRCH
	}
	return best, nil
}

// Setpriority is setpriority(2) with set_one_prio, the LSM hook
// cap_task_setnice included.
func (m *Model) Setpriority(tid, which, who, nice int) error {
	t := m.task(tid)
	if t == nil {
		return unix.ESRCH
	}
	if which < unix.PRIO_PROCESS || which > unix.PRIO_USER {
		return unix.EINVAL
	}
	nice = min(max(nice, -20), 19)
	var err error = unix.ESRCH
	for _, p := range m.prioTargets(t, which, who) {
		c, pc := t.creds, p.creds
		switch {
		case pc.UID != c.EUID && pc.EUID != c.EUID && !c.hasCap(unix.CAP_SYS_NICE):
			err = unix.EPERM
		case nice < p.nice && uint64(20-nice) > p.proc.rlim[unix.RLIMIT_NICE].Cur && !c.hasCap(unix.CAP_SYS_NICE):
			err = unix.EACCES
		case pc.CapPermitted&^c.CapPermitted != 0 && !c.hasCap(unix.CAP_SYS_NICE):
			err = unix.EPERM // cap_task_setnice
		default:
			if err == unix.ESRCH {
				err = nil
			}
			p.nice = nice
		}
	}
	return err
}

// killPermission is check_kill_permission.
func killPermission(s, t *task, sig int) error {
	if sig < 0 || sig > nSig {
		return unix.EINVAL
	}
	c, tc := s.creds, t.creds
	if s.proc == t.proc || c.EUID == tc.SUID || c.EUID == tc.UID || c.UID == tc.SUID || c.UID == tc.UID ||
		c.hasCap(unix.CAP_KILL) || (sig == int(unix.SIGCONT) && s.proc.sess == t.proc.sess) {
		return nil
	}
	return unix.EPERM
}

// groupSend is group_send_sig_info from t to p's process.
func (m *Model) groupSend(t, p *task, sig int) error {
	if err := killPermission(t, p, sig); err != nil || sig == 0 {
		return err
	}
	m.sendSignal(p.proc, sig, t.pid.nrIn(p.proc.ns) == 0)
	return nil
}

// Kill is kill(2) (kill_something_info).
func (m *Model) Kill(tid, upid, sig int) error {
	t := m.task(tid)
	if t == nil || t.state != running {
		return unix.ESRCH
	}
	err := m.kill2(t, upid, sig)
	m.settle()
	return err
}

func (m *Model) kill2(t *task, upid, sig int) error {
	ns := t.proc.ns
	switch {
	case upid > 0:
		p := ns.lookup(upid)
		if p == nil {
			return unix.ESRCH
		}
		return m.groupSend(t, p, sig)
	case upid == math.MinInt32:
		return unix.ESRCH
	case upid == -1:
		count := 0
		var ret error
		// The kernel package walks the caller's namespace in pid order.
		var ps []*task
		for _, tid := range m.Tasks() {
			p := m.tasks[tid]
			if p.proc.leader == p && p.pid.nrIn(ns) > 1 && p.proc != t.proc {
				ps = append(ps, p)
			}
		}
		slices.SortFunc(ps, func(a, b *task) int { return a.pid.nrIn(ns) - b.pid.nrIn(ns) })
		for _, p := range ps {
			count++
			if err := m.groupSend(t, p, sig); err != unix.EPERM {
				ret = err
			}
		}
		if count == 0 {
			return unix.ESRCH
		}
		return ret
	}
	g := t.proc.pgrp
	if upid != 0 {
		g = ns.pids[-upid]
	}
	var ret error = unix.ESRCH
	if g == nil {
		return ret
	}
	for _, pr := range m.members(g) {
		if err := m.groupSend(t, pr.leader, sig); ret != nil {
			ret = err
		}
	}
	return ret
}

// Tgkill is tgkill(2) (do_send_specific): a thread that is exiting never
// takes the signal; SIGCONT's effect on its process remains.
func (m *Model) Tgkill(tid, tgid, ttid, sig int) error {
	t := m.task(tid)
	if t == nil || t.state != running {
		return unix.ESRCH
	}
	if tgid <= 0 || ttid <= 0 {
		return unix.EINVAL
	}
	ns := t.proc.ns
	p := ns.lookup(ttid)
	if p == nil || p.proc.leader.pid.nrIn(ns) != tgid {
		return unix.ESRCH
	}
	return m.sendSpecific(t, p, sig)
}

// sendSpecific is do_send_specific once thread p is found: sig from t to
// p alone.
func (m *Model) sendSpecific(t, p *task, sig int) error {
	if err := killPermission(t, p, sig); err != nil || sig == 0 {
		return err
	}
	pr := p.proc
	switch {
	case p.state == running:
		m.sendSignalTo(pr, p, sig, t.pid.nrIn(pr.ns) == 0)
	case sig == int(unix.SIGCONT) && !pr.groupExit && pr.live > 0:
		m.cont(pr)
	}
	m.settle()
	return nil
}

// jobEvent reports what child c has to report to a wait with opts: a stop
// (CLD_STOPPED) or a continue (CLD_CONTINUED), else 0.
func jobEvent(c *process, opts int) int {
	switch {
	case opts&unix.WUNTRACED != 0 && c.stopped && c.stopCode != 0:
		return cldStopped
	case opts&unix.WCONTINUED != 0 && c.continued:
		return cldContinued
	}
	return 0
}

// reportJob is wait_task_stopped and wait_task_continued.
func reportJob(t *task, c *process, code, opts int) WaitResult {
	res := WaitResult{Pid: c.leader.pid.nrIn(t.proc.ns), Code: code, Status: 0xffff}
	if code == cldStopped {
		res.Status = c.stopCode<<8 | 0x7f
	}
	if opts&unix.WNOWAIT == 0 {
		if code == cldStopped {
			c.stopCode = 0
		} else {
			c.continued = false
		}
	}
	return res
}
