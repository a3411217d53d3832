package refmodel

import (
	"errors"
	"sort"

	"golang.org/x/sys/unix"
)

// ErrNotModelled is returned, with nothing changed, for a ptrace case the
// model does not follow: a tracee that is not a single-threaded process
// (Linux traces one thread), options with effects of their own (fork,
// clone, exec and exit events, PTRACE_O_SUSPEND_SECCOMP), ATTACH of a
// process that is not plainly running (its SIGSTOP would meet job
// control), a PTRACE_CONT whose signal starts a group stop of the traced
// process, and a CONT or DETACH that would stop the root init.
var ErrNotModelled = errors.New("refmodel: ptrace case not modelled")

// The ptrace stops a tracee can sit in (TASK_TRACED): a signal-delivery
// stop (ptrace_signal) and a PTRACE_EVENT_STOP trap (do_jobctl_trap).
const (
	ptRunning = iota
	ptSignalStop
	ptEventStop
)

// Linux ptrace constants beyond golang.org/x/sys/unix.
const (
	ptraceEventStop     = 128        // PTRACE_EVENT_STOP
	ptraceOMask         = 0x003000ff // PTRACE_O_MASK
	ptraceOSuspendSecc  = 1 << 21    // PTRACE_O_SUSPEND_SECCOMP
	ptraceONotModelled  = unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK | unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_TRACEVFORKDONE | unix.PTRACE_O_TRACEEXIT | ptraceOSuspendSecc
	cldTrapped          = 4 // CLD_TRAPPED
	eventStopTrapStatus = int(unix.SIGTRAP) | ptraceEventStop<<8
)

// Ptrace is ptrace(2) (kernel/ptrace.c sys_ptrace) for PTRACE_TRACEME,
// ATTACH, SEIZE, DETACH, CONT, KILL, INTERRUPT and SETOPTIONS; any other
// request to a stopped tracee fails with EIO (ptrace_request's default).
// The tracer is a thread; the tracee a single-threaded process.
func (m *Model) Ptrace(tid, request, nr int, addr, data uint64) error {
	t := m.task(tid)
	if t == nil || t.state != running {
		return unix.ESRCH
	}
	if request == unix.PTRACE_TRACEME {
		return m.ptraceTraceme(t)
	}
	target := t.proc.ns.lookup(nr)
	if target == nil {
		return unix.ESRCH
	}
	if request == unix.PTRACE_ATTACH || request == unix.PTRACE_SEIZE {
		return m.ptraceAttach(t, target, request == unix.PTRACE_SEIZE, addr, data)
	}
	tp := target.proc
	// ptrace_check_attach: the caller must be the tracer thread, and for
	// every request but KILL and INTERRUPT the tracee must sit in a
	// ptrace stop (ptrace_freeze_traced).
	if tp.tracer != t || target != tp.leader {
		return unix.ESRCH
	}
	if request != unix.PTRACE_KILL && request != unix.PTRACE_INTERRUPT && tp.ptStop == ptRunning {
		return unix.ESRCH
	}
	switch request {
	case unix.PTRACE_KILL:
		// send_sig_info(SIGKILL, SEND_SIG_NOINFO): forced only from an
		// ancestor namespace, so a namespace init ignores it otherwise.
		m.hits["ptrace kill"]++
		m.sendSignalTo(tp, tp.leader, int(unix.SIGKILL), t.pid.nrIn(tp.ns) == 0)
		m.settle()
		return nil
	case unix.PTRACE_INTERRUPT:
		if !tp.seized {
			return unix.EIO
		}
		// task_set_jobctl_pending refuses an exiting task; otherwise the
		// trap comes now, or after the current stop ends.
		if tp.leader.state == running && !tp.groupExit {
			m.hits["ptrace interrupt"]++
			tp.trapPending = true
			m.ptraceRun(tp)
		}
		return nil
	case unix.PTRACE_SETOPTIONS:
		if data&^ptraceOMask != 0 {
			return unix.EINVAL // check_ptrace_options
		}
		if err := m.optionsModelled(tp, data); err != nil {
			return err
		}
		tp.ptOpts = data
		return nil
	case unix.PTRACE_CONT, unix.PTRACE_DETACH:
		if data > nSig {
			return unix.EIO // valid_signal
		}
		if err := m.resumeModelled(tp, int(data), request == unix.PTRACE_CONT); err != nil {
			return err
		}
		// ptrace_resume and ptrace_detach set exit_code to the data:
		// the signal the tracee goes on with from a signal-delivery
		// stop (a trap ignores it).
		tp.exitCode = int(data)
		if request == unix.PTRACE_DETACH {
			m.hits["ptrace detach"]++
			m.ptraceDetach(t, tp)
		} else {
			m.hits["ptrace cont"]++
			m.ptraceResume(tp)
		}
		m.settle()
		return nil
	}
	return unix.EIO
}

// ptraceTraceme is ptrace_traceme (D1): no access check; a real parent
// already exiting leaves the caller untraced without an error. The root
// init's real parent on Linux is the idle task; it has none here, and the
// call is refused (the kernel package links it to an idle task; the
// state machine test never asks).
func (m *Model) ptraceTraceme(t *task) error {
	pr := t.proc
	switch {
	case pr.tracer != nil, pr.parent == nil:
		return unix.EPERM
	case len(pr.threads) > 1:
		return ErrNotModelled
	case pr.parent.state != running:
		return nil
	}
	m.hits["ptrace traceme"]++
	m.link(pr.parent, pr, false, 0)
	return nil
}

// ptraceAttach is ptrace_attach (D2–D5): SEIZE's argument checks, then
// same_thread_group and the access check, then, under tasklist_lock,
// exit_state and an existing tracer. ATTACH sends SIGSTOP
// (SEND_SIG_PRIV, to the task), which the tracee takes at once into a
// signal-delivery stop.
func (m *Model) ptraceAttach(t, target *task, seize bool, addr, data uint64) error {
	if seize && (addr != 0 || data&^ptraceOMask != 0) {
		return unix.EIO
	}
	tp := target.proc
	if tp == t.proc || !m.ptraceMayAccess(t, target) || target.state == zombie || tp.tracer != nil {
		return unix.EPERM
	}
	if target != tp.leader || len(tp.threads) > 1 || !plainlyRunning(tp) {
		return ErrNotModelled
	}
	if err := m.optionsModelled(tp, data); seize && err != nil {
		return err
	}
	if !seize {
		data = 0
	}
	m.link(t, tp, seize, data)
	if seize {
		m.hits["ptrace seize"]++
		return nil
	}
	m.hits["ptrace attach"]++
	m.sendSignalTo(tp, tp.leader, int(unix.SIGSTOP), true)
	m.settle()
	return nil
}

// optionsModelled refuses options whose effects the model does not
// follow, and PTRACE_O_EXITKILL on the root init, whose kill at the
// tracer's exit (SEND_SIG_PRIV) would panic Linux.
func (m *Model) optionsModelled(tp *process, opts uint64) error {
	if opts&ptraceONotModelled != 0 || (opts&unix.PTRACE_O_EXITKILL != 0 && tp == m.init.proc) {
		return ErrNotModelled
	}
	return nil
}

// resumeModelled refuses a CONT or DETACH whose signal the model cannot
// follow: from a signal-delivery stop, a SIGKILL or SIGSTOP that would
// kill or stop the root init (get_signal lets an init take only
// sig_kernel_only signals), and a CONT whose stop signal would begin a
// group stop while the process is still traced.
func (m *Model) resumeModelled(tp *process, sig int, cont bool) error {
	if tp.ptStop != ptSignalStop || sig == 0 {
		return nil
	}
	if tp == m.init.proc && (sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP)) {
		if sig == int(unix.SIGKILL) {
			return ErrInitExit
		}
		return ErrNotModelled
	}
	if cont && m.signalAction(tp, sig) == actStop {
		return ErrNotModelled
	}
	return nil
}

// plainlyRunning reports whether every thread of pr runs and no signal or
// stop is pending for it.
func plainlyRunning(pr *process) bool {
	for _, o := range pr.threads {
		if o.state != running {
			return false
		}
	}
	return !pr.stopped && pr.stopPending == 0 && pr.pendingSigs == 0 && !pr.groupExit && pr.zapping == nil
}

// ptraceMayAccess is __ptrace_may_access with PTRACE_MODE_ATTACH_REALCREDS
// (D4): the caller's real uid must equal the target's real, effective and
// saved uids (every gid in the model is 0, so the gid half always holds),
// or the caller needs CAP_SYS_PTRACE; a non-dumpable target needs
// CAP_SYS_PTRACE whatever the ids.
func (m *Model) ptraceMayAccess(t, target *task) bool {
	if t.proc == target.proc {
		return true
	}
	c, tc := t.creds, target.creds
	capable := c.hasCap(unix.CAP_SYS_PTRACE)
	if !(c.UID == tc.EUID && c.UID == tc.SUID && c.UID == tc.UID) && !capable {
		return false
	}
	return capable || !target.proc.nonDumpable
}

// link is __ptrace_link: tracer becomes the tracee's parent, at the end
// of its ptraced list.
func (m *Model) link(tracer *task, tp *process, seized bool, opts uint64) {
	tp.tracer, tp.traceSeq, tp.seized, tp.ptOpts = tracer, m.next(), seized, opts
}

// unlink is __ptrace_unlink: parent is real_parent again, the ptrace
// flags go and so do pending traps (JOBCTL_TRAP_MASK).
func (m *Model) unlink(tp *process) {
	tp.tracer, tp.seized, tp.ptOpts, tp.trapPending = nil, false, 0, false
}

// tracees returns the processes tracer traces, in ptraced-list order.
func (m *Model) tracees(tracer *task) []*process {
	var out []*process
	for _, tid := range m.Tasks() {
		if pr := m.tasks[tid].proc; pr.tracer == tracer && pr.leader.pid.nrs[0] == tid {
			out = append(out, pr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].traceSeq < out[j].traceSeq })
	return out
}

// reparented is ptrace_reparented: the tracer is not in the real
// parent's thread group.
func reparented(pr *process) bool {
	return pr.tracer != nil && pr.tracer.proc != pr.parent.proc
}

// Tracer returns the root tid of the thread that traces tid's process, or
// 0.
func (m *Model) Tracer(tid int) int {
	if t := m.tasks[tid]; t != nil && t.proc.tracer != nil {
		return t.proc.tracer.pid.nrs[0]
	}
	return 0
}

// PtraceState is what the model knows of a tracee.
type PtraceState struct {
	Tracer      int    // root tid of the tracer thread, 0 if untraced
	Seized      bool   // PT_SEIZED
	Options     uint64 // PTRACE_O_* options
	SignalStop  bool   // in a signal-delivery stop
	EventStop   bool   // in a PTRACE_EVENT_STOP trap
	Code        int    // the stop's exit_code, 0 once the tracer's wait reported it
	TrapPending bool   // a PTRACE_EVENT_STOP trap comes when it next runs
	Queued      uint64 // signals queued while traced (bit sig-1)
}

// Ptraced describes the ptrace state of tid's process.
func (m *Model) Ptraced(tid int) PtraceState {
	t := m.tasks[tid]
	if t == nil || t.proc.tracer == nil {
		return PtraceState{}
	}
	pr := t.proc
	return PtraceState{Tracer: pr.tracer.pid.nrs[0], Seized: pr.seized, Options: pr.ptOpts,
		SignalStop: pr.ptStop == ptSignalStop, EventStop: pr.ptStop == ptEventStop, Code: pr.exitCode,
		TrapPending: pr.trapPending, Queued: pr.sigPrivate | pr.sigShared}
}
