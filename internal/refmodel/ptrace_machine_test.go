package refmodel

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"tasklist/kernel"
)

// The ptrace actions make trace links that last across steps: signals,
// waits, exits and requests then meet traced processes. Tracees are
// single-threaded processes (the kernel package traces whole processes,
// the model refuses the rest with ErrNotModelled); the kernel package
// shows no tracer, so the links are checked through the calls' results.
//
// The switches below keep out of the generated sequences the cases where
// the kernel package is known to disagree with Linux (each checked on the
// host); the model follows Linux in all of them.
const (
	// A tracer's exit resumes a tracee in a signal-delivery stop with
	// the stop's exit_code: the signal is delivered unless the tracer's
	// wait reported the stop (which zeroes exit_code). The kernel
	// package drops it. Steps other than waits start by having tracers
	// collect such reports.
	avoidUnreportedStopAtTracerExit = true
	// do_notify_parent_cldstop sends SIGCHLD to the real parent on group
	// stops and continues and to the tracer on ptrace stops; a traced
	// receiver stops for it. The kernel package sends none. Tracers and
	// processes with live children are never traced, and tracees do not
	// fork.
	avoidCldstopToTraced = true
	// A tracer's WCONTINUED wait reports (and consumes) its tracee's
	// SIGNAL_STOP_CONTINUED; the kernel package shows it only to the
	// real parent.
	avoidTracerContinued = true
	// PTRACE_KILL (SEND_SIG_NOINFO) from inside a pid namespace does not
	// kill its init, but a SIGKILL or SIGSTOP a tracer passes with
	// CONT or DETACH does (sig_kernel_only); the kernel package does the
	// opposite.
	avoidKernelOnlyToInit = true
	// When a traced zombie's real parent becomes the tracer's process
	// (reparenting), the tracer's wait reaps it outright; the kernel
	// package hands it on and it is reported twice. Steps other than
	// waits start by having tracers reap their zombie tracees.
	avoidTracerBecomesParent = true
	// CONT and DETACH data is the signal of a signal-delivery stop; a
	// PTRACE_EVENT_STOP trap ignores it. The kernel package delivers it.
	avoidSignalFromTrap = true
	// INTERRUPT of a seized tracee already stopped makes it trap again
	// once resumed; the kernel package ignores it.
	avoidInterruptStopped = true
	// A stop signal flushes a queued SIGCONT and SIGCONT queued stop
	// signals, also while the tracee sits in a ptrace stop; the kernel
	// package keeps them.
	avoidQueuedStopContFlush = true
	// SIGCONT to a seized tracee makes it trap (PTRACE_EVENT_STOP) before
	// it stops for the SIGCONT; the kernel package does not trap.
	avoidSeizedSIGCONT = true
	// execve of a tracee attached without SEIZE sends it SIGTRAP; the
	// kernel package does not.
	avoidExecTrap = true
)

// ptrace runs one ptrace call on the model and, unless the model does not
// follow the case, on the kernel package, and compares the results.
func (mt *machine) ptrace(tid, request, pid int, addr, data uint64) (error, bool) {
	var rerr error
	mt.apply(func(m *Model) { rerr = m.Ptrace(tid, request, pid, addr, data) })
	if errors.Is(rerr, ErrNotModelled) || errors.Is(rerr, ErrInitExit) {
		return nil, false
	}
	kerr := mt.kt[tid].Ptrace(request, pid, addr, data)
	mt.t.Logf("ptrace(%d, %d, %d, %d, %#x) = %v", tid, request, pid, addr, data, rerr)
	mt.checkErr(fmt.Sprintf("ptrace(%d, %d, %d, %d, %#x)", tid, request, pid, addr, data), kerr, rerr)
	mt.k.Quiesce()
	return rerr, true
}

// traced reports whether tid's process is traced.
func (mt *machine) traced(tid int) bool { return mt.m.Tracer(tid) != 0 }

// tracing reports whether some thread of tid's process traces a process.
func (mt *machine) tracing(tid int) bool {
	tgid := mt.tgidOf(tid)
	for _, o := range mt.m.Tasks() {
		if tr := mt.m.Tracer(o); tr != 0 && mt.tgidOf(tr) == tgid {
			return true
		}
	}
	return false
}

// liveChildren reports whether tid's process has a child with a running
// thread.
func (mt *machine) liveChildren(tid int) bool {
	tgid := mt.tgidOf(tid)
	for _, o := range mt.m.Running() {
		if in, _ := mt.m.Info(o); in.PPid == tgid {
			return true
		}
	}
	return false
}

// mayBeTraced reports whether the generator lets tid's process become a
// tracee.
func (mt *machine) mayBeTraced(tid int) bool {
	return !avoidCldstopToTraced || (!mt.tracing(tid) && !mt.liveChildren(tid))
}

// Ptrace attaches (ATTACH or SEIZE, with valid and invalid arguments) or
// asks to be traced.
func (mt *machine) Ptrace(t *rapid.T) {
	tid, kt := mt.actor(t)
	if rapid.IntRange(0, 3).Draw(t, "traceme") == 0 {
		in, _ := mt.m.Info(tid)
		if avoidCldstopToTraced && (in.ParentTid == 0 || mt.traced(in.ParentTid) || !mt.mayBeTraced(tid)) {
			return
		}
		mt.ptrace(tid, unix.PTRACE_TRACEME, 0, 0, 0)
		return
	}
	if avoidCldstopToTraced && mt.traced(tid) {
		return
	}
	pid := mt.somePid(t, kt)
	if target := kt.Namespace().Lookup(pid); target != nil && !mt.mayBeTraced(target.PIDIn(mt.k.RootNamespace())) {
		return
	}
	request := rapid.SampledFrom([]int{unix.PTRACE_ATTACH, unix.PTRACE_SEIZE, unix.PTRACE_SEIZE}).Draw(t, "attach")
	var addr, data uint64
	if request == unix.PTRACE_SEIZE {
		addr = rapid.SampledFrom([]uint64{0, 0, 0, 0, 1}).Draw(t, "addr")
		data = rapid.SampledFrom([]uint64{0, 0, unix.PTRACE_O_EXITKILL, unix.PTRACE_O_TRACESYSGOOD,
			unix.PTRACE_O_EXITKILL | unix.PTRACE_O_TRACESYSGOOD, 0x40000000, unix.PTRACE_O_TRACEFORK}).Draw(t, "options")
	}
	mt.ptrace(tid, request, pid, addr, data)
}

// ptraceSignals are the signals a tracer passes with CONT and DETACH.
var ptraceSignals = []uint64{0, 0, 0, uint64(unix.SIGUSR1), uint64(unix.SIGTERM), uint64(unix.SIGHUP),
	uint64(unix.SIGCHLD), uint64(unix.SIGKILL), uint64(unix.SIGSTOP), uint64(unix.SIGTSTP), uint64(unix.SIGCONT),
	64, 65}

// PtraceRequest makes a request, mostly from a tracer to its tracee,
// sometimes from any task to any pid.
func (mt *machine) PtraceRequest(t *rapid.T) {
	var tids []int
	for _, tid := range mt.m.Tasks() {
		if mt.traced(tid) {
			tids = append(tids, tid)
		}
	}
	var tid, pid int
	if len(tids) > 0 && rapid.IntRange(0, 5).Draw(t, "linked") != 0 {
		tracee := rapid.SampledFrom(tids).Draw(t, "tracee")
		tid = mt.m.Tracer(tracee)
		if in, _ := mt.m.Info(tid); in.Stopped {
			return
		}
		if rapid.IntRange(0, 7).Draw(t, "nottracer") == 0 {
			tid, _ = mt.actor(t)
		}
		pid = mt.kt[tracee].PIDIn(mt.kt[tid].Namespace())
	} else {
		var kt *kernel.Task
		tid, kt = mt.actor(t)
		pid = mt.somePid(t, kt)
	}
	request := rapid.SampledFrom([]int{unix.PTRACE_CONT, unix.PTRACE_CONT, unix.PTRACE_CONT, unix.PTRACE_DETACH,
		unix.PTRACE_DETACH, unix.PTRACE_KILL, unix.PTRACE_INTERRUPT, unix.PTRACE_INTERRUPT,
		unix.PTRACE_SETOPTIONS, 12345}).Draw(t, "request")
	var data uint64
	switch request {
	case unix.PTRACE_CONT, unix.PTRACE_DETACH:
		data = rapid.SampledFrom(ptraceSignals).Draw(t, "data")
	case unix.PTRACE_SETOPTIONS:
		data = rapid.SampledFrom([]uint64{0, unix.PTRACE_O_EXITKILL, unix.PTRACE_O_TRACESYSGOOD, 0x40000000}).Draw(t, "options")
	}
	if target := mt.kt[tid].Namespace().Lookup(pid); target != nil && !mt.requestAllowed(target, request, data) {
		return
	}
	mt.ptrace(tid, request, pid, 0, data)
}

// requestAllowed applies the switches to a request for target.
func (mt *machine) requestAllowed(target *kernel.Task, request int, data uint64) bool {
	st := mt.m.Ptraced(target.PIDIn(mt.k.RootNamespace()))
	if st.Tracer == 0 {
		return true
	}
	init := target.Getpid() == 1
	kernelOnly := data == uint64(unix.SIGKILL) || data == uint64(unix.SIGSTOP)
	switch request {
	case unix.PTRACE_KILL:
		return !(avoidKernelOnlyToInit && init)
	case unix.PTRACE_INTERRUPT:
		return !(avoidInterruptStopped && (st.SignalStop || st.EventStop))
	case unix.PTRACE_CONT, unix.PTRACE_DETACH:
		if avoidSignalFromTrap && st.EventStop && data != 0 {
			return false
		}
		return !(avoidKernelOnlyToInit && init && kernelOnly)
	}
	return true
}

// signalAllowed applies the switches to a signal that kill or tgkill
// may send to any process.
func (mt *machine) signalAllowed(sig int) bool {
	for _, tid := range mt.m.Tasks() {
		st := mt.m.Ptraced(tid)
		if st.Tracer == 0 {
			continue
		}
		if avoidSeizedSIGCONT && st.Seized && sig == int(unix.SIGCONT) {
			return false
		}
		if avoidQueuedStopContFlush && ((sig == int(unix.SIGCONT) && st.Queued&stopMask != 0) ||
			(uint64(1)<<(sig-1)&stopMask != 0 && st.Queued&contBit != 0)) {
			return false
		}
	}
	return true
}

// waitOptions applies the switches to the options of a wait by tid.
func (mt *machine) waitOptions(tid, opts int) int {
	if !avoidTracerContinued {
		return opts
	}
	tgid := mt.tgidOf(tid)
	for _, o := range mt.m.Tasks() {
		if tr := mt.m.Tracer(o); tr != 0 && mt.tgidOf(tr) == tgid && mt.m.tasks[o].proc.continued {
			return opts &^ unix.WCONTINUED
		}
	}
	return opts
}

// collectTraceReports has each tracer wait for a tracee that sits in a
// signal-delivery stop it has not reported, and for a zombie tracee.
func (mt *machine) collectTraceReports() {
	if !avoidUnreportedStopAtTracerExit && !avoidTracerBecomesParent {
		return
	}
	for _, tid := range mt.m.Tasks() {
		st := mt.m.Ptraced(tid)
		in, ok := mt.m.Info(tid)
		if st.Tracer == 0 || !ok || !((st.SignalStop && st.Code != 0) || in.Zombie) {
			continue
		}
		if tin, _ := mt.m.Info(st.Tracer); tin.Stopped {
			continue // a stopped tracer makes no call
		}
		tracer := mt.kt[st.Tracer]
		pid := mt.kt[tid].PIDIn(tracer.Namespace())
		const opts = unix.WNOHANG | unix.WALL
		kr, kerr := tracer.Wait4(context.Background(), pid, opts)
		mt.wait(fmt.Sprintf("tracer %d collects %d", st.Tracer, tid), kr, kerr,
			func(m *Model) (WaitResult, error) { return m.Wait4(st.Tracer, pid, opts) })
		mt.k.Quiesce()
	}
}

// canExit reports whether tid may end by exit(2) now: it runs and is not
// the root init's last thread.
func (mt *machine) canExit(tid int) bool {
	in, ok := mt.m.Info(tid)
	if !ok || !in.Running {
		return false
	}
	if in.Tgid != 1 {
		return true
	}
	live := 0
	for _, o := range mt.m.Running() {
		if mt.tgidOf(o) == 1 {
			live++
		}
	}
	return live > 1
}

func (mt *machine) tgidOf(tid int) int {
	in, _ := mt.m.Info(tid)
	return in.Tgid
}

// checkTracers requires every tracer to be a thread that still runs: an
// exiting tracer detaches everything it traces (exit_ptrace).
func (mt *machine) checkTracers(t *rapid.T) {
	for _, tid := range mt.m.Tasks() {
		if tr := mt.m.Tracer(tid); tr != 0 {
			if in, ok := mt.m.Info(tr); !ok || !in.Running {
				t.Fatalf("task %d traced by %d, which has exited", tid, tr)
			}
		}
	}
}
