package kernel

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"tasklist/internal/abi"
	"tasklist/lockstat"
)

// nSig is _NSIG: signals are numbered 1..64.
const nSig = 64

// Signal dispositions, as sa_handler values.
const (
	SigDfl     = abi.SIG_DFL
	SigIgn     = abi.SIG_IGN
	SigHandler = abi.SIG_HANDLER // a user handler that returns at once
)

// sigaction flags the model acts on.
const (
	SaNoCldStop = abi.SA_NOCLDSTOP
	SaNoCldWait = abi.SA_NOCLDWAIT
)

// SigAction is a signal disposition: a handler and SA_* flags.
type SigAction struct {
	Handler int
	Flags   uint64
}

// sigTable is an immutable snapshot of a handler table.
type sigTable [nSig]SigAction

// SignalHandlers is a sighand_struct: the handler table shared by the
// threads of a process, and by processes made with CLONE_SIGHAND.
type SignalHandlers struct {
	// mu serialises writers; readers load table without it.
	mu    lockstat.Mutex
	table atomic.Pointer[sigTable]
	// users counts the processes that use the table (sighand->count,
	// counted per process, since a process's threads always share its
	// table): one from its creation, or its clone with CLONE_SIGHAND,
	// until it is released or its exec gives it a table of its own.
	users atomic.Int32
}

func newSignalHandlers(t *sigTable) *SignalHandlers {
	sh := &SignalHandlers{}
	sh.init(t)
	return sh
}

// init makes sh a table with the handlers of t and one user.
func (sh *SignalHandlers) init(t *sigTable) {
	sh.mu.Init(sighandClass, 0)
	sh.table.Store(t)
	sh.users.Store(1)
}

// startOwnSighand gives a process that nothing can reach yet its own
// handler table, with the handlers of t.
func (tg *ThreadGroup) startOwnSighand(t *sigTable) {
	tg.ownSighand.init(t)
	tg.sighand.Store(&tg.ownSighand)
}

func (sh *SignalHandlers) action(sig int) SigAction { return sh.table.Load()[sig-1] }

// set installs act for sig and returns the previous action.
func (sh *SignalHandlers) set(sig int, act SigAction) SigAction {
	// The lock makes read-copy-publish atomic against another sigaction
	// on a table that processes share.
	sh.mu.Lock()
	defer sh.mu.Unlock()
	cur := sh.table.Load()
	old := cur[sig-1]
	next := *cur
	next[sig-1] = act
	sh.table.Store(&next)
	return old
}

func validSignal(sig int) bool { return sig >= 1 && sig <= nSig }

// sigKernelOnly reports the signals that cannot be caught or ignored.
func sigKernelOnly(sig int) bool { return sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP) }

// Default actions (the SIG_KERNEL_*_MASK sets of include/linux/signal.h).
func sigDefaultIgnored(sig int) bool {
	switch unix.Signal(sig) {
	case unix.SIGCHLD, unix.SIGURG, unix.SIGWINCH, unix.SIGCONT:
		return true
	}
	return false
}

func sigDefaultStops(sig int) bool {
	switch unix.Signal(sig) {
	case unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
		return true
	}
	return false
}

func sigDefaultCoredumps(sig int) bool {
	switch unix.Signal(sig) {
	case unix.SIGQUIT, unix.SIGILL, unix.SIGTRAP, unix.SIGABRT, unix.SIGBUS, unix.SIGFPE,
		unix.SIGSEGV, unix.SIGXCPU, unix.SIGXFSZ, unix.SIGSYS:
		return true
	}
	return false
}

// Sigaction is rt_sigaction(2) for the process's handler table. It returns
// the previous action. An action that ignores sig (SIG_IGN, or SIG_DFL
// where the default is to ignore) discards what is pending of it in the
// caller's process, blocked or not. Errors: EINVAL for an invalid signal, or for
// changing SIGKILL or SIGSTOP.
func (t *Task) Sigaction(sig int, act SigAction) (SigAction, error) {
	if !t.alive() {
		return SigAction{}, unix.ESRCH
	}
	if !validSignal(sig) || sigKernelOnly(sig) {
		return SigAction{}, unix.EINVAL
	}
	if act.Handler < SigDfl || act.Handler > SigHandler {
		return SigAction{}, unix.EINVAL
	}
	if act.Handler == SigHandler || act.Handler == SigDfl && !sigDefaultIgnored(sig) {
		return t.tg.sighand.Load().set(sig, act), nil
	}
	// An action that ignores the signal discards what is pending of it
	// in the caller's process, blocked or not (do_sigaction, POSIX
	// 3.3.1.3); the process lock guards the queues, and the handler
	// table's lock comes after it.
	tg := t.tg
	tg.mu.Lock()
	defer tg.mu.Unlock()
	tg.flushPendingLocked(SigSetOf(sig))
	tg.flushTracedLocked(sigBit(sig))
	tg.pendingSigs &^= sigBit(sig)
	return tg.sighand.Load().set(sig, act), nil
}

// SigactionOf returns the current disposition of sig (rt_sigaction with
// no new action). Errors: ESRCH if the caller has exited; EINVAL for an
// invalid signal.
func (t *Task) SigactionOf(sig int) (SigAction, error) {
	if !t.alive() {
		return SigAction{}, unix.ESRCH
	}
	if !validSignal(sig) {
		return SigAction{}, unix.EINVAL
	}
	return t.tg.sighand.Load().action(sig), nil
}

// sendSignalLocked delivers sig to the process tg (__send_signal_locked
// for PIDTYPE_TGID, with prepare_signal and complete_signal). force is set
// for a sender in an ancestor pid namespace, which may kill or stop a
// namespace init with SIGKILL or SIGSTOP, and for signals the kernel
// generates. SIGCONT continues a stopped process whatever its disposition;
// a handled signal interrupts the interruptible sleep (wait4, waitid,
// semop) of the thread complete_signal picks (signal_intr.go); a default-action
// stop signal stops the process soon after (signal_stop.go); a fatal one makes
// the whole group exit, or waits until a stopped process is continued.
//
// A fatal signal's exits run on a goroutine of their own, or, when b is
// not nil, are added to b, whose exits run in order once the caller has
// signalled every process it means to (one step that kills several
// processes has them exit in a fixed order, as the reference model does).
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) sendSignalLocked(sig int, force bool, b *exitBatch) {
	tg.sendSignalViaLocked(nil, sig, force, b)
}

// sendSignalToLocked is sendSignalLocked for a signal sent to thread
// target of tg (shared false: it takes it), or to the process through
// target (shared: the process's queue; nil stands for the leader), which
// the thread complete_signal picks takes.
//
// Preconditions: tg.mu is held; target, if not nil, is a thread of tg,
// running if shared is false.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) sendSignalToLocked(target *Task, shared bool, sig int, force bool, b *exitBatch) {
	if !validSignal(sig) || tg.groupExiting || tg.liveThreads == 0 {
		return // prepare_signal: a dying process drops what it is sent
	}
	// prepare_signal: SIGCONT and the stop signals flush each other,
	// from the pending queues and the signals traced threads keep for
	// their tracers too.
	switch {
	case sig == int(unix.SIGCONT):
		tg.continueLocked(b)
	case sigDefaultStops(sig):
		tg.flushTracedLocked(sigBit(int(unix.SIGCONT)))
		tg.flushPendingLocked(SigSetOf(int(unix.SIGCONT)))
	}
	addressee := target
	if addressee == nil {
		addressee = tg.leader.Load()
	}
	if shared {
		// complete_signal runs after prepare_signal: a SIGCONT has
		// continued the process by now.
		target = tg.completeSignalTargetLocked(target, sig)
	}
	// A thread in sigtimedwait for sig dequeues it itself; a blocked
	// signal waits on its queue (signal_mask.go).
	if target != nil && target.catchForWaitLocked(sig, shared, force) { // +checklocksignore: target is a thread of tg
		return
	}
	if target == nil && shared && tg.catchForAnyWaitLocked(sig, force) {
		// Nobody wants it now, a thread in sigtimedwait for it because
		// it is woken already (a trap it owes): it dequeues it from the
		// process's queue all the same.
		return
	}
	if tg.queueHeldLocked(target, shared, sig) {
		return
	}
	// sig_ignored keeps what the thread it was sent through blocks.
	heldByAddressee := addressee.blocksLocked(sig) // +checklocksignore: addressee is a thread of tg
	if heldByAddressee && (target == nil || target.tracer.Load() == nil) && tg.signalActionLocked(sig, force) == sigIgnored {
		// Queued, it wakes the thread complete_signal chose, which
		// takes it and drops it (a wait restarts, a semop or a
		// sigtimedwait fails with EINTR).
		if target != nil {
			tg.wakeSignalTargetLocked(target, sig)
		}
		return
	}
	if sig != int(unix.SIGKILL) && tg.nrTraced.Load() > 0 {
		// prepare_signal (sig_ignored) and complete_signal judge by the
		// thread the signal was sent through, not by the one that takes
		// it: an untraced addressee drops what its process ignores, and
		// a fatal signal that dumps no core takes the whole process down
		// at once, through a traced thread too, once a thread wants it.
		if addressee.tracer.Load() == nil && !heldByAddressee {
			switch action := tg.signalActionLocked(sig, force); {
			case action == sigIgnored:
				return
			case action == sigKills && shared && target != nil && !sigDefaultCoredumps(sig):
				tg.killLocked(tg.fatalStatus(sig), b)
				return
			}
		}
		// A traced thread stops for every other signal but SIGKILL,
		// whatever its disposition (ptrace_signal): its tracer decides.
		if taker := tg.signalTakerLocked(target, sig); taker != nil && taker.tracer.Load() != nil &&
			taker.state.Load() == taskRunning {
			if shared && target == nil && tg.stopped && taker.traceStop != 0 { // +checklocksignore: taker is a thread of tg
				// No thread wants it, and the one the model would
				// give it to sits in a ptrace stop: it waits on the
				// process's queue for whichever thread runs first
				// (SIGCONT's, or a tracer's resume).
				tg.sharedQueueLocked().add(sig)
				return
			}
			taker.traceSignalLocked(sig, shared) // +checklocksignore: taker.tg is tg, asserted there
			return
		}
		if tg.signalActionLocked(sig, force) == sigIgnored {
			// Queued, as sent to a traced thread, but wanted by an
			// untraced one, which ignores it once dequeued: its
			// signal_wake_up still breaks the sleep it is in (semop
			// fails with EINTR, a wait restarts).
			if target != nil {
				tg.wakeSignalTargetLocked(target, sig)
			}
			return
		}
	}
	if sig != int(unix.SIGKILL) && !tg.stopped && tg.signalActionLocked(sig, force) != sigIgnored &&
		tg.sleepersWithSignalLocked(target, shared) {
		// Nobody can take it now (wants_signal): it waits on its queue
		// until a thread leaves its call (leaveKernel).
		if shared {
			tg.sharedQueueLocked().add(sig)
		} else {
			target.makeSigsLocked().pending.add(sig) // +checklocksignore: target is a thread of tg
		}
		return
	}
	if !shared && tg.stopped && sig != int(unix.SIGKILL) && tg.signalActionLocked(sig, force) != sigIgnored {
		// A stopped thread dequeues nothing: a signal sent to it waits
		// on its own queue until it runs again (takeUnblockedLocked).
		target.makeSigsLocked().pending.add(sig) // +checklocksignore: target is a thread of tg
		return
	}
	tg.actOnSignalToLocked(target, sig, force, b)
}

// signalAction is what a process does with a signal it takes.
type signalAction int

const (
	sigIgnored signalAction = iota // dropped (sig_task_ignored)
	sigHandled                     // a handler runs
	sigStops                       // the default action stops the process
	sigKills                       // the default action kills it
)

// signalActionLocked is tg's action for sig: its disposition, or the
// default one (SIGKILL and SIGSTOP cannot be caught), where a namespace
// init ignores what it does not handle unless an ancestor namespace
// (force) sends SIGKILL or SIGSTOP.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) signalActionLocked(sig int, force bool) signalAction {
	act := tg.sighand.Load().action(sig)
	if sigKernelOnly(sig) {
		act = SigAction{}
	}
	switch {
	case tg.unkillable && act.Handler == SigDfl && !(force && sigKernelOnly(sig)):
		return sigIgnored // sig_task_ignored
	case act.Handler == SigIgn:
		return sigIgnored
	case act.Handler != SigDfl:
		return sigHandled
	case sigDefaultIgnored(sig):
		return sigIgnored
	case sigDefaultStops(sig):
		return sigStops
	}
	return sigKills
}

// actOnSignalLocked acts on a signal delivered to tg (the rest of
// sendSignalLocked; also the signal a tracer passes on resuming a
// tracee).
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) actOnSignalLocked(sig int, force bool, b *exitBatch) {
	tg.actOnSignalToLocked(nil, sig, force, b)
}

// actOnSignalToLocked is actOnSignalLocked for a signal that thread
// target takes (nil: the thread complete_signal picks). A handled signal
// and a stop wake the target's interruptible sleep (signal_wake_up).
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) actOnSignalToLocked(target *Task, sig int, force bool, b *exitBatch) {
	tg.actOnSignalAsLocked(target, sig, force, false, b)
}

// actOnSignalAsLocked is actOnSignalToLocked; taken says that target has
// dequeued sig and acts on it now, running (get_signal after
// ptrace_signal: a tracee resumed with a signal), so a stopped process
// does not keep it for its next SIGCONT: a fatal one kills at once, and a
// stop signal stops the process again, its traced threads trapping for it
// (do_signal_stop; a process already stopped does not report the stop to
// its parent again, task_participate_group_stop).
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) actOnSignalAsLocked(target *Task, sig int, force, taken bool, b *exitBatch) {
	// A stopped process keeps what it is sent on its shared queue, as no
	// thread of it runs to take it (wants_signal): SIGCONT flushes the
	// stop signals and acts on the rest, and a traced thread its tracer
	// resumes meanwhile takes them all (nextTraceEventLocked).
	kept := tg.stopped && !taken
	switch tg.signalActionLocked(sig, force) {
	case sigIgnored:
		return
	case sigHandled:
		tg.wakeSignalTargetLocked(target, sig)
		if kept {
			tg.pendingSigs |= sigBit(sig)
		}
		return
	case sigStops:
		switch {
		case kept:
			tg.pendingSigs |= sigBit(sig)
		case tg.stopped:
			tg.trapTracedForStopLocked()
		default:
			tg.wakeSignalTargetLocked(target, sig)
			tg.queueStopLocked(sig)
		}
		return
	}
	if kept && sig != int(unix.SIGKILL) {
		tg.pendingSigs |= sigBit(sig)
		return
	}
	tg.killLocked(tg.fatalStatus(sig), b)
}

// sendThreadSignalLocked delivers sig to thread t of tg (PIDTYPE_PID, as
// tgkill does). A thread already exiting never dequeues it, so only
// SIGCONT's side effect on the whole process remains (complete_signal
// does not pass a thread-directed signal to another thread).
//
// Preconditions: tg.mu is held; t is a thread of tg.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) sendThreadSignalLocked(t *Task, sig int, force bool) {
	if t.state.Load() == taskRunning {
		tg.sendSignalToLocked(t, false, sig, force, nil)
		return
	}
	if sig == int(unix.SIGCONT) && !tg.groupExiting && tg.liveThreads > 0 {
		tg.continueLocked(nil)
	}
}

// wakeSignalTargetLocked is complete_signal's signal_wake_up: target, or
// the thread complete_signal picks when target is nil, has its
// interruptible sleep interrupted by sig.
//
// Preconditions: tg.mu is held; target, if not nil, is a thread of tg.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) wakeSignalTargetLocked(target *Task, sig int) {
	if target = tg.signalTakerLocked(target, sig); target != nil {
		target.interruptLocked(sig) // +checklocksignore: target.tg is tg, asserted there
	}
}

func sigBit(sig int) uint64 { return 1 << uint(sig-1) }

// stopSignals is SIG_KERNEL_STOP_MASK.
var stopSignals = sigBit(int(unix.SIGSTOP)) | sigBit(int(unix.SIGTSTP)) | sigBit(int(unix.SIGTTIN)) |
	sigBit(int(unix.SIGTTOU))

// flushTracedLocked drops the signals in set from those the process's
// traced threads keep for their tracers.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) flushTracedLocked(set uint64) {
	for t := tg.threads.head; t != nil; t = t.threadLink.next {
		t.assertProcessLocked() // +checklocksforce: t is a thread of tg
		t.tracePending &^= set
		t.traceShared &^= set
	}
}

// killPermitted is check_kill_permission for a signal a task sends: within
// one process always; otherwise the sender's real or effective uid must be
// the target thread's real or saved uid, or the sender must have CAP_KILL;
// SIGCONT may also go to any task of the sender's session.
func killPermitted(sender, target *Task, sig int) bool {
	if sender.tg == target.tg {
		return true
	}
	sc, tc := sender.creds.Load(), target.creds.Load()
	if sc.EUID == tc.SUID || sc.EUID == tc.UID || sc.UID == tc.SUID || sc.UID == tc.UID ||
		sc.HasCap(unix.CAP_KILL) {
		return true
	}
	return sig == int(unix.SIGCONT) &&
		sender.tg.pgrp.Load().session == target.tg.pgrp.Load().session
}

// signalFromTask delivers sig from sender to p's process, taking its
// lock; force follows the sender's namespace (an ancestor namespace's
// sender may kill an init). p, the thread the sender named, takes the
// signal if it wants it (complete_signal's first choice); otherwise
// another thread does.
func signalFromTask(sender *Task, p *Task, sig int, b *exitBatch) {
	tg := p.tg
	// The target's lock orders the delivery against its exit and clone.
	tg.mu.Lock()
	tg.sendSignalViaLocked(p, sig, sender.forcesOn(tg), b)
	tg.mu.Unlock()
}

// sendSignalViaLocked is sendSignalLocked for a signal sent to the process
// through thread p (nil: its leader), which takes it if it wants it
// (completeSignalTargetLocked).
//
// Preconditions: tg.mu is held; p, if not nil, is a thread of tg.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) sendSignalViaLocked(p *Task, sig int, force bool, b *exitBatch) {
	tg.sendSignalToLocked(p, true, sig, force, b)
}

// forcesOn reports whether a signal t sends to tg is forced: the sender
// is invisible in tg's namespace, so it lives in an ancestor one
// (send_signal_locked's SEND_SIG_NOINFO case).
func (t *Task) forcesOn(tg *ThreadGroup) bool { return t.pid.Load().nrIn(tg.ns) == 0 }
