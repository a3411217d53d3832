package kernel

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"tasklist/lockstat"
)

// nSig is _NSIG: signals are numbered 1..64.
const nSig = 64

// Signal dispositions, as sa_handler values.
const (
	SigDfl     = 0 // SIG_DFL
	SigIgn     = 1 // SIG_IGN
	SigHandler = 2 // a user handler that returns at once
)

// sigaction flags the model acts on (SA_* of the kernel's uapi headers).
const (
	SaNoCldStop = 0x1 // SA_NOCLDSTOP
	SaNoCldWait = 0x2 // SA_NOCLDWAIT
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
}

func newSignalHandlers(t *sigTable) *SignalHandlers {
	sh := &SignalHandlers{}
	sh.mu.Init(sighandClass, 0)
	sh.table.Store(t)
	return sh
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
// the previous action. Errors: EINVAL for an invalid signal, or for
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
	return t.tg.sighand.set(sig, act), nil
}

// SigactionOf returns the current disposition of sig.
func (t *Task) SigactionOf(sig int) (SigAction, error) {
	if !validSignal(sig) {
		return SigAction{}, unix.EINVAL
	}
	return t.tg.sighand.action(sig), nil
}

// sendSignalLocked delivers sig to the process tg (__send_signal_locked
// for PIDTYPE_TGID). force is set for a sender in an ancestor pid
// namespace, which may kill a namespace init with SIGKILL. A handled
// signal has no effect the model can observe; a fatal one makes the whole
// group exit; stop signals are not modelled and are discarded.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) sendSignalLocked(sig int, force bool) {
	if !validSignal(sig) {
		return
	}
	act := tg.sighand.action(sig)
	if sigKernelOnly(sig) {
		act = SigAction{}
	}
	switch {
	case tg.unkillable && act.Handler == SigDfl && !(force && sigKernelOnly(sig)):
		return // sig_task_ignored: inits ignore what they do not handle
	case act.Handler != SigDfl:
		return
	case sigDefaultIgnored(sig), sigDefaultStops(sig):
		return
	}
	status := int32(sig)
	if sigDefaultCoredumps(sig) && tg.rlimits.Load()[unix.RLIMIT_CORE].Cur != 0 {
		status |= 0x80
	}
	tg.killLocked(status)
}

// killLocked starts a group exit with status (a fatal signal's
// complete_signal): every live thread is marked exiting at once, and their
// exits run on a goroutine of their own, counted by Kernel.Quiesce.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) killLocked(status int32) {
	if tg.groupExiting || tg.liveThreads == 0 {
		return
	}
	tg.groupExiting = true
	tg.groupExitCode = status
	victims := tg.beginExitAllLocked(status)
	k := tg.k
	k.asyncExits.Add(1)
	go func() {
		defer k.asyncExits.Add(-1)
		k.finishExits(victims)
	}()
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

// signalFromTask delivers sig from sender to the process tg, taking tg's
// lock; force follows the sender's namespace (an ancestor namespace's
// sender may kill an init).
func signalFromTask(sender *Task, tg *ThreadGroup, sig int) {
	force := sender == nil || sender.pid.nrIn(tg.ns) == 0
	// The target's lock orders the delivery against its exit and clone.
	tg.mu.Lock()
	tg.sendSignalLocked(sig, force)
	tg.mu.Unlock()
}
