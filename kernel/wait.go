package kernel

import (
	"context"
	"math"

	"golang.org/x/sys/unix"

	"tasklist/internal/abi"
	"tasklist/plan"
)

// siginfo si_code values for SIGCHLD, as waitid reports them.
const (
	CLDExited    = abi.CLD_EXITED
	CLDKilled    = abi.CLD_KILLED
	CLDDumped    = abi.CLD_DUMPED
	CLDTrapped   = abi.CLD_TRAPPED
	CLDStopped   = abi.CLD_STOPPED
	CLDContinued = abi.CLD_CONTINUED
)

// WaitResult is what wait4 and waitid report about a child.
type WaitResult struct {
	// Pid is the child's pid as seen from the caller's namespace; 0 when
	// WNOHANG found nothing ready.
	Pid int
	// Status is the wait4 status word (C8).
	Status unix.WaitStatus
	// Code is waitid's si_code (CLD_*); Signo or exit code is in Status.
	Code int
	// Task is the child's leader, nil when nothing was reported.
	Task *Task
}

// waitSelector is the set of children a wait asks for.
type waitSelector struct {
	all  bool // any child (wait4 -1, P_ALL)
	pid  *PID // with byPgrp, a process group; otherwise one process
	pgrp bool
}

// Wait4 is wait4(2) without rusage (C1, C2, C4–C9): pid -1 waits for any
// child, < -1 for process group -pid, 0 for the caller's process group,
// > 0 for that process. A blocking wait ends with EINTR when ctx is done
// or the caller is killed; a nil ctx is context.Background. Errors: ESRCH
// if the caller has exited; EINVAL for unknown options (WNOWAIT
// included), ESRCH for INT_MIN, ECHILD when no child matches.
func (t *Task) Wait4(ctx context.Context, pid int, options int) (WaitResult, error) {
	if !t.alive() {
		return WaitResult{}, unix.ESRCH
	}
	const valid = unix.WNOHANG | unix.WUNTRACED | unix.WCONTINUED | unix.WNOTHREAD | unix.WCLONE | unix.WALL
	if options&^valid != 0 {
		return WaitResult{}, unix.EINVAL
	}
	if pid == math.MinInt32 {
		return WaitResult{}, unix.ESRCH
	}
	var sel waitSelector
	switch {
	case pid == -1:
		sel.all = true
	case pid < -1:
		sel = waitSelector{pid: t.tg.ns.alloc.Load(-pid), pgrp: true}
	case pid == 0:
		sel = waitSelector{pid: t.tg.pgrp.Load().id, pgrp: true}
	default:
		sel = waitSelector{pid: t.tg.ns.alloc.Load(pid)}
	}
	return t.doWait(ctx, sel, options|unix.WEXITED)
}

// Waitid is waitid(2) (C3): idtype P_ALL, P_PID, P_PGID (id 0: the
// caller's group) or P_PIDFD (id a pidfd of the caller's: the task it
// refers to, as P_PID names one); options must include one of WEXITED,
// WSTOPPED, WCONTINUED. A nonblocking pidfd makes the wait WNOHANG, and
// one that finds nothing ready then fails with EAGAIN unless WNOHANG was
// asked for. ctx is as for Wait4. Errors as Wait4, plus EINVAL for a bad
// idtype or id, EBADF for a P_PIDFD id that is not open, EAGAIN.
func (t *Task) Waitid(ctx context.Context, idtype, id int, options int) (WaitResult, error) {
	if !t.alive() {
		return WaitResult{}, unix.ESRCH
	}
	const valid = unix.WNOHANG | unix.WNOWAIT | unix.WEXITED | unix.WSTOPPED | unix.WCONTINUED |
		unix.WNOTHREAD | unix.WCLONE | unix.WALL
	if options&^valid != 0 || options&(unix.WEXITED|unix.WSTOPPED|unix.WCONTINUED) == 0 {
		return WaitResult{}, unix.EINVAL
	}
	var sel waitSelector
	switch idtype {
	case unix.P_ALL:
		sel.all = true
	case unix.P_PID:
		if id <= 0 {
			return WaitResult{}, unix.EINVAL
		}
		sel = waitSelector{pid: t.tg.ns.alloc.Load(id)}
	case unix.P_PGID:
		if id < 0 {
			return WaitResult{}, unix.EINVAL
		}
		sel = waitSelector{pid: t.tg.pgrp.Load().id, pgrp: true}
		if id != 0 {
			sel.pid = t.tg.ns.alloc.Load(id)
		}
	case unix.P_PIDFD:
		if id < 0 {
			return WaitResult{}, unix.EINVAL
		}
		f := t.Pidfd(id)
		if f == nil {
			return WaitResult{}, unix.EBADF
		}
		if !f.Nonblock() {
			return t.doWait(ctx, waitSelector{pid: f.pid}, options)
		}
		r, err := t.doWait(ctx, waitSelector{pid: f.pid}, options|unix.WNOHANG)
		if err == nil && r.Pid == 0 && options&unix.WNOHANG == 0 {
			return r, unix.EAGAIN
		}
		return r, err
	default:
		return WaitResult{}, unix.EINVAL
	}
	return t.doWait(ctx, sel, options)
}

// doWait is do_wait: report a ready eligible child, or sleep on the
// process's wait event until one is ready, or fail with ECHILD when none
// is eligible.
//
// Each round of its loop is one scan under the process lock (waitScan),
// whose step the loop acts on. As in do_wait, the scan comes before the
// test for a pending signal: a wait woken by a kill, or killed while the
// news it waits for was being made, still reports (and reaps) a child
// that is ready by then, and its task dies once the call has returned
// (call.go).
//
// A signal that interrupts the sleep (signal_intr.go) makes do_wait return
// -ERESTARTSYS once a rescan finds nothing to report: a handler without
// SA_RESTART ends the call with EINTR; a stop, SA_RESTART or a signal no
// longer handled restarts it. A stop takes the thread out of the call
// until it is continued; a handled signal taken meanwhile without
// SA_RESTART then ends it with EINTR without a rescan, as handle_signal
// runs before the restart would.
func (t *Task) doWait(ctx context.Context, sel waitSelector, opts int) (WaitResult, error) {
	ctx = orBackground(ctx)
	if !t.enterCall() {
		return WaitResult{}, unix.ESRCH
	}
	defer t.leaveCall()
	t.arm() // the whole call is interruptible, its scans included
	defer t.disarm()
	l := waitLoop{sel: sel, opts: opts}
	// The waiter goes on the process's queue only once the call sleeps:
	// a call that finds its answer at once never takes the lock again to
	// leave it.
	defer func() {
		if l.w != nil {
			t.tg.dequeueWaiter(l.w)
		}
	}()
	for {
		if !sel.all && !sel.exists() {
			return WaitResult{}, unix.ECHILD // C4
		}
		switch t.waitScan(&l) {
		case waitReturn:
			if l.err != nil {
				return WaitResult{}, l.err
			}
			l.ev.finish()
			return l.ev.res, nil
		case waitStopped:
			// A stopped process makes no progress until continued; a
			// kill ends the call in get_signal, without a rescan.
			s, err := t.sleepIntr(ctx, l.sleepOn)
			if err != nil {
				return WaitResult{}, err
			}
			l.sig = firstSignal(l.sig, s)
			l.outForStop = true
		case waitSleep:
			s, err := t.sleepIntrThen(ctx, l.sleepOn, false)
			if err != nil && ctx.Err() != nil {
				return WaitResult{}, err
			}
			// A kill wakes the call for one more scan, like any signal.
			l.sig, l.woken = s, s != 0 || err != nil
		}
	}
}

// waitStep is what one scan of do_wait's loop tells the loop to do.
type waitStep int

const (
	waitReturn  waitStep = iota // the call ends: with l.ev, l.err, or nothing found (WNOHANG)
	waitRescan                  // scan again at once
	waitSleep                   // sleep on l.sleepOn until a wake-up
	waitStopped                 // the caller's process is stopped: sleep on l.sleepOn until continued
)

// waitLoop is the state one wait call carries from scan to scan.
type waitLoop struct {
	sel  waitSelector
	opts int
	// sig is an interrupting signal taken and not yet acted on;
	// outForStop marks a call that left to stop and has not restarted;
	// woken a sleep just ended by a signal or a kill: do_wait scans again
	// before it returns -ERESTARTSYS, so a child ready by then (the one
	// whose exit sent the signal) is reported before get_signal acts.
	sig        int
	outForStop bool
	woken      bool
	// w is the call's place on its process's queue of waiters, once it
	// has slept.
	w *childWait

	// What the last scan found: a report (waitReturn), an error
	// (waitReturn), the channel to sleep on (waitSleep, waitStopped).
	ev      collected
	err     error
	sleepOn <-chan struct{}
}

// waitScan is one scan of do_wait's loop.
func (t *Task) waitScan(l *waitLoop) waitStep {
	// A plan's table lock comes first (do_wait scans under
	// tasklist_lock). The process lock guards its children lists and
	// ready lists, and a claim under it is exclusive (C9).
	p := t.k.plan
	p.Lock(plan.WaitScan)
	defer p.Unlock(plan.WaitScan)
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	return t.waitScanLocked(l)
}

// waitScanLocked is waitScan's work: __do_wait, then do_wait's test for a
// pending signal.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) waitScanLocked(l *waitLoop) waitStep {
	if resume := t.stopWaitLocked(); resume != nil && !l.woken {
		t.joinStopLocked()
		l.sleepOn = resume
		return waitStopped
	}
	if l.outForStop {
		l.outForStop = false
		if l.sig != 0 && !t.waitRestarts(l.sig) {
			l.err = unix.EINTR
			return waitReturn
		}
		l.sig = 0 // restarted
	}
	switch ev, outcome := t.collectLocked(l.sel, l.opts); outcome {
	case waitFound:
		l.ev = ev
		return waitReturn
	case waitVanished:
		return waitRescan // the event went to another waiter: look again
	}
	// A kill that has reached the thread ends a call that found nothing
	// to report. Whatever else Linux's call would return then (ECHILD,
	// 0 for WNOHANG, -ERESTARTSYS), nobody sees it: the task dies before
	// user space does; the model says EINTR, as for any killed call.
	if t.killWoken {
		l.err = unix.EINTR
		return waitReturn
	}
	if !t.anyEligibleLocked(l.sel, l.opts) && !t.anyTraceeLocked(l.sel, l.opts) {
		l.err = unix.ECHILD
		return waitReturn
	}
	if l.opts&unix.WNOHANG != 0 {
		return waitReturn
	}
	// -ERESTARTSYS with a handled signal pending: its handler decides.
	if l.sig != 0 {
		if !t.waitRestarts(l.sig) {
			l.err = unix.EINTR
			return waitReturn
		}
		l.sig = 0
	}
	if l.woken {
		// The restart, after the stop the signal may have begun.
		l.woken = false
		return waitRescan
	}
	if l.w == nil {
		l.w = &childWait{t: t, sel: l.sel, opts: l.opts}
	}
	l.sleepOn = t.tg.sleepChanLocked(l.w)
	return waitSleep
}

// firstSignal keeps the first interrupting signal a call took, unless it
// was a stop, which a later signal overrides (a handler's restart rule
// then decides the call); SIGKILL overrides any.
func firstSignal(cur, next int) int {
	switch {
	case next == 0:
		return cur
	case cur == 0, next == int(unix.SIGKILL), sigDefaultStops(cur):
		return next
	}
	return cur
}

// exists is pid_has_task for the selector's pid type.
func (sel waitSelector) exists() bool {
	if sel.pid == nil {
		return false
	}
	if sel.pgrp {
		return sel.pid.pgrp.Load() != nil
	}
	return sel.pid.publishedTask() != nil
}

// classes returns the wait classes opts asks for (eligible_child).
func classes(opts int) []int {
	switch {
	case opts&unix.WALL != 0:
		return []int{classSIGCHLD, classClone}
	case opts&unix.WCLONE != 0:
		return []int{classClone}
	}
	return []int{classSIGCHLD}
}

// eligibleLocked reports whether child c of the caller's process matches
// the selector and options, class aside.
//
// Preconditions: t.tg.mu is held; c is a child of t.tg.
//
// +checklocks:t.tg.mu
func (t *Task) eligibleLocked(c *ThreadGroup, sel waitSelector, opts int) bool {
	if opts&unix.WNOTHREAD != 0 && c.parent.Load() != t {
		return false
	}
	return sel.matches(c)
}

// matches reports whether process c is one the selector names: any, the
// members of a process group, or the process whose leader has the pid.
func (sel waitSelector) matches(c *ThreadGroup) bool {
	switch {
	case sel.all:
		return true
	case sel.pgrp:
		return c.pgrp.Load().id == sel.pid
	}
	return c.leader.Load().pid.Load() == sel.pid
}

// findReadyLocked returns what do_wait would report: a child, and
// whether it is a zombie (otherwise it has a stop or a continue to
// report), or a tracee with a stop or an exit to report. Each thread's
// children come first, in children-list order, then its tracees, the
// latest attached first; the caller's own thread comes first, then the
// next ones in thread order (only the caller's with __WNOTHREAD). A wait
// for one pid looks at that child, then at that tracee.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) findReadyLocked(sel waitSelector, opts int) (c *ThreadGroup, exited bool, tracee *Task) {
	tg := t.tg
	if !sel.all && !sel.pgrp {
		c, exited := t.readyChildLocked(sel, opts)
		if c == nil || !exited {
			// wait_consider_task looks at a ptrace stop
			// (wait_task_stopped) before a continue: a child traced
			// from the waiter's process reports the stop first.
			tracee = t.readyTraceeLocked(sel.pid.publishedTask(), opts)
			if c != nil && tracee != nil && tracee.traceReport == 0 {
				tracee = nil
			}
			if tracee != nil {
				c = nil
			}
		}
		return c, exited, tracee
	}
	for th := t; ; {
		z := t.firstReadyOfThreadLocked(th, sel, opts)
		j := t.firstJobOfThreadLocked(th, sel, opts)
		// A child's ptrace stop comes before its own continue, as for a
		// wait for its pid.
		if tc := t.firstTrappedChildOfThreadLocked(th, sel, opts); tc != nil &&
			(z == nil || tc.tg.sibOrd < z.sibOrd) && (j == nil || tc.tg.sibOrd <= j.sibOrd) {
			return nil, false, tc
		}
		switch {
		case z != nil && (j == nil || z.sibOrd < j.sibOrd):
			return z, true, nil
		case j != nil:
			return j, false, nil
		}
		if tracee := t.firstReadyTraceeOfThreadLocked(th, sel, opts); tracee != nil {
			return nil, false, tracee
		}
		if opts&unix.WNOTHREAD != 0 {
			return nil, false, nil
		}
		if th = th.threadLink.next; th == nil {
			th = tg.threads.head
		}
		if th == t {
			return nil, false, nil
		}
	}
}

// readyChildLocked is findReadyLocked's look at the child a wait for one
// pid names.
//
// Preconditions: t.tg.mu is held; sel names one pid.
//
// +checklocks:t.tg.mu
func (t *Task) readyChildLocked(sel waitSelector, opts int) (*ThreadGroup, bool) {
	tg := t.tg
	c := sel.pid.publishedTask()
	if c == nil || !c.tg.isChildOf(tg) || !t.eligibleLocked(c.tg, sel, opts) ||
		!classOK(c.tg, opts) && !c.tg.tracedFrom(tg) {
		return nil, false
	}
	if c.tg.exitState.Load() == procZombie {
		if opts&unix.WEXITED == 0 {
			return nil, false
		}
		return c.tg, true
	}
	if c.tg.jobIdx >= 0 && tg.pruneJobLocked(c.tg, opts) {
		return c.tg, false
	}
	return nil, false
}

// firstReadyOfThreadLocked returns the zombie child of thread th that
// comes first on th's children list and matches the wait.
//
// Preconditions: t.tg.mu is held; th is a thread of t.tg.
//
// +checklocks:t.tg.mu
func (t *Task) firstReadyOfThreadLocked(th *Task, sel waitSelector, opts int) *ThreadGroup {
	if opts&unix.WEXITED == 0 {
		return nil
	}
	var best *ThreadGroup
	for _, class := range classes(opts) {
		th.assertProcessLocked() // +checklocksforce: th is a thread of t.tg
		c := th.ready[class].first()
		if !sel.all {
			c = nil
			for _, r := range th.ready[class].inOrder() {
				if t.eligibleLocked(r, sel, opts) {
					c = r
					break
				}
			}
		}
		if c != nil && (best == nil || c.sibOrd < best.sibOrd) {
			best = c
		}
	}
	// A zombie child of the other class that this process traces is
	// eligible too, but eligible_child's class test keeps it out of the
	// children scan: the tracee scan that follows reports it.
	return best
}

// firstJobOfThreadLocked returns the child of thread th with a stop or a
// continue the wait asks for that comes first on th's children list.
// Children left on the queue with nothing to report any more (their
// process began a group exit) are taken off it.
//
// Preconditions: t.tg.mu is held; th is a thread of t.tg.
//
// +checklocks:t.tg.mu
func (t *Task) firstJobOfThreadLocked(th *Task, sel waitSelector, opts int) *ThreadGroup {
	if opts&(unix.WUNTRACED|unix.WCONTINUED) == 0 {
		return nil
	}
	var best *ThreadGroup
	for _, class := range classes(opts) {
		th.assertProcessLocked() // +checklocksforce: th is a thread of t.tg
		for _, c := range th.jobs[class].inOrder() {
			if best != nil && c.sibOrd > best.sibOrd {
				break
			}
			if t.eligibleLocked(c, sel, opts) && t.tg.pruneJobLocked(c, opts) {
				best = c
				break
			}
		}
	}
	return best
}

// pruneJobLocked takes child c off the job queue if it has neither a stop
// nor a continue left to report, and reports whether it has one that opts
// asks for (WUNTRACED, WCONTINUED: wait_task_stopped, wait_task_continued).
//
// Preconditions: tg.mu is held; tg is c's parent process; c is queued.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) pruneJobLocked(c *ThreadGroup, opts int) bool {
	// The child's lock, after its parent's, guards its job-control
	// state.
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.hasJobEventLocked() {
		tg.unmarkJobLocked(c)
		return false
	}
	return (opts&unix.WUNTRACED != 0 && c.stopReportableTo(tg)) ||
		(opts&unix.WCONTINUED != 0 && c.continued.Load())
}

// stopReportableTo reports whether tg has a group stop its parent ptg's
// wait may report: not while a thread of ptg traces tg's leader, whose
// stops only its tracer reports, as ptrace stops (wait_consider_task
// hides the group stop from a real parent that traces; it shows once the
// tracer detaches).
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) stopReportableTo(ptg *ThreadGroup) bool {
	return !tg.tracedFrom(ptg) && tg.stopped && tg.stopCode != 0 && tg.stopWaiting == 0
}

// isChildOf reports whether ptg is tg's parent process. The root init has
// no parent; a wait4 for pid 1 must not trip over it.
func (tg *ThreadGroup) isChildOf(ptg *ThreadGroup) bool {
	p := tg.parent.Load()
	return p != nil && p.tg == ptg
}

// classOK reports whether c's wait class is one opts asks for.
func classOK(c *ThreadGroup, opts int) bool {
	return opts&unix.WALL != 0 || (waitClass(c.exitSignal) == classClone) == (opts&unix.WCLONE != 0)
}

// tracedFrom reports whether a thread of ptg traces tg's leader: for its
// real parent ptg, tg is then a tracee too, which every wait class
// includes (eligible_child with ptrace set).
func (tg *ThreadGroup) tracedFrom(ptg *ThreadGroup) bool {
	tracer := tg.leader.Load().tracer.Load()
	return tracer != nil && tracer.tg == ptg
}

// anyEligibleLocked reports whether some child matches, ready or not; if
// none does, the wait fails with ECHILD. A zombie counts only when the
// wait asks for WEXITED: without it, wait_consider_task passes it over
// without clearing ECHILD. A child that a thread of the caller's process
// traces counts as a tracee does (wait_consider_task's ptrace view of a
// child not ptrace_reparented).
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) anyEligibleLocked(sel waitSelector, opts int) bool {
	tg := t.tg
	zombiesCount := opts&unix.WEXITED != 0
	if sel.all && opts&unix.WNOTHREAD == 0 && tg.tracees.head == nil {
		for _, class := range classes(opts) {
			n := tg.nrChildren[class]
			if !zombiesCount {
				n -= tg.nrZombies[class]
			}
			if n > 0 {
				return true
			}
		}
		return false
	}
	if !sel.all && !sel.pgrp {
		c := sel.pid.publishedTask()
		return c != nil && c.tg.leader.Load() == c && c.tg.exitState.Load() != procDead &&
			c.tg.isChildOf(tg) && t.eligibleLocked(c.tg, sel, opts) && t.childCountsLocked(c.tg, opts)
	}
	for c := tg.children.head; c != nil; c = c.siblingLink.next {
		if t.eligibleLocked(c, sel, opts) && t.childCountsLocked(c, opts) {
			return true
		}
	}
	return false
}

// childCountsLocked is counts for child c of the caller's process, or
// traceeCountsLocked for its leader when a thread of that process traces
// it.
//
// Preconditions: t.tg.mu is held; c is a child of t.tg.
//
// +checklocks:t.tg.mu
func (t *Task) childCountsLocked(c *ThreadGroup, opts int) bool {
	if c.tracedFrom(t.tg) {
		return t.traceeCountsLocked(c.leader.Load(), opts)
	}
	return counts(c, opts)
}

// counts reports whether child c keeps a wait with opts from failing with
// ECHILD: its class is asked for, and it is not a zombie the wait passes
// over for want of WEXITED.
func counts(c *ThreadGroup, opts int) bool {
	return classOK(c, opts) && (opts&unix.WEXITED != 0 || c.exitState.Load() != procZombie)
}

// reportLocked builds the result for a zombie child (wait_task_zombie).
//
// Preconditions: t.tg.mu is held; c is a zombie child.
//
// +checklocks:t.tg.mu
func (t *Task) reportLocked(c *ThreadGroup) WaitResult {
	leader := c.leader.Load()
	// exitStatus was fixed under c.mu before the notification that made
	// c ready, and that notification was made under t.tg.mu.
	status := unix.WaitStatus(c.exitStatusForWait())
	return WaitResult{Pid: leader.pid.Load().nrIn(t.tg.ns), Status: status, Code: exitCode(status), Task: leader}
}

// exitCode is waitid's si_code for an exit status.
func exitCode(status unix.WaitStatus) int {
	switch {
	case status.Signaled() && status.CoreDump():
		return CLDDumped
	case status.Signaled():
		return CLDKilled
	}
	return CLDExited
}
