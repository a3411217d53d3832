package refmodel

import (
	"math/bits"

	"golang.org/x/sys/unix"
)

// Signals and stops of a traced process (kernel/signal.c prepare_signal,
// get_signal, ptrace_signal, ptrace_stop, do_jobctl_trap; kernel/ptrace.c
// ptrace_resume, __ptrace_detach, exit_ptrace). A traced process stops
// for every signal but SIGKILL, whatever its disposition: the signal
// waits in its queue, and the tracee, when it runs, takes a pending trap
// first, then dequeues the next signal into a signal-delivery stop
// reported to its tracer. The model lets a running tracee act on what it
// is sent at once.

// stopMask is SIG_KERNEL_STOP_MASK; syncMask SYNCHRONOUS_MASK, the
// signals next_signal dequeues first.
const (
	stopMask = 1<<(unix.SIGSTOP-1) | 1<<(unix.SIGTSTP-1) | 1<<(unix.SIGTTIN-1) | 1<<(unix.SIGTTOU-1)
	syncMask = 1<<(unix.SIGSEGV-1) | 1<<(unix.SIGBUS-1) | 1<<(unix.SIGILL-1) | 1<<(unix.SIGTRAP-1) |
		1<<(unix.SIGFPE-1) | 1<<(unix.SIGSYS-1)
	contBit = 1 << (unix.SIGCONT - 1)
)

// queueTraced is prepare_signal and __send_signal_locked for a traced
// process and any signal but SIGKILL (sig_ignored never ignores it): a
// stop signal flushes a queued SIGCONT, SIGCONT flushes queued stop
// signals and makes a seized tracee trap (ptrace_trap_notify); the signal
// is queued on the task (private, as tgkill and send_sig_info queue) or
// the process, once (legacy_queue).
func (m *Model) queueTraced(pr *process, sig int, private bool) {
	bit := uint64(1) << (sig - 1)
	if bit&stopMask != 0 {
		pr.sigPrivate &^= contBit
		pr.sigShared &^= contBit
	}
	if sig == int(unix.SIGCONT) {
		pr.sigPrivate &^= stopMask
		pr.sigShared &^= stopMask
		if pr.seized {
			m.hits["ptrace trap notify"]++
			pr.trapPending = true
		}
	}
	if private {
		pr.sigPrivate |= bit
	} else {
		pr.sigShared |= bit
	}
	m.ptraceRun(pr)
}

// dequeue is dequeue_signal: the task's own queue first, then the
// process's; in each, synchronous signals first, then the lowest.
func dequeue(pr *process) int {
	for _, q := range []*uint64{&pr.sigPrivate, &pr.sigShared} {
		x := *q
		if x == 0 {
			continue
		}
		if x&syncMask != 0 {
			x &= syncMask
		}
		sig := bits.TrailingZeros64(x) + 1
		*q &^= 1 << (sig - 1)
		return sig
	}
	return 0
}

// ptraceRun is get_signal for a tracee that runs: a pending trap stops
// it in PTRACE_EVENT_STOP (do_jobctl_trap; SIGTRAP, as no group stop is
// under way), else the next queued signal stops it in a signal-delivery
// stop (ptrace_signal). A process no longer traced acts on its queue.
func (m *Model) ptraceRun(pr *process) {
	if pr.tracer == nil {
		m.drainQueued(pr)
		return
	}
	if pr.ptStop != ptRunning || pr.groupExit || pr.live == 0 || pr.leader.state != running {
		return
	}
	if pr.trapPending {
		pr.trapPending = false
		m.hits["ptrace event stop"]++
		m.ptraceStop(pr, ptEventStop, eventStopTrapStatus)
		return
	}
	if sig := dequeue(pr); sig != 0 {
		m.hits["ptrace signal stop"]++
		pr.stopDequeued = true
		m.ptraceStop(pr, ptSignalStop, sig)
	}
}

// ptraceStop is ptrace_stop: the tracee sits in TASK_TRACED with
// exit_code set, and its tracer is told (do_notify_parent_cldstop with
// for_ptracer).
func (m *Model) ptraceStop(pr *process, kind, code int) {
	pr.ptStop, pr.exitCode = kind, code
	m.notifyCldstop(pr.tracer.proc)
}

// notifyCldstop is do_notify_parent_cldstop's signal: SIGCHLD to the
// parent's process unless it ignores SIGCHLD or set SA_NOCLDSTOP. Only a
// traced parent shows it (it stops for it); for others SIGCHLD does
// nothing the model can see.
func (m *Model) notifyCldstop(pp *process) {
	act := pp.sighand.act[unix.SIGCHLD]
	if act.Handler != SigIgn && act.Flags&SaNoCldStop == 0 {
		m.sendSignal(pp, int(unix.SIGCHLD), false)
	}
}

// ptraceResume ends a ptrace stop (ptrace_resume's wake-up, or the
// tracee's own wake-up when it is detached): from a signal-delivery stop
// the tracee goes on with exit_code as its signal (0: none), a trap
// ignores it, and so does do_signal_stop a stop signal once a SIGCONT has
// come since the stop began; then it runs on into get_signal.
func (m *Model) ptraceResume(pr *process) {
	kind, code := pr.ptStop, pr.exitCode
	pr.ptStop, pr.exitCode = ptRunning, 0
	if kind == ptSignalStop && code != 0 && !(m.signalAction(pr, code) == actStop && !pr.stopDequeued) {
		m.hits["ptrace signal delivered"]++
		m.takeSignal(pr, code)
	}
	m.ptraceRun(pr)
}

// drainQueued has a process that is no longer traced act on the signals
// queued while it was (get_signal's loop): a stop leaves the rest queued,
// where only fatal ones still matter, taken when it is continued.
func (m *Model) drainQueued(pr *process) {
	for pr.sigPrivate|pr.sigShared != 0 && !pr.groupExit && pr.live > 0 {
		sig := dequeue(pr)
		if pr.stopped {
			if m.signalAction(pr, sig) == actFatal {
				pr.pendingSigs |= 1 << (sig - 1)
			}
			continue
		}
		m.takeSignal(pr, sig)
	}
	pr.sigPrivate, pr.sigShared = 0, 0
}

// What get_signal does with a dequeued signal.
const (
	actNone  = iota // ignored, handled, or an init's unwanted signal
	actStop         // do_signal_stop
	actFatal        // do_group_exit
)

// signalAction is get_signal's decision after ptrace_signal: SIG_IGN and
// handlers, default-ignored signals and what an init does not take
// (SIGNAL_UNKILLABLE lets only SIGKILL and SIGSTOP through) do nothing; a
// default stop signal stops the group unless it is SIGTSTP, SIGTTIN or
// SIGTTOU in an orphaned process group; the rest is fatal.
func (m *Model) signalAction(pr *process, sig int) int {
	kernelOnly := sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP)
	act := pr.sighand.act[sig]
	if kernelOnly {
		act = SigAction{}
	}
	switch unix.Signal(sig) {
	case unix.SIGCHLD, unix.SIGURG, unix.SIGWINCH, unix.SIGCONT:
		return actNone
	}
	if act.Handler != SigDfl || (pr.unkillable && !kernelOnly) {
		return actNone
	}
	if uint64(1)<<(sig-1)&stopMask != 0 {
		if sig != int(unix.SIGSTOP) && m.orphaned(pr.pgrp, nil) {
			return actNone
		}
		return actStop
	}
	return actFatal
}

// takeSignal acts on a signal get_signal dequeued and, for a tracee,
// ptrace_signal let through.
func (m *Model) takeSignal(pr *process, sig int) {
	switch m.signalAction(pr, sig) {
	case actStop:
		m.groupStop(pr, sig)
	case actFatal:
		m.kill(pr, sig)
	}
}

// ptraceDetach is __ptrace_detach (D8), after ptrace_detach or
// exit_ptrace set exit_code: it reports whether the tracee is to be
// released. A live tracee is woken and goes on with exit_code; a zombie
// whose real parent is in another process than the tracer is notified to
// it now (C11); one whose real parent is in the tracer's process is
// released if that process ignores its children, and is otherwise left
// to the real parent.
func (m *Model) ptraceDetach(tracer *task, pr *process) bool {
	m.unlink(pr)
	if pr.leader.state != zombie {
		m.ptraceResume(pr)
		return false
	}
	pr.ptStop, pr.exitCode, pr.sigPrivate, pr.sigShared = ptRunning, 0, 0, 0
	if pr.parent.proc != tracer.proc {
		m.hits["zombie tracee handed to the real parent"]++
		return m.notifyParent(pr)
	}
	act := tracer.proc.sighand.act[unix.SIGCHLD]
	if act.Handler == SigIgn || act.Flags&SaNoCldWait != 0 { // ignoring_children
		return true
	}
	pr.exitState = procZombie
	return false
}

// exitPtrace is exit_ptrace (D9), run at the start of
// forget_original_parent: each of father's tracees, in ptraced-list
// order, gets SIGKILL (SEND_SIG_PRIV) if it set PTRACE_O_EXITKILL, and is
// detached; those to release are released after the loop. A stopped
// tracee goes on with its exit_code: the signal of a signal-delivery stop
// that the tracer's wait has not reported is delivered.
func (m *Model) exitPtrace(father *task) {
	var dead []*process
	for _, pr := range m.tracees(father) {
		m.hits["exit_ptrace"]++
		if pr.ptOpts&unix.PTRACE_O_EXITKILL != 0 {
			m.hits["PTRACE_O_EXITKILL"]++
			m.sendSignal(pr, int(unix.SIGKILL), true)
		}
		if m.ptraceDetach(father, pr) {
			dead = append(dead, pr)
		}
	}
	for _, pr := range dead {
		m.release(pr.leader)
	}
}

// notifyTracer is exit_notify's do_notify_parent for a traced leader
// alone in its process: the tracer's process gets the exit signal if the
// tracer is in the real parent's process, else SIGCHLD; a traced task is
// never reaped here (B5).
func (m *Model) notifyTracer(pr *process) {
	sig := int(unix.SIGCHLD)
	if !reparented(pr) {
		sig = pr.exitSignal
	}
	tp := pr.tracer.proc
	if sig != int(unix.SIGCHLD) && pr.parentExecSeq != tp.execSeq {
		sig = int(unix.SIGCHLD)
	}
	m.hits["exit reported to the tracer"]++
	if sig > 0 && sig <= nSig {
		m.sendSignal(tp, sig, false)
	}
}
