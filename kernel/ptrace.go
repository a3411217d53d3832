package kernel

import (
	"golang.org/x/sys/unix"

	"tasklist/plan"
)

// ptrace (kernel/ptrace.c). As in Linux a tracer is a thread and traces
// threads one by one: attaching to a thread of a process traces that
// thread only, and the tracer's wait reports it by its tid. Its process
// keeps the list of the threads its threads trace.
//
// Locking: linking and unlinking hold the tracer's and the tracee's
// ThreadGroup.mu, in serial order (they need not be related). The
// tracer-side view of a tracee (its place on the tracer's list, the stop
// or the exit the tracer's wait may still report) is guarded by the
// tracer's lock, as a child's parent-side state is by its parent's; the
// tracee's own ptrace state (options, the stop it is in, the stops it
// owes) by its own process's lock.

// PTRACE_EVENT_STOP: the event of a PTRACE_INTERRUPT, group-stop or
// SIGCONT-notification trap of a seized tracee.
const ptraceEventStop = 128

// Ptrace is ptrace(2) for the requests the model has: PTRACE_TRACEME,
// ATTACH, SEIZE, DETACH, CONT, KILL, INTERRUPT, LISTEN, SETOPTIONS and
// GETEVENTMSG (whose message is not modelled). PTRACE_O_EXITKILL,
// TRACEEXEC, TRACEEXIT, TRACEFORK, TRACEVFORK, TRACECLONE and
// TRACEVFORKDONE are acted on; the other options are accepted. pid names
// a thread.
//
// TRACEME by the root init links it to the idle task, its real parent on
// Linux, which never resumes it (ptraceTraceme).
//
// Errors (D1–D7): EPERM for TRACEME when already traced, for ATTACH/SEIZE
// of a thread of the caller's own process, one the caller may not access,
// a zombie or one already traced; ESRCH for an unknown pid, or a request
// for a thread that the caller does not trace or that is not stopped when
// it must be; EIO for an unknown request, SEIZE with addr != 0 or unknown
// options, an invalid signal to CONT or DETACH, INTERRUPT or LISTEN of a
// thread not seized, LISTEN outside a PTRACE_EVENT_STOP trap; EINVAL for
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
	return t.ptraceRequest(target, request, data)
}

// lockPair locks two processes in serial order, or one when they are the
// same; unlockPair(a, b) releases them.
//
// +checklocksacquire:a.mu
// +checklocksacquire:b.mu
// +checklocksignore: which locks it takes, and in which order, depends on
// the processes; lockstat checks the order at run time.
func lockPair(a, b *ThreadGroup) {
	if a == b {
		a.mu.Lock()
		return
	}
	if a.serial > b.serial {
		a, b = b, a
	}
	a.mu.Lock()
	b.mu.Lock()
}

// unlockPair releases the locks lockPair(a, b) took, the later first.
//
// +checklocksrelease:a.mu
// +checklocksrelease:b.mu
// +checklocksignore: as for lockPair.
func unlockPair(a, b *ThreadGroup) {
	if a == b {
		a.mu.Unlock()
		return
	}
	if a.serial > b.serial {
		a, b = b, a
	}
	b.mu.Unlock()
	a.mu.Unlock()
}

// ptraceTraceme is ptrace_traceme: the real parent thread becomes the
// tracer, unless it is already exiting (D1, D10). PF_EXITING of the
// parent is set under the parent's process lock (beginExitLocked), which
// is held here while it is checked and the link made: either the link
// comes first and the parent's exit_ptrace detaches it, or the parent's
// exit comes first and no link is made.
//
// The root init's real parent is the idle task, which Linux links it to:
// the call succeeds, and the root init is traced from then on by a tracer
// that never waits, resumes or exits (newIdle).
func (t *Task) ptraceTraceme() error {
	tg := t.tg
	p := t.k.plan
	for {
		parent := tg.realParent()
		// The unsafe zhang-v1 plan tests the parent's exit before the
		// locks that order the test against exit_ptrace.
		testedEarly, parentRunning := tracemeTestsParentEarly(p, parent)
		// A plan's table lock: ptrace_traceme links under it.
		p.Lock(plan.PtraceLink)
		lockPair(parent.tg, tg) // the two ends of the link
		if tg.realParent() != parent {
			unlockPair(parent.tg, tg) // reparented meanwhile: the new parent is the tracer
			p.Unlock(plan.PtraceLink)
			continue
		}
		if !testedEarly {
			parentRunning = parent.state.Load() == taskRunning
		}
		err := error(nil)
		switch {
		case t.state.Load() != taskRunning:
			err = unix.ESRCH // killed in the call: its exit will not see a link
		case t.tracer.Load() != nil:
			err = unix.EPERM
		case parentRunning:
			linkTracerLocked(parent, t, false)
		}
		unlockPair(parent.tg, tg)
		p.Unlock(plan.PtraceLink)
		return err
	}
}

// realParent is the process's real parent thread: its parent, or for the
// root init the idle task.
func (tg *ThreadGroup) realParent() *Task {
	if p := tg.parent.Load(); p != nil {
		return p
	}
	return tg.k.idle
}

// newIdle makes the idle task (pid 0, init_task): a thread that runs for
// ever, is in no pid namespace's table and makes no call. It is only ever
// a tracer, the root init's after PTRACE_TRACEME; its process ignores the
// SIGCHLD a tracee's stop sends it, as a kernel thread does.
func (k *Kernel) newIdle() *Task {
	idle := &Task{k: k, sleepingOn: sleepSlot{k: k}}
	idle.pid.Store(newPID(k.rootNS)) // number 0
	idle.creds.Store(rootCreds())
	idle.nsForChildren.Store(k.rootNS)
	// Serial 0 orders its lock before every process's, init's included.
	tg := newLoneThreadGroup(k, idle, 0, k.rootNS)
	tg.unkillable = true
	tg.startOwnSighand(&sigTable{})
	tg.rlimits.Store(&rlimitTable{})
	idle.state.advance(taskEmbryo, taskRunning)
	return idle
}

// ptraceAttach is ptrace_attach (D2–D5): SEIZE checks its arguments,
// then both attach the target thread to the caller; ATTACH stops it with
// SIGSTOP. A thread of a stopped process owes the tracer a trap for the
// group stop it is in (JOBCTL_TRAP_STOP on a task_is_stopped tracee).
func (t *Task) ptraceAttach(target *Task, seize bool, addr, data uint64) error {
	var opts uint64
	if seize {
		if addr != 0 || data&^ptraceOptionMask != 0 {
			return unix.EIO
		}
		opts = data
	}
	ttg := target.tg
	if ttg == t.tg {
		return unix.EPERM
	}
	if err := t.waitCredGuard(ttg); err != nil {
		return err
	}
	if !ptraceMayAccess(t, target) {
		return unix.EPERM
	}
	// A plan's table lock: ptrace_attach links under it.
	t.k.plan.Lock(plan.PtraceLink)
	defer t.k.plan.Unlock(plan.PtraceLink)
	lockPair(t.tg, ttg) // the two ends of the link
	defer unlockPair(t.tg, ttg)
	if t.state.Load() != taskRunning {
		// Killed meanwhile: its exit_ptrace may have run, so no link.
		return unix.EINTR
	}
	if target.state.Load() >= taskZombie || target.tracer.Load() != nil {
		return unix.EPERM // exit_state set, or already traced
	}
	linkTracerLocked(t, target, seize)
	target.ptraceOptions = opts
	if ttg.stopped && target.state.Load() == taskRunning {
		if target.jobctl.has(jobctlStopPending | jobctlStopInCall) {
			// It still owes the group stop: it takes part in it
			// through a trap.
			target.jobctl.set(jobctlStopPending)
		} else {
			// task_is_stopped: it took part already. It owes a trap
			// for the stop (JOBCTL_TRAP_STOP) and no second part in
			// it, so a stop other threads still owe stays unfinished.
			target.jobctl.set(jobctlTrapStop)
		}
	}
	if !seize {
		ttg.sendThreadSignalLocked(target, int(unix.SIGSTOP), true) // send_sig_info(SIGSTOP, SEND_SIG_PRIV)
	}
	target.takeTraceStopLocked(t)
	return nil
}

// waitCredGuard is ptrace_attach's mutex_lock_interruptible of the
// target process's cred_guard_mutex: an exec holds it until de_thread is
// done, and de_thread may be waiting for a traced sibling's tracer, the
// caller included, to reap it. The caller sleeps until the exec ends; a
// signal only restarts the wait (-ERESTARTNOINTR); EINTR when the caller
// is killed meanwhile.
func (t *Task) waitCredGuard(ttg *ThreadGroup) error {
	for {
		// The target's process lock guards its exec state.
		ttg.mu.Lock()
		free := ttg.credGuardChanLocked()
		ttg.mu.Unlock()
		if free == nil {
			return nil
		}
		// The caller's process lock guards its kill state.
		t.tg.mu.Lock()
		dying := t.dyingChanLocked()
		t.tg.mu.Unlock()
		t.sleepingOn.Store(&sleep{wake: free, dying: dying})
		sleepUntil(free, dying)
		t.sleepingOn.Store(nil)
		select {
		case <-dying:
			return unix.EINTR
		default:
		}
	}
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
// Preconditions: tracer.tg.mu and tracee.tg.mu are held; tracee is
// untraced.
//
// +checklocks:tracer.tg.mu
// +checklocks:tracee.tg.mu
func linkTracerLocked(tracer, tracee *Task, seize bool) {
	tracee.tracer.Store(tracer)
	tracee.tg.nrTraced.Add(1)
	tracee.jobctl.clear(jobctlSeized)
	if seize {
		tracee.jobctl.set(jobctlSeized)
	}
	tracer.tg.tracees.pushFront(tracee, traceLinkOf) // newest first, as ptrace_do_wait scans
	tracer.nrTracees.Add(1)
}

// unlinkTraceeLocked is the tracer side of __ptrace_unlink: it takes
// tracee c off the list of tg, its tracer's process, and returns whether
// its exit was waiting for the tracer (C11), which the caller must now
// hand on.
//
// Preconditions: tg.mu is held; c is on tg's tracee list.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) unlinkTraceeLocked(c *Task) (zombie bool) {
	c.assertTracerLocked()
	tg.tracees.remove(c, traceLinkOf)
	c.tracer.Load().nrTracees.Add(-1)
	c.tracer.Store(nil)
	c.tg.nrTraced.Add(-1)
	zombie, c.traceZombie = c.traceZombie, false
	c.traceReport = 0
	return zombie
}

func traceLinkOf(t *Task) *link[Task] { return &t.traceLink }

// ptraceRequest serves the requests made to a thread the caller traces
// (ptrace_check_attach, then ptrace_request). A request that needs the
// tracee stopped needs it in a ptrace stop (TASK_TRACED).
func (t *Task) ptraceRequest(target *Task, request int, data uint64) error {
	ttg := target.tg
	// A plan's table lock: ptrace_detach unlinks under it for writing,
	// ptrace_check_attach reads under it.
	site := plan.PtraceRequest
	if request == unix.PTRACE_DETACH {
		site = plan.PtraceLink
	}
	t.k.plan.Lock(site)
	defer t.k.plan.Unlock(site)
	lockPair(t.tg, ttg) // the tracer-side and the tracee's state
	defer unlockPair(t.tg, ttg)
	if target.tracer.Load() != t {
		return unix.ESRCH
	}
	// A listening tracee is stopped, but ptrace_freeze_traced refuses it.
	stopped := target.traceStop != 0 && !target.jobctl.has(jobctlListening)
	switch request {
	case unix.PTRACE_KILL:
		// send_sig_info(SIGKILL, SEND_SIG_NOINFO): the whole process
		// dies, unless it is an init the caller's namespace protects.
		if target.state.Load() < taskZombie {
			ttg.sendThreadSignalLocked(target, int(unix.SIGKILL), t.forcesOn(ttg))
		}
		return nil
	case unix.PTRACE_INTERRUPT:
		if !target.jobctl.has(jobctlSeized) {
			return unix.EIO
		}
		// JOBCTL_TRAP_STOP: trapped at once if running, else after the
		// tracer resumes it; refused by a thread already exiting.
		if target.state.Load() == taskRunning && !target.killPending {
			target.jobctl.set(jobctlTrapStop)
			// ptrace_signal_wake_up sets the pending-signal flag: a
			// sleep the tracee is in ends as for a stop (semop fails
			// with EINTR; wait4 restarts once the trap is over).
			target.interruptLocked(int(unix.SIGSTOP))
			if target.jobctl.has(jobctlListening) {
				target.retrapLocked(t) // it leaves LISTEN and traps again
			}
			target.takeTraceStopLocked(t)
		}
		return nil
	case unix.PTRACE_LISTEN:
		switch {
		case !stopped:
			return unix.ESRCH // ptrace_check_attach
		case !target.jobctl.has(jobctlSeized) || target.traceStop>>8 != ptraceEventStop:
			return unix.EIO
		}
		// While it listens, wait does not report the trap
		// (task_stopped_code).
		target.jobctl.set(jobctlListening)
		target.traceReport = 0
		if target.jobctl.has(jobctlTrapNotify) {
			// Notified since the trap began: trap again at once.
			target.retrapLocked(t)
		}
		return nil
	case unix.PTRACE_CONT, unix.PTRACE_DETACH:
		switch {
		case !stopped:
			return unix.ESRCH
		case data > nSig:
			return unix.EIO
		case request == unix.PTRACE_DETACH:
			// __ptrace_detach wakes no waiter: a real parent in the
			// tracer's process that sleeps in a wait sees the group stop
			// the tracing hid, or its own loss of an eligible child,
			// only when something else wakes it.
			t.tg.unlinkTraceeLocked(target)
			target.resumeTracedLocked(int(data), nil)
		default:
			target.traceReport = 0
			target.resumeTracedLocked(int(data), nil)
			target.takeTraceStopLocked(t)
		}
		return nil
	case unix.PTRACE_SETOPTIONS:
		switch {
		case !stopped:
			return unix.ESRCH
		case data&^ptraceOptionMask != 0:
			return unix.EINVAL
		}
		target.ptraceOptions = data
		return nil
	}
	if !stopped {
		return unix.ESRCH
	}
	if request == unix.PTRACE_GETEVENTMSG {
		return nil // the message itself is not modelled
	}
	return unix.EIO
}
