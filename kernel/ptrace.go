package kernel

import (
	"math/bits"

	"golang.org/x/sys/unix"
)

// ptrace (kernel/ptrace.c). The model traces a process as a whole: the
// tracee is the process of the thread named, which fits the
// single-threaded tracees the scenarios use. The tracer is a thread; its
// process keeps the list of the processes its threads trace.
//
// Locking: linking and unlinking hold the tracer's and the tracee's
// ThreadGroup.mu, in serial order (they need not be related). The
// tracer-side view of a tracee (its place on the tracer's list, the stop
// or the exit the tracer's wait may still report) is guarded by the
// tracer's lock, as a child's parent-side state is by its parent's; the
// tracee's own ptrace state (options, the stop it is in, the signals it
// will stop for) by its own.

// PTRACE_EVENT_STOP: the event of a PTRACE_INTERRUPT stop.
const ptraceEventStop = 128

// Ptrace is ptrace(2) for the requests the model has: PTRACE_TRACEME,
// ATTACH, SEIZE, DETACH, CONT, KILL, INTERRUPT and SETOPTIONS
// (PTRACE_O_EXITKILL is the one option acted on). Errors (D1–D7): EPERM
// for TRACEME when already traced, for ATTACH/SEIZE of a process of the
// caller's own, one the caller may not access, a zombie or one already
// traced; ESRCH for an unknown pid, or a request for a process that the
// caller does not trace or that is not stopped when it must be; EIO for an
// unknown request, SEIZE with addr != 0 or unknown options, an invalid
// signal to CONT or DETACH, INTERRUPT of a process not seized; EINVAL for
// unknown SETOPTIONS options.
func (t *Task) Ptrace(request, pid int, addr, data uint64) error {
	if !t.alive() {
		return unix.ESRCH
	}
	if request == unix.PTRACE_TRACEME {
		return t.ptraceTraceme()
	}
	target := t.tg.ns.Lookup(pid)
	if target == nil {
		return unix.ESRCH
	}
	if request == unix.PTRACE_ATTACH || request == unix.PTRACE_SEIZE {
		return t.ptraceAttach(target, request == unix.PTRACE_SEIZE, addr, data)
	}
	return t.ptraceRequest(target.tg, request, data)
}

// lockPair locks two processes in serial order (one lock if they are the
// same) and returns the unlock.
//
// +checklocksignore: the locks taken depend on the serials; lockstat
// checks their order at run time.
func lockPair(a, b *ThreadGroup) func() {
	if a == b {
		a.mu.Lock()
		return a.mu.Unlock
	}
	if a.serial > b.serial {
		a, b = b, a
	}
	a.mu.Lock()
	b.mu.Lock()
	return func() {
		b.mu.Unlock()
		a.mu.Unlock()
	}
}

// ptraceTraceme is ptrace_traceme: the real parent thread becomes the
// tracer, unless it is already exiting (D1, D10). PF_EXITING of the
// parent is set under the parent's process lock (beginExitLocked), which
// is held here while it is checked and the link made: either the link
// comes first and the parent's exit_ptrace detaches it, or the parent's
// exit comes first and no link is made.
//
// +checklocksignore: lockPair takes both processes' locks in serial
// order, which checklocks cannot follow; lockstat checks it at run time.
func (t *Task) ptraceTraceme() error {
	tg := t.tg
	for {
		parent := tg.parent.Load()
		if parent == nil {
			return unix.EPERM // the root init has no parent to trace it
		}
		unlock := lockPair(parent.tg, tg) // the two ends of the link
		if tg.parent.Load() != parent {
			unlock() // reparented meanwhile: the new parent is the tracer
			continue
		}
		err := error(nil)
		switch {
		case tg.tracer.Load() != nil:
			err = unix.EPERM
		case parent.state.Load() == taskRunning:
			linkTracerLocked(parent, tg, false)
		}
		unlock()
		return err
	}
}

// ptraceAttach is ptrace_attach (D2–D5): SEIZE checks its arguments,
// then both attach the target's process to the caller; ATTACH stops it
// with SIGSTOP.
//
// +checklocksignore: lockPair takes both processes' locks in serial
// order, which checklocks cannot follow; lockstat checks it at run time.
func (t *Task) ptraceAttach(target *Task, seize bool, addr, data uint64) error {
	var opts uint64
	if seize {
		if addr != 0 || data&^ptraceOptionMask != 0 {
			return unix.EIO
		}
		opts = data
	}
	ttg := target.tg
	if ttg == t.tg || !ptraceMayAccess(t, target) {
		return unix.EPERM
	}
	unlock := lockPair(t.tg, ttg) // the two ends of the link
	defer unlock()
	if t.state.Load() != taskRunning {
		// Killed meanwhile: its exit_ptrace may have run, so no link.
		return unix.EINTR
	}
	if target.state.Load() >= taskZombie || ttg.groupExiting || ttg.tracer.Load() != nil {
		return unix.EPERM
	}
	linkTracerLocked(t, ttg, seize)
	ttg.ptraceExitKill = opts&unix.PTRACE_O_EXITKILL != 0
	if !seize {
		ttg.sendSignalLocked(int(unix.SIGSTOP), true, nil) // send_sig_info(SIGSTOP, SEND_SIG_PRIV)
	}
	return nil
}

// ptraceOptionMask is PTRACE_O_MASK.
const ptraceOptionMask = 0x003000ff

// ptraceMayAccess is __ptrace_may_access with PTRACE_MODE_REALCREDS (D4):
// matching ids or CAP_SYS_PTRACE, and then a non-dumpable target (one
// whose effective ids changed) needs CAP_SYS_PTRACE.
func ptraceMayAccess(tracer, target *Task) bool {
	if tracer.tg == target.tg {
		return true
	}
	c, tc := tracer.creds.Load(), target.creds.Load()
	capable := c.HasCap(unix.CAP_SYS_PTRACE)
	if !(c.UID == tc.EUID && c.UID == tc.SUID && c.UID == tc.UID &&
		c.GID == tc.EGID && c.GID == tc.SGID && c.GID == tc.GID) && !capable {
		return false
	}
	return capable || !target.tg.nonDumpable.Load()
}

// linkTracerLocked is __ptrace_link: tracee goes on the tracer's process's
// list.
//
// Preconditions: tracer.tg.mu and tracee.mu are held; tracee is untraced.
//
// +checklocks:tracer.tg.mu
// +checklocks:tracee.mu
func linkTracerLocked(tracer *Task, tracee *ThreadGroup, seize bool) {
	tracee.tracer.Store(tracer)
	tracee.ptraceSeized = seize
	tracer.tg.tracees.pushBack(tracee, traceLinkOf)
	tracer.nrTracees.Add(1)
}

// unlinkTracerLocked is the tracer side of __ptrace_unlink: it takes the
// tracee off the tracer's list and returns whether its exit was waiting
// for the tracer (C11), which the caller must now hand to the real parent.
//
// Preconditions: tracer.tg.mu is held; tracer traces tracee.
//
// +checklocks:tracer.tg.mu
func unlinkTracerLocked(tracer *Task, tracee *ThreadGroup) (zombie bool) {
	tracer.tg.tracees.remove(tracee, traceLinkOf)
	tracer.nrTracees.Add(-1)
	tracee.tracer.Store(nil)
	zombie, tracee.traceZombie = tracee.traceZombie, false
	tracee.traceReport = 0
	return zombie
}

func traceLinkOf(tg *ThreadGroup) *link[ThreadGroup] { return &tg.traceLink }

// ptraceRequest serves the requests made to a process the caller traces
// (ptrace_check_attach, then ptrace_request).
//
// +checklocksignore: lockPair takes both processes' locks in serial
// order, which checklocks cannot follow; lockstat checks it at run time.
func (t *Task) ptraceRequest(ttg *ThreadGroup, request int, data uint64) error {
	unlock := lockPair(t.tg, ttg) // the tracer-side and the tracee's state
	if ttg.tracer.Load() != t {
		unlock()
		return unix.ESRCH
	}
	stopped := ttg.traceStop != 0
	var err error
	switch request {
	case unix.PTRACE_KILL:
		ttg.killLocked(ttg.fatalStatus(int(unix.SIGKILL)), nil)
	case unix.PTRACE_INTERRUPT:
		switch {
		case !ttg.ptraceSeized:
			err = unix.EIO
		case !stopped && !ttg.groupExiting && ttg.liveThreads > 0:
			ttg.traceStop = int32(unix.SIGTRAP) | ptraceEventStop<<8
			t.tg.reportTraceStopLocked(ttg, ttg.traceStop)
		}
	case unix.PTRACE_CONT, unix.PTRACE_DETACH:
		switch {
		case !stopped:
			err = unix.ESRCH
		case data > nSig:
			err = unix.EIO
		case request == unix.PTRACE_DETACH:
			unlinkTracerLocked(t, ttg)
			ttg.resumeTracedLocked(int(data))
		default:
			ttg.traceReport = 0
			ttg.resumeTracedLocked(int(data))
		}
	case unix.PTRACE_SETOPTIONS:
		switch {
		case !stopped:
			err = unix.ESRCH
		case data&^ptraceOptionMask != 0:
			err = unix.EINVAL
		default:
			ttg.ptraceExitKill = data&unix.PTRACE_O_EXITKILL != 0
		}
	default:
		err = unix.EIO
		if !stopped {
			err = unix.ESRCH
		}
	}
	unlock()
	return err
}

// reportTraceStopLocked records a tracee's stop with code for the
// tracer's wait and wakes the tracer's waiters (the ptrace side of
// do_notify_parent_cldstop).
//
// Preconditions: tg.mu is held; tg is the process of tracee's tracer.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) reportTraceStopLocked(tracee *ThreadGroup, code int32) {
	tracee.traceReport = code
	tg.wakeWaitersLocked()
}

// resumeTracedLocked ends a ptrace stop (ptrace_resume, or the wake-up of
// a detach): the signal sig the tracer passes, if any, is acted on as if
// it had been delivered, and the next pending signal stops the tracee
// again, or, once it is untraced, is acted on.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) resumeTracedLocked(sig int) {
	tg.traceStop = 0
	if sig != 0 {
		tg.actOnSignalLocked(sig, false, nil)
	}
	tg.nextTraceSignalLocked()
	tg.resumeIfRunningLocked()
}

// nextTraceSignalLocked starts the stop for the next signal a traced
// process has pending, or, for a process no longer traced, delivers them.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) nextTraceSignalLocked() {
	if tg.tracePending == 0 || tg.traceStop != 0 || tg.groupExiting {
		return
	}
	if tg.tracer.Load() == nil {
		pending := tg.tracePending
		tg.tracePending = 0
		for ; pending != 0; pending &= pending - 1 {
			tg.actOnSignalLocked(bits.TrailingZeros64(pending)+1, false, nil)
		}
		return
	}
	tg.k.goAsync(tg.ptraceSignalStop)
}

// ptraceSignalStop is the signal-delivery stop of a traced process
// (get_signal → ptrace_signal → ptrace_stop): the lowest pending signal
// stops it, and its tracer hears of it.
//
// +checklocksignore: lockPair takes both processes' locks in serial
// order, which checklocks cannot follow; lockstat checks it at run time.
func (tg *ThreadGroup) ptraceSignalStop() {
	for {
		tracer := tg.tracer.Load()
		if tracer == nil {
			// Detached meanwhile: the process's own lock guards its
			// pending signals.
			tg.mu.Lock()
			tg.nextTraceSignalLocked()
			tg.resumeIfRunningLocked()
			tg.mu.Unlock()
			return
		}
		unlock := lockPair(tracer.tg, tg) // the stop and the tracer's report
		if tg.tracer.Load() != tracer {
			unlock()
			continue
		}
		if tg.tracePending != 0 && tg.traceStop == 0 && !tg.groupExiting && tg.liveThreads > 0 {
			sig := bits.TrailingZeros64(tg.tracePending) + 1
			tg.tracePending &^= sigBit(sig)
			tg.traceStop = int32(sig)
			tracer.tg.reportTraceStopLocked(tg, tg.traceStop)
		}
		tg.resumeIfRunningLocked()
		unlock()
		return
	}
}

// exitPtrace is exit_ptrace (D9): a tracer's exit detaches every process
// it traces; tracees with PTRACE_O_EXITKILL are killed, stopped ones run
// again, and a zombie whose exit waited for the tracer is handed to its
// real parent and released if the parent does not want it (D8). The
// releases come before the tracer's children are reparented, so a
// namespace init never waits for its own dead tracees (seed 001).
//
// Fast path (seed 000): a tracer with no tracees skips it. The count is
// read without a lock: the caller is marked exiting, under its process
// lock, before this runs, and TRACEME links only under that lock to a
// parent not exiting, so every link that will ever be made is visible.
func (t *Task) exitPtrace() {
	if t.nrTracees.Load() == 0 {
		return
	}
	tg := t.tg
	var tracees, zombies []*ThreadGroup
	// The tracer's lock guards its list and the tracer-side state.
	tg.mu.Lock()
	for c := tg.tracees.head; c != nil; {
		next := c.traceLink.next
		if c.tracer.Load() == t {
			if unlinkTracerLocked(t, c) {
				zombies = append(zombies, c)
			} else {
				tracees = append(tracees, c)
			}
		}
		c = next
	}
	tg.mu.Unlock()
	var b exitBatch
	for _, c := range tracees {
		// The tracee's lock guards its ptrace state.
		c.mu.Lock()
		if c.ptraceExitKill {
			c.killLocked(c.fatalStatus(int(unix.SIGKILL)), &b)
		} else if c.traceStop != 0 {
			c.resumeTracedLocked(0)
		} else {
			c.nextTraceSignalLocked()
		}
		c.ptraceExitKill = false
		c.mu.Unlock()
	}
	b.run(t.k)
	for _, c := range zombies {
		handOffTracee(c)
	}
}

// untrace takes a released process off its tracer's list
// (ptrace_release_task).
func (tg *ThreadGroup) untrace() {
	for {
		tracer := tg.tracer.Load()
		if tracer == nil {
			return
		}
		// The tracer's lock guards its list.
		tracer.tg.mu.Lock()
		if tg.tracer.Load() == tracer {
			unlinkTracerLocked(tracer, tg)
			tracer.tg.mu.Unlock()
			return
		}
		tracer.tg.mu.Unlock()
	}
}

// tracedAway reports whether the process is traced by a thread outside
// its real parent's process (ptrace_reparented): its exit is reported to
// the tracer first (C11).
func (tg *ThreadGroup) tracedAway() bool {
	tracer, parent := tg.tracer.Load(), tg.parent.Load()
	return tracer != nil && parent != nil && tracer.tg != parent.tg
}

// notifyTracer is exit_notify's do_notify_parent to a tracer that is not
// the real parent: the zombie waits for the tracer's wait. It reports
// false once the tracer has it; true if the process is no longer traced,
// and the real parent must be notified instead.
func (tg *ThreadGroup) notifyTracer() bool {
	tracer := tg.tracer.Load()
	if tracer == nil {
		return true
	}
	// The tracer's lock guards the tracer-side state and its waiters.
	tracer.tg.mu.Lock()
	defer tracer.tg.mu.Unlock()
	if tg.tracer.Load() != tracer {
		return true
	}
	tg.traceZombie = true
	tg.traceReport = 0
	tracer.tg.wakeWaitersLocked()
	return false
}
