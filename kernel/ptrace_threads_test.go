package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

// Tracing threads one by one (spec C5–C11, D5–D9): a tracer traces the
// thread it attached to and nothing else of its process, its wait reports
// that thread by its tid, and the thread's stops and exit are the
// tracer's. The scenarios d27–d96 record each behaviour on Linux.

// ptFixture is a tracer A, a process B (both init's children) and B's
// second thread T.
type ptFixture struct {
	*env
	a, b, th *Task
}

func newPtFixture(t *testing.T) *ptFixture {
	t.Helper()
	e := newEnv(t, Config{})
	f := &ptFixture{env: e, a: e.fork(e.init), b: e.fork(e.init)}
	f.th = e.thread(f.b)
	return f
}

// D5 C5 C7 (d85): ATTACH of a non-leader thread stops that thread alone,
// and the tracer's wait4 without __WALL reports it by its tid.
func TestPtraceThreadAttachStopsOnlyThatThread(t *testing.T) {
	f := newPtFixture(t)
	f.ptrace(f.a, unix.PTRACE_ATTACH, f.th, 0)
	f.wantStopped(true, f.th)
	f.wantStopped(false, f.b)
	f.reapCode(f.a, -1, 0, f.th.Gettid(), stopped(unix.SIGSTOP, 0), CLDTrapped)
	f.wantWait(f.a, -1, unix.WNOHANG, nil)
	f.wantWait(f.init, f.b.Getpid(), unix.WUNTRACED|unix.WNOHANG, nil)
	f.ptrace(f.a, unix.PTRACE_CONT, f.th, 0)
	f.wantStopped(false, f.th, f.b)
	f.ptraceErr(f.a, unix.PTRACE_CONT, f.th.Gettid(), 0, unix.ESRCH) // D6: no longer stopped
	f.check()
	f.finish()
}

// D5 C5 C10 (d87): a seized thread stops for a signal sent to it; waitid
// without __WALL reports CLD_TRAPPED with its tid, and the leader's pid
// selects nothing.
func TestPtraceThreadSeizeWaitidTrapped(t *testing.T) {
	f := newPtFixture(t)
	f.ptrace(f.a, unix.PTRACE_SEIZE, f.th, 0)
	f.wantStopped(false, f.th) // SEIZE does not stop
	f.tgkill(f.init, f.th, unix.SIGUSR1)
	r, err := f.waitid(f.a, unix.P_PID, f.b.Getpid(), unix.WEXITED|unix.WNOHANG)
	f.wantErr("waitid(P_PID, B)", r, err, unix.ECHILD)
	r, err = f.waitid(f.a, unix.P_ALL, 0, unix.WEXITED)
	f.want("waitid(P_ALL, WEXITED)", r, err, f.th.Gettid(), stopped(unix.SIGUSR1, 0), CLDTrapped)
	f.wantStopped(true, f.th)
	f.wantStopped(false, f.b)
	// CONT with 0 drops the (otherwise fatal) SIGUSR1.
	f.ptrace(f.a, unix.PTRACE_CONT, f.th, 0)
	f.wantStopped(false, f.th)
	if f.th.Exited() || f.b.Exited() {
		t.Fatal("the process died of a signal its tracer dropped")
	}
	f.finish()
}

// D6 C4 (d88): with only a non-leader thread traced, requests naming the
// leader fail with ESRCH and the tracer's wait for the leader's pid finds
// no child.
func TestPtraceThreadLeaderPidIsNotTraced(t *testing.T) {
	f := newPtFixture(t)
	f.ptrace(f.a, unix.PTRACE_SEIZE, f.th, 0)
	for _, req := range []int{unix.PTRACE_INTERRUPT, unix.PTRACE_KILL, unix.PTRACE_DETACH, unix.PTRACE_CONT} {
		f.ptraceErr(f.a, req, f.b.Getpid(), 0, unix.ESRCH)
	}
	f.wantWait(f.a, f.b.Getpid(), unix.WNOHANG, unix.ECHILD)
	f.wantWait(f.a, -1, unix.WNOHANG, nil)
	f.ptrace(f.a, unix.PTRACE_INTERRUPT, f.th, 0)
	f.reapCode(f.a, -1, 0, f.th.Gettid(), stopped(unix.SIGTRAP, ptraceEventStop), CLDTrapped)
	f.ptraceErr(f.a, unix.PTRACE_CONT, f.b.Getpid(), 0, unix.ESRCH)
	f.ptrace(f.a, unix.PTRACE_CONT, f.th, 0)
	f.wantStopped(false, f.th, f.b)
	f.finish()
}

// D8 C5 C9 (d86): a traced thread's exit makes a zombie that only its
// tracer sees; the tracer reaps it by tid with the thread's own code.
func TestPtraceThreadExitReportedToTracer(t *testing.T) {
	f := newPtFixture(t)
	f.ptrace(f.a, unix.PTRACE_SEIZE, f.th, 0)
	f.exit(f.th, 5)
	f.wantWait(f.init, -1, unix.WNOHANG|unix.WALL, nil)
	f.reapCode(f.a, -1, 0, f.th.Gettid(), exited(5), CLDExited)
	f.wantWait(f.a, -1, unix.WNOHANG, unix.ECHILD)
	f.exit(f.b, 1)
	f.reapCode(f.init, f.b.Getpid(), 0, f.b.Getpid(), exited(1), CLDExited)
	f.check()
	f.finish()
}

// D8 B2 B5 C9 C11 (d72, d76): a group exit makes the traced thread the
// tracer's zombie, with the group's status; the real parent cannot reap
// the leader until the tracer has reaped the thread.
func TestPtraceThreadZombieHoldsLeader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		end    func(f *ptFixture)
		status unix.WaitStatus
		code   int
	}{
		{"exit_group", func(f *ptFixture) { f.exitGroup(f.b, 3) }, exited(3), CLDExited},
		{"exit_group by the traced thread", func(f *ptFixture) { f.exitGroup(f.th, 6) }, exited(6), CLDExited},
		{"SIGKILL", func(f *ptFixture) { f.kill(f.init, f.b, unix.SIGKILL) },
			killed(unix.SIGKILL), CLDKilled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPtFixture(t)
			f.ptrace(f.a, unix.PTRACE_SEIZE, f.th, 0)
			tc.end(f)
			f.k.Quiesce()
			f.wantWait(f.init, f.b.Getpid(), unix.WNOHANG, nil)
			f.check()
			f.reapCode(f.a, -1, 0, f.th.Gettid(), tc.status, tc.code)
			f.reapCode(f.init, f.b.Getpid(), unix.WNOHANG, f.b.Getpid(), tc.status, tc.code)
			f.wantWait(f.a, -1, unix.WNOHANG, unix.ECHILD)
			f.finish()
		})
	}
}

// C8 C11 (d91): the leader, exiting last, sets the process's exit code,
// which the tracer then reads for the thread that exited earlier with
// another code; WNOWAIT leaves the zombie in place.
func TestPtraceThreadStatusAfterLastThreadExit(t *testing.T) {
	f := newPtFixture(t)
	f.ptrace(f.a, unix.PTRACE_SEIZE, f.th, 0)
	f.exit(f.th, 3)
	f.exit(f.b, 0)
	f.wantWait(f.init, -1, unix.WNOHANG|unix.WALL, nil)
	r, err := f.waitid(f.a, unix.P_ALL, 0, unix.WEXITED|unix.WNOWAIT)
	f.want("tracer's waitid(WNOWAIT)", r, err, f.th.Gettid(), exited(0), CLDExited)
	f.reapCode(f.a, f.th.Gettid(), unix.WCLONE, f.th.Gettid(), exited(0), CLDExited)
	f.reapCode(f.init, -1, unix.WNOHANG|unix.WALL, f.b.Getpid(), exited(0), CLDExited)
	f.finish()
}

// D8 D9 (d29, d30): a tracer's exit releases its zombie thread tracee: the
// process lives on, or, if it was exiting, its leader becomes reapable.
func TestPtraceThreadTracerExitReleasesZombie(t *testing.T) {
	t.Run("process lives", func(t *testing.T) {
		f := newPtFixture(t)
		f.ptrace(f.a, unix.PTRACE_SEIZE, f.th, 0)
		f.exit(f.th, 4)
		f.exit(f.a, 0)
		f.reapCode(f.init, f.a.Getpid(), 0, f.a.Getpid(), exited(0), CLDExited)
		f.check()
		if f.b.Exited() || f.b.Getpid() != f.b.Gettid() {
			t.Fatal("the process of the released thread did not live on")
		}
		f.exit(f.b, 8)
		f.reapCode(f.init, f.b.Getpid(), 0, f.b.Getpid(), exited(8), CLDExited)
		f.finish()
	})
	t.Run("process exited", func(t *testing.T) {
		f := newPtFixture(t)
		f.ptrace(f.a, unix.PTRACE_SEIZE, f.th, 0)
		f.exitGroup(f.b, 2)
		f.k.Quiesce()
		f.wantWait(f.init, f.b.Getpid(), unix.WNOHANG, nil)
		f.exit(f.a, 0)
		f.reapCode(f.init, f.b.Getpid(), 0, f.b.Getpid(), exited(2), CLDExited)
		f.reapCode(f.init, f.a.Getpid(), 0, f.a.Getpid(), exited(0), CLDExited)
		f.wantWait(f.init, -1, unix.WNOHANG|unix.WALL, unix.ECHILD)
		f.wantOnlyInit()
		f.check()
	})
}

// D9 B2 (d31): PTRACE_O_EXITKILL on a thread: the tracer's exit kills the
// thread's whole process.
func TestPtraceThreadExitKill(t *testing.T) {
	f := newPtFixture(t)
	f.ptrace(f.a, unix.PTRACE_SEIZE, f.th, unix.PTRACE_O_EXITKILL)
	f.exit(f.a, 0)
	f.reapCode(f.init, f.b.Getpid(), 0, f.b.Getpid(), killed(unix.SIGKILL), CLDKilled)
	f.reapCode(f.init, f.a.Getpid(), 0, f.a.Getpid(), exited(0), CLDExited)
	f.finish()
}

// D6 C5 (d84, d14): a traced thread stops for every signal sent to it,
// handled, ignored or fatal, but SIGKILL; CONT with the signal delivers
// it, CONT with 0 drops it.
func TestPtraceThreadSignalDeliveryStops(t *testing.T) {
	f := newPtFixture(t)
	_, err := f.b.Sigaction(int(unix.SIGUSR2), SigAction{Handler: SigHandler})
	mustOK(t, err)
	_, err = f.b.Sigaction(int(unix.SIGUSR1), SigAction{Handler: SigIgn})
	mustOK(t, err)
	f.ptrace(f.a, unix.PTRACE_SEIZE, f.th, 0)
	for _, sig := range []unix.Signal{unix.SIGUSR2, unix.SIGUSR1, unix.SIGTERM} {
		f.tgkill(f.init, f.th, sig)
		r, err := f.wait4(f.a, f.th.Gettid(), 0)
		f.want("wait4(T) after tgkill("+sig.String()+")", r, err, f.th.Gettid(), stopped(sig, 0), CLDTrapped)
		f.wantStopped(true, f.th)
		f.wantStopped(false, f.b)
		pass := uint64(0)
		if sig == unix.SIGUSR2 {
			pass = uint64(sig)
		}
		f.ptrace(f.a, unix.PTRACE_CONT, f.th, pass)
		f.wantStopped(false, f.th)
		if f.b.Exited() {
			t.Fatalf("%v: the process died", sig)
		}
	}
	f.wantWait(f.a, -1, unix.WNOHANG, nil)
	// SIGKILL is never trapped: the process dies and the thread is the
	// tracer's zombie.
	f.tgkill(f.init, f.th, unix.SIGKILL)
	f.reapCode(f.a, -1, 0, f.th.Gettid(), killed(unix.SIGKILL), CLDKilled)
	f.reapCode(f.init, f.b.Getpid(), 0, f.b.Getpid(), killed(unix.SIGKILL), CLDKilled)
	f.finish()
}

// D5 C10 (d73, d78): a group stop makes a seized thread trap with
// SIGSTOP|PTRACE_EVENT_STOP<<8 and an attached one with SIGSTOP; the
// real parent sees the group stop; the tracer's CONT lets the thread run
// while its process stays stopped; SIGCONT then makes a seized thread trap
// with SIGTRAP|PTRACE_EVENT_STOP<<8.
func TestPtraceThreadGroupStopTrap(t *testing.T) {
	for _, seize := range []bool{true, false} {
		name := map[bool]string{true: "SEIZE", false: "ATTACH"}[seize]
		t.Run(name, func(t *testing.T) {
			f := newPtFixture(t)
			event := 0
			if seize {
				event = ptraceEventStop
				f.ptrace(f.a, unix.PTRACE_SEIZE, f.th, 0)
			} else {
				f.ptrace(f.a, unix.PTRACE_ATTACH, f.th, 0)
				f.reapCode(f.a, -1, 0, f.th.Gettid(), stopped(unix.SIGSTOP, 0), CLDTrapped)
				f.ptrace(f.a, unix.PTRACE_CONT, f.th, 0)
			}
			f.kill(f.init, f.b, unix.SIGSTOP)
			f.reapCode(f.a, -1, 0, f.th.Gettid(), stopped(unix.SIGSTOP, event), CLDTrapped)
			f.wantStopped(true, f.b, f.th)
			f.reapCode(f.init, f.b.Getpid(), unix.WUNTRACED|unix.WNOHANG, f.b.Getpid(), stopped(unix.SIGSTOP, 0), CLDStopped)
			f.ptrace(f.a, unix.PTRACE_CONT, f.th, 0)
			f.wantStopped(false, f.th)
			f.wantStopped(true, f.b)
			f.wantWait(f.a, -1, unix.WNOHANG, nil)
			f.kill(f.init, f.b, unix.SIGCONT)
			f.wantStopped(false, f.b)
			f.reapCode(f.init, f.b.Getpid(), unix.WCONTINUED|unix.WNOHANG, f.b.Getpid(), 0xffff, CLDContinued)
			if seize {
				f.reapCode(f.a, -1, 0, f.th.Gettid(), stopped(unix.SIGTRAP, ptraceEventStop), CLDTrapped)
				f.ptrace(f.a, unix.PTRACE_CONT, f.th, 0)
			}
			f.wantStopped(false, f.th)
			f.wantWait(f.a, -1, unix.WNOHANG, nil)
			f.check()
			f.finish()
		})
	}
}

// D6 (d74, d75): PTRACE_INTERRUPT of a seized thread already stopped is
// not lost: once continued it traps again with PTRACE_EVENT_STOP.
func TestPtraceThreadInterruptStopped(t *testing.T) {
	f := newPtFixture(t)
	f.ptrace(f.a, unix.PTRACE_SEIZE, f.th, 0)
	f.tgkill(f.init, f.th, unix.SIGUSR1)
	r, err := f.waitid(f.a, unix.P_PID, f.th.Gettid(), unix.WEXITED)
	f.want("waitid after tgkill", r, err, f.th.Gettid(), stopped(unix.SIGUSR1, 0), CLDTrapped)
	f.ptrace(f.a, unix.PTRACE_INTERRUPT, f.th, 0)
	r, err = f.waitid(f.a, unix.P_PID, f.th.Gettid(), unix.WEXITED|unix.WNOHANG)
	f.wantNothing("waitid after INTERRUPT of a stopped thread", r, err)
	f.ptrace(f.a, unix.PTRACE_CONT, f.th, 0)
	r, err = f.waitid(f.a, unix.P_PID, f.th.Gettid(), unix.WEXITED)
	f.want("waitid after CONT", r, err, f.th.Gettid(), stopped(unix.SIGTRAP, ptraceEventStop), CLDTrapped)
	f.wantStopped(true, f.th)
	// Two INTERRUPTs of a running thread: one trap, then one more after
	// CONT (d75).
	f.ptrace(f.a, unix.PTRACE_CONT, f.th, 0)
	f.ptrace(f.a, unix.PTRACE_INTERRUPT, f.th, 0)
	f.ptrace(f.a, unix.PTRACE_INTERRUPT, f.th, 0)
	f.reapCode(f.a, f.th.Gettid(), 0, f.th.Gettid(), stopped(unix.SIGTRAP, ptraceEventStop), CLDTrapped)
	f.wantWait(f.a, f.th.Gettid(), unix.WNOHANG, nil)
	f.ptrace(f.a, unix.PTRACE_CONT, f.th, 0)
	f.k.Quiesce()
	f.reapCode(f.a, f.th.Gettid(), unix.WNOHANG, f.th.Gettid(), stopped(unix.SIGTRAP, ptraceEventStop), CLDTrapped)
	f.ptrace(f.a, unix.PTRACE_CONT, f.th, 0)
	f.wantStopped(false, f.th, f.b)
	f.wantWait(f.a, -1, unix.WNOHANG, nil)
	// Once detached the thread is not traced (ESRCH); attached again
	// without SEIZE, INTERRUPT is refused (EIO, d16).
	f.ptrace(f.a, unix.PTRACE_INTERRUPT, f.th, 0)
	f.reapCode(f.a, f.th.Gettid(), 0, f.th.Gettid(), stopped(unix.SIGTRAP, ptraceEventStop), CLDTrapped)
	f.ptrace(f.a, unix.PTRACE_DETACH, f.th, 0)
	f.ptraceErr(f.a, unix.PTRACE_INTERRUPT, f.th.Gettid(), 0, unix.ESRCH)
	f.ptrace(f.a, unix.PTRACE_ATTACH, f.th, 0)
	f.ptraceErr(f.a, unix.PTRACE_INTERRUPT, f.th.Gettid(), 0, unix.EIO)
	f.finish()
}

// D1 D5 D6 (d47, d63, d83, d94): execve by an ATTACH or TRACEME tracee
// sends it SIGTRAP; PTRACE_O_TRACEEXEC turns it into PTRACE_EVENT_EXEC; a
// seized tracee without the option does not stop.
func TestPtraceExecveTrap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		attach func(f *ptFixture, p *Task) *Task // returns the tracer
		want   unix.WaitStatus
	}{
		{"ATTACH", func(f *ptFixture, p *Task) *Task {
			f.ptrace(f.a, unix.PTRACE_ATTACH, p, 0)
			f.reapCode(f.a, p.Getpid(), 0, p.Getpid(), stopped(unix.SIGSTOP, 0), CLDTrapped)
			f.ptrace(f.a, unix.PTRACE_CONT, p, 0)
			return f.a
		}, stopped(unix.SIGTRAP, 0)},
		{"TRACEME", func(f *ptFixture, p *Task) *Task {
			mustOK(f.t, p.Ptrace(unix.PTRACE_TRACEME, 0, 0, 0))
			return f.init
		}, stopped(unix.SIGTRAP, 0)},
		{"SEIZE with TRACEEXEC", func(f *ptFixture, p *Task) *Task {
			f.ptrace(f.a, unix.PTRACE_SEIZE, p, unix.PTRACE_O_TRACEEXEC)
			return f.a
		}, stopped(unix.SIGTRAP, unix.PTRACE_EVENT_EXEC)},
		{"SEIZE", func(f *ptFixture, p *Task) *Task {
			f.ptrace(f.a, unix.PTRACE_SEIZE, p, 0)
			return f.a
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPtFixture(t)
			p := f.fork(f.init)
			tracer := tc.attach(f, p)
			mustOK(t, p.Execve())
			if tc.want == 0 {
				f.wantStopped(false, p)
				f.wantWait(tracer, -1, unix.WNOHANG, nil)
			} else {
				r, err := f.waitid(tracer, unix.P_PID, p.Getpid(), unix.WEXITED)
				f.want("waitid after execve", r, err, p.Getpid(), tc.want, CLDTrapped)
				f.wantStopped(true, p)
				r, err = f.wait4(f.init, p.Getpid(), unix.WUNTRACED|unix.WNOHANG)
				if tracer != f.init {
					f.wantNothing("parent's wait4(WUNTRACED)", r, err)
				}
				f.ptrace(tracer, unix.PTRACE_CONT, p, 0)
				f.wantStopped(false, p)
			}
			f.finish()
		})
	}
}

// D5 D6 (d70): an attached non-leader thread that execs takes the
// leader's pid, keeps its tracer and stops with SIGTRAP, reported under
// the leader's pid.
func TestPtraceThreadExecveTakesLeaderPid(t *testing.T) {
	f := newPtFixture(t)
	bpid := f.b.Getpid()
	f.ptrace(f.a, unix.PTRACE_ATTACH, f.th, 0)
	f.reapCode(f.a, f.th.Gettid(), 0, f.th.Gettid(), stopped(unix.SIGSTOP, 0), CLDTrapped)
	f.ptrace(f.a, unix.PTRACE_CONT, f.th, 0)
	mustOK(t, f.th.Execve())
	if f.th.Gettid() != bpid || f.th.Getpid() != bpid {
		t.Fatalf("after execve the thread is tid %d pid %d, want %d", f.th.Gettid(), f.th.Getpid(), bpid)
	}
	r, err := f.waitid(f.a, unix.P_ALL, 0, unix.WEXITED)
	f.want("waitid after execve", r, err, bpid, stopped(unix.SIGTRAP, 0), CLDTrapped)
	f.ptrace(f.a, unix.PTRACE_CONT, f.th, 0)
	f.wantStopped(false, f.th)
	f.wantWait(f.a, -1, unix.WNOHANG, nil)
	f.check()
	f.finish()
}

// D5 C5 C9 (d89): one tracer traces both threads; exit_group makes both
// its zombies, the leader reportable only once the thread is reaped, and
// then handed to the real parent, which reaps it too.
func TestPtraceThreadTraceBothThreads(t *testing.T) {
	f := newPtFixture(t)
	f.ptrace(f.a, unix.PTRACE_SEIZE, f.b, 0)
	f.ptrace(f.a, unix.PTRACE_SEIZE, f.th, 0)
	f.exitGroup(f.b, 7)
	f.k.Quiesce()
	f.wantWait(f.a, f.b.Getpid(), unix.WNOHANG, nil)
	f.reapCode(f.a, f.th.Gettid(), 0, f.th.Gettid(), exited(7), CLDExited)
	f.reapCode(f.a, f.b.Getpid(), 0, f.b.Getpid(), exited(7), CLDExited)
	f.reapCode(f.init, f.b.Getpid(), 0, f.b.Getpid(), exited(7), CLDExited)
	f.finish()
}

// D6 D9 C6 (d25, d49): the tracer is a thread, not its process: a
// sibling's plain wait sees the tracee but not with __WNOTHREAD, the
// sibling's requests fail with ESRCH, and the tracing thread's exit alone
// detaches the tracee, which runs on and may be seized again.
func TestPtraceThreadTracedByThread(t *testing.T) {
	f := newPtFixture(t)
	tracer := f.thread(f.a)
	f.ptrace(tracer, unix.PTRACE_ATTACH, f.th, 0)
	f.k.Quiesce()
	f.wantWait(f.a, -1, unix.WNOHANG|unix.WNOTHREAD, unix.ECHILD)
	r, err := f.wait4(f.a, -1, unix.WNOHANG|unix.WNOWAIT)
	f.wantErr("wait4 with WNOWAIT", r, err, unix.EINVAL) // C2
	f.reapCode(f.a, -1, unix.WNOHANG, f.th.Gettid(), stopped(unix.SIGSTOP, 0), CLDTrapped)
	f.wantWait(tracer, -1, unix.WNOHANG|unix.WNOTHREAD, nil)
	f.ptraceErr(f.a, unix.PTRACE_CONT, f.th.Gettid(), 0, unix.ESRCH)
	f.wantStopped(true, f.th)
	f.exit(tracer, 0)
	f.wantStopped(false, f.th, f.b)
	f.ptraceErr(f.a, unix.PTRACE_INTERRUPT, f.th.Gettid(), 0, unix.ESRCH)
	f.check()
	f.ptrace(f.a, unix.PTRACE_SEIZE, f.th, 0)
	f.wantWait(f.a, -1, unix.WNOHANG, nil)
	f.finish()
}

// C9 C11 D8 (d28): a traced leader that exits while another thread lives
// is a delayed zombie for its tracer too; the last thread's exit makes it
// ready, with that thread's code, for the tracer and then for the parent.
func TestPtraceThreadTracedLeaderDelayedZombie(t *testing.T) {
	f := newPtFixture(t)
	f.ptrace(f.a, unix.PTRACE_SEIZE, f.b, 0)
	f.exit(f.b, 1)
	f.k.Quiesce()
	f.wantWait(f.a, f.b.Getpid(), unix.WNOHANG, nil)
	f.wantWait(f.init, f.b.Getpid(), unix.WNOHANG, nil)
	f.exit(f.th, 9)
	f.wantWait(f.init, f.b.Getpid(), unix.WNOHANG, nil)
	f.reapCode(f.a, f.b.Getpid(), 0, f.b.Getpid(), exited(9), CLDExited)
	f.reapCode(f.init, f.b.Getpid(), 0, f.b.Getpid(), exited(9), CLDExited)
	f.finish()
}
