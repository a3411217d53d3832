package kernel

import (
	"fmt"
	"strings"
)

// jobctlBits is a thread's job-control and ptrace-stop state, Linux's
// task->jobctl: the stops the thread owes and what kind of stop it is in.
// Linux's bits keep their positions (include/linux/sched/jobctl.h); the
// model's own, from bit 32, stand for what Linux keeps elsewhere or knows
// from where the thread is in its code.
//
// The low 16 bits, where Linux keeps the signal of the last group stop
// (JOBCTL_STOP_SIGMASK), stay clear: the model keeps that signal once per
// process (ThreadGroup.stopSig), which every thread's copy would equal
// whenever it is read, since a trap reads it only while the process is
// stopped. Not modelled: JOBCTL_STOP_CONSUME (every part in a group stop
// counts while one is awaited, participateLocked) and JOBCTL_TRAPPING (an
// attach takes the trap at once, under both processes' locks, so nobody
// waits for the switch to TRACED).
//
// A Task keeps the word in its jobctl field, guarded by its process's
// lock (ThreadGroup.mu), as Linux's is by siglock.
type jobctlBits uint64

const (
	// jobctlStopDequeued is JOBCTL_STOP_DEQUEUED: set as the thread
	// enters a signal-delivery stop (ptrace_signal; Linux's
	// dequeue_signal sets it only for a stop signal), cleared by a
	// SIGCONT to its process and by its part in a group stop
	// (task_clear_jobctl_pending, task_participate_group_stop). A stop
	// signal its tracer passes on stops the process only while it is set
	// (do_signal_stop): a SIGCONT in between wins.
	jobctlStopDequeued jobctlBits = 1 << 16
	// jobctlStopPending is JOBCTL_STOP_PENDING of a traced thread: it
	// owes its part in the group stop, as a trap its tracer hears of
	// (do_signal_stop sets it, do_jobctl_trap takes it). An attach to a
	// thread of a stopped process sets it too, where ptrace_attach sets
	// JOBCTL_TRAP_STOP: the trap is the same.
	jobctlStopPending jobctlBits = 1 << 17
	// jobctlTrapStop is JOBCTL_TRAP_STOP: a seized thread owes a
	// PTRACE_EVENT_STOP trap, for PTRACE_INTERRUPT (ptrace_interrupt) or
	// as a seized clone child's first stop (ptrace_init_task).
	jobctlTrapStop jobctlBits = 1 << 19
	// jobctlTrapNotify is JOBCTL_TRAP_NOTIFY: a seized thread owes a
	// PTRACE_EVENT_STOP trap for a SIGCONT to its process
	// (ptrace_trap_notify).
	jobctlTrapNotify jobctlBits = 1 << 20
	// jobctlListening is JOBCTL_LISTENING: the thread is in a
	// PTRACE_EVENT_STOP trap that PTRACE_LISTEN let wait for the next
	// notification, which ends the trap and makes it trap again. Wait
	// does not report the trap meanwhile, and requests that need a
	// stopped tracee refuse it (ptrace_freeze_traced).
	jobctlListening jobctlBits = 1 << 22

	// The model's own bits, from bit 32.

	// jobctlStopInCall is JOBCTL_STOP_PENDING of an untraced thread that
	// was asleep in an interruptible call when its process stopped: it
	// takes part in the group stop once the call has taken the stop's
	// interrupt and so left its wait queue (joinStopLocked), as Linux's
	// thread reaches do_signal_stop only on its way out of the call. The
	// process's other untraced threads stop with it at once and owe
	// nothing. It is kept apart from jobctlStopPending, which is taken as
	// a trap: a thread attached while it owes this one owes both.
	jobctlStopInCall jobctlBits = 1 << 32
	// jobctlSignalStop marks the ptrace stop the thread is in (its code
	// in traceStop; Linux's JOBCTL_TRACED) as a signal-delivery stop,
	// ptrace_signal's, whose signal the tracer may pass on, rather than a
	// trap. Linux knows it from where the thread sleeps.
	jobctlSignalStop jobctlBits = 1 << 33
	// jobctlSignalShared, set only with jobctlSignalStop, marks that
	// stop's signal as taken from the process's queue rather than the
	// thread's own: the queue ptrace_signal puts it back on when a fatal
	// signal ends the stop (the type dequeue_signal returns).
	jobctlSignalShared jobctlBits = 1 << 34
	// jobctlExitHeld is set while the thread's exit waits in its
	// PTRACE_EVENT_EXIT stop (ptrace_event in do_exit), which only its
	// tracer or a fatal wake-up ends (releaseExitLocked).
	jobctlExitHeld jobctlBits = 1 << 35
	// jobctlInKernel is set while the thread is inside a call that
	// sleeps killably or works past the point where a trap could stop it
	// (de_thread, a vfork parent's wait): it takes no ptrace stop until
	// it leaves (leaveKernel), as get_signal runs only on the way back
	// to user space.
	jobctlInKernel jobctlBits = 1 << 36
	// jobctlSeized is PT_SEIZED, which Linux keeps in task->ptrace: the
	// thread's tracer attached it with PTRACE_SEIZE (or it inherited a
	// seizing tracer), so it owes PTRACE_EVENT_STOP traps where an
	// attached thread owes a SIGSTOP or nothing.
	jobctlSeized jobctlBits = 1 << 37

	// jobctlSignalStopMask is the kind of ptrace stop the thread is in,
	// cleared when the stop ends.
	jobctlSignalStopMask = jobctlSignalStop | jobctlSignalShared

	// jobctlTrapMask is JOBCTL_TRAP_MASK: the PTRACE_EVENT_STOP traps.
	jobctlTrapMask = jobctlTrapStop | jobctlTrapNotify
	// jobctlPendingMask is JOBCTL_PENDING_MASK: the stops owed through
	// the word (a ptrace_event stop and the signals kept for the tracer
	// are owed through their own fields).
	jobctlPendingMask = jobctlStopPending | jobctlTrapMask
)

// jobctlNames names the bits for String, in bit order.
var jobctlNames = [...]struct {
	bit  jobctlBits
	name string
}{
	{jobctlStopDequeued, "STOP_DEQUEUED"},
	{jobctlStopPending, "STOP_PENDING"},
	{jobctlTrapStop, "TRAP_STOP"},
	{jobctlTrapNotify, "TRAP_NOTIFY"},
	{jobctlListening, "LISTENING"},
	{jobctlStopInCall, "STOP_IN_CALL"},
	{jobctlSignalStop, "SIGNAL_STOP"},
	{jobctlSignalShared, "SIGNAL_SHARED"},
	{jobctlExitHeld, "EXIT_HELD"},
	{jobctlInKernel, "IN_KERNEL"},
	{jobctlSeized, "SEIZED"},
}

// has reports whether any of bits is set.
func (j jobctlBits) has(bits jobctlBits) bool { return j&bits != 0 }

// set sets bits (task_set_jobctl_pending, without its refusal for a dying
// thread: callers check that themselves).
func (j *jobctlBits) set(bits jobctlBits) { *j |= bits }

// clear clears bits. Unlike task_clear_jobctl_pending, clearing
// jobctlStopPending leaves jobctlStopDequeued: callers that clear both
// name both.
func (j *jobctlBits) clear(bits jobctlBits) { *j &^= bits }

// take clears bits and reports whether any of them was set.
func (j *jobctlBits) take(bits jobctlBits) bool {
	had := *j&bits != 0
	*j &^= bits
	return had
}

// String names the bits set, joined by "|" ("0" for none); bits without a
// name follow in hex.
func (j jobctlBits) String() string {
	if j == 0 {
		return "0"
	}
	var names []string
	for _, n := range jobctlNames {
		if j&n.bit != 0 {
			names = append(names, n.name)
			j &^= n.bit
		}
	}
	if j != 0 {
		names = append(names, fmt.Sprintf("%#x", uint64(j)))
	}
	return strings.Join(names, "|")
}
