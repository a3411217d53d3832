package refmodel

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// Each test here replays a sequence run on a Linux 6.18 host (through
// `tasklist run --kernel`) and requires the model to give Linux's
// results, quoted in the comments.

const sigchld = int(unix.SIGCHLD)

func fork(t *testing.T, m *Model, parent int) int {
	t.Helper()
	c, _, err := m.Clone(parent, 0, sigchld)
	ok(t, err)
	return c
}

func pt(t *testing.T, m *Model, tid, req, pid int, data uint64, want error) {
	t.Helper()
	if err := m.Ptrace(tid, req, pid, 0, data); !errors.Is(err, want) && !(err == nil && want == nil) {
		t.Fatalf("ptrace(%d, %d, %d, %d): %v, Linux: %v", tid, req, pid, data, err, want)
	}
}

// wantWait requires a WNOHANG wait4 (or, with waitid set, a
// waitid(P_PID)) to report pid with status and code, or to fail with err.
func wantWait(t *testing.T, m *Model, tid, pid, opts int, waitid bool, want WaitResult, wantErr error) {
	t.Helper()
	var got WaitResult
	var err error
	if waitid {
		got, err = m.Waitid(tid, unix.P_PID, pid, opts|unix.WNOHANG)
	} else {
		got, err = m.Wait4(tid, pid, opts|unix.WNOHANG)
	}
	if !errors.Is(err, wantErr) && !(err == nil && wantErr == nil) || got.Pid != want.Pid || got.Status != want.Status ||
		(want.Code != 0 && got.Code != want.Code) {
		t.Fatalf("wait by %d for %d (%#x): %+v %v; Linux: %+v %v", tid, pid, opts, got, err, want, wantErr)
	}
}

func stoppedBy(pid, sig int) WaitResult {
	return WaitResult{Pid: pid, Status: sig<<8 | 0x7f, Code: cldTrapped}
}

// A tracer's exit wakes a tracee in a signal-delivery stop with its
// exit_code: SIGTERM never reported kills it; SIGUSR1 that the tracer's
// wait reported (which zeroes exit_code) is dropped.
//
//	A.ptrace(PTRACE_SEIZE, C, 0, 0) = 0; init.kill(C, SIGTERM) = 0;
//	init.kill(C, SIGUSR1) = 0; A.exit(0) = done; init.wait4(C, WNOHANG) = C killed SIGTERM
//	(with A.wait4(B, WNOHANG) = B stopped SIGUSR1 before A's exit: P.wait4(B, WNOHANG) = 0)
func TestTracerExitDeliversUnreportedStopSignal(t *testing.T) {
	m := New(Config{})
	a, c := fork(t, m, 1), fork(t, m, 1)
	pt(t, m, a, unix.PTRACE_SEIZE, c, 0, nil)
	ok(t, m.Kill(1, c, int(unix.SIGTERM)))
	ok(t, m.Kill(1, c, int(unix.SIGUSR1)))
	ok(t, m.Exit(a, 0))
	wantWait(t, m, 1, c, 0, false, WaitResult{Pid: c, Status: int(unix.SIGTERM), Code: cldKilled}, nil)

	p, a2 := fork(t, m, 1), fork(t, m, 1)
	b := fork(t, m, p)
	pt(t, m, a2, unix.PTRACE_SEIZE, b, 0, nil)
	ok(t, m.Kill(1, b, int(unix.SIGUSR1)))
	wantWait(t, m, a2, b, 0, false, stoppedBy(b, int(unix.SIGUSR1)), nil)
	ok(t, m.Exit(a2, 0))
	wantWait(t, m, p, b, unix.WUNTRACED, false, WaitResult{}, nil)
}

// Queued signals are taken the task's own first (tgkill), then the
// process's, lowest first; INTERRUPT of a stopped seized tracee traps
// after the next CONT, once however often it is asked; CONT's signal is
// ignored from a trap.
//
//	init.kill(B, SIGUSR1), init.kill(B, SIGTERM), init.tgkill(B, B, SIGHUP):
//	trapped SIGUSR1, CONT → trapped SIGHUP, CONT → trapped SIGTERM, CONT → 0
//	INTERRUPT, INTERRUPT (stopped) = 0, 0; CONT → trapped SIGTRAP|PTRACE_EVENT_STOP<<8
//	CONT 64 from that trap = 0, and B lives; CONT = ESRCH while it runs
func TestTraceeQueueAndInterrupt(t *testing.T) {
	m := New(Config{})
	a, b := fork(t, m, 1), fork(t, m, 1)
	pt(t, m, a, unix.PTRACE_SEIZE, b, 0, nil)
	ok(t, m.Kill(1, b, int(unix.SIGUSR1)))
	ok(t, m.Kill(1, b, int(unix.SIGTERM)))
	ok(t, m.Tgkill(1, b, b, int(unix.SIGHUP)))
	for _, sig := range []unix.Signal{unix.SIGUSR1, unix.SIGHUP, unix.SIGTERM} {
		wantWait(t, m, a, b, unix.WEXITED, true, stoppedBy(b, int(sig)), nil)
		pt(t, m, a, unix.PTRACE_CONT, b, 0, nil)
	}
	wantWait(t, m, a, b, unix.WEXITED, true, WaitResult{}, nil)
	ok(t, m.Kill(1, b, int(unix.SIGUSR1)))
	wantWait(t, m, a, b, 0, false, stoppedBy(b, int(unix.SIGUSR1)), nil)
	pt(t, m, a, unix.PTRACE_INTERRUPT, b, 0, nil)
	pt(t, m, a, unix.PTRACE_INTERRUPT, b, 0, nil)
	wantWait(t, m, a, b, unix.WEXITED, true, WaitResult{}, nil)
	pt(t, m, a, unix.PTRACE_CONT, b, 0, nil)
	wantWait(t, m, a, b, unix.WEXITED, true, stoppedBy(b, eventStopTrapStatus), nil)
	pt(t, m, a, unix.PTRACE_CONT, b, 64, nil)
	wantWait(t, m, a, b, unix.WEXITED, true, WaitResult{}, nil)
	pt(t, m, a, unix.PTRACE_CONT, b, 0, unix.ESRCH)
	pt(t, m, a, unix.PTRACE_SETOPTIONS, b, unix.PTRACE_O_EXITKILL, unix.ESRCH)
}

// SIGCONT and stop signals flush each other from a tracee's queue, and
// SIGCONT makes a seized tracee trap before it stops for the SIGCONT.
//
//	ATTACH; trapped SIGSTOP; kill SIGTSTP; kill SIGCONT; CONT → trapped SIGCONT; CONT → 0
//	SEIZE; kill SIGCONT → trapped SIGTRAP|PTRACE_EVENT_STOP<<8; CONT → trapped SIGCONT
func TestTraceeSIGCONT(t *testing.T) {
	m := New(Config{})
	a, b := fork(t, m, 1), fork(t, m, 1)
	pt(t, m, a, unix.PTRACE_ATTACH, b, 0, nil)
	wantWait(t, m, a, b, unix.WEXITED, true, stoppedBy(b, int(unix.SIGSTOP)), nil)
	ok(t, m.Kill(1, b, int(unix.SIGTSTP)))
	ok(t, m.Kill(1, b, int(unix.SIGCONT)))
	pt(t, m, a, unix.PTRACE_CONT, b, 0, nil)
	wantWait(t, m, a, b, unix.WEXITED, true, stoppedBy(b, int(unix.SIGCONT)), nil)
	pt(t, m, a, unix.PTRACE_CONT, b, 0, nil)
	wantWait(t, m, a, b, unix.WEXITED, true, WaitResult{}, nil)

	c := fork(t, m, 1)
	pt(t, m, a, unix.PTRACE_SEIZE, c, 0, nil)
	ok(t, m.Kill(1, c, int(unix.SIGCONT)))
	wantWait(t, m, a, c, unix.WEXITED, true, stoppedBy(c, eventStopTrapStatus), nil)
	pt(t, m, a, unix.PTRACE_CONT, c, 0, nil)
	wantWait(t, m, a, c, unix.WEXITED, true, stoppedBy(c, int(unix.SIGCONT)), nil)
}

// The tracer's WCONTINUED wait consumes its tracee's continued report, so
// the real parent no longer sees it; a zombie tracee reports no continue.
//
//	P.kill(B, SIGSTOP), P.kill(B, SIGCONT), A.ptrace(PTRACE_SEIZE, B, 0, 0):
//	A.wait4(B, WCONTINUED|WNOHANG) = B continued; again = 0; P.wait4(B, WCONTINUED|WNOHANG) = 0
//	(B.exit(3) instead: P.wait4(B, WCONTINUED|WNOHANG) = 0;
//	A.waitid(P_PID, B, WCONTINUED|WNOHANG) = ECHILD)
func TestTracerSeesContinued(t *testing.T) {
	for _, exits := range []bool{false, true} {
		m := New(Config{})
		p, a := fork(t, m, 1), fork(t, m, 1)
		b := fork(t, m, p)
		ok(t, m.Kill(p, b, int(unix.SIGSTOP)))
		ok(t, m.Kill(p, b, int(unix.SIGCONT)))
		pt(t, m, a, unix.PTRACE_SEIZE, b, 0, nil)
		if exits {
			ok(t, m.Exit(b, 3))
			wantWait(t, m, p, b, unix.WCONTINUED, false, WaitResult{}, nil)
			wantWait(t, m, a, b, unix.WCONTINUED, true, WaitResult{}, unix.ECHILD)
			continue
		}
		wantWait(t, m, a, b, unix.WCONTINUED, false, WaitResult{Pid: b, Status: 0xffff}, nil)
		wantWait(t, m, a, b, unix.WCONTINUED, false, WaitResult{}, nil)
		wantWait(t, m, p, b, unix.WCONTINUED, false, WaitResult{}, nil)
	}
}

// PTRACE_KILL from inside a pid namespace does not kill its init
// (SEND_SIG_NOINFO, not forced); CONT passing SIGKILL does, from inside
// or outside; a handled-by-default signal passed to it is dropped.
//
//	C = N.fork(): C.ptrace(PTRACE_CONT, N, 0, SIGTERM) = 0; C.ptrace(PTRACE_KILL, N) = 0; N lives
//	M = init.fork(): M.ptrace(PTRACE_CONT, N, 0, SIGKILL) = 0; M.wait4(-1, WNOHANG) = N killed SIGKILL
func TestTracedNamespaceInit(t *testing.T) {
	m := New(Config{})
	n, _, err := m.Clone(1, unix.CLONE_NEWPID, sigchld)
	ok(t, err)
	mm := fork(t, m, 1)
	c := fork(t, m, n)
	pt(t, m, c, unix.PTRACE_SEIZE, 1, 0, nil)
	ok(t, m.Kill(c, 1, int(unix.SIGTERM)))
	wantWait(t, m, c, 1, 0, false, stoppedBy(1, int(unix.SIGTERM)), nil)
	pt(t, m, c, unix.PTRACE_CONT, 1, uint64(unix.SIGTERM), nil)
	pt(t, m, c, unix.PTRACE_KILL, 1, 0, nil)
	if in, _ := m.Info(n); !in.Running {
		t.Fatal("PTRACE_KILL from inside its namespace killed the namespace init")
	}
	pt(t, m, c, unix.PTRACE_DETACH, 1, 0, unix.ESRCH)
	ok(t, m.Kill(c, 1, int(unix.SIGUSR1)))
	pt(t, m, c, unix.PTRACE_DETACH, 1, 0, nil)
	pt(t, m, mm, unix.PTRACE_SEIZE, n, 0, nil)
	ok(t, m.Kill(mm, n, int(unix.SIGUSR1)))
	pt(t, m, mm, unix.PTRACE_CONT, n, uint64(unix.SIGKILL), nil)
	wantWait(t, m, mm, -1, 0, false, WaitResult{Pid: n, Status: int(unix.SIGKILL), Code: cldKilled}, nil)
}

// A zombie tracee whose real parent has become the tracer's process is
// reaped by the tracer's wait once, not handed on.
//
//	Q = init.fork(); C = Q.fork(); init.ptrace(PTRACE_SEIZE, C, 0, 0); C.exit(6); Q.exit(0):
//	init.wait4(Q, 0) = Q exited 0; init.wait4(C, WNOHANG) = C exited 6; again = ECHILD
func TestZombieTraceeOfNewParentReapedOnce(t *testing.T) {
	m := New(Config{})
	q := fork(t, m, 1)
	c := fork(t, m, q)
	pt(t, m, 1, unix.PTRACE_SEIZE, c, 0, nil)
	ok(t, m.Exit(c, 6))
	ok(t, m.Exit(q, 0))
	wantWait(t, m, 1, q, 0, false, WaitResult{Pid: q, Status: 0, Code: cldExited}, nil)
	wantWait(t, m, 1, c, 0, false, WaitResult{Pid: c, Status: 6 << 8, Code: cldExited}, nil)
	wantWait(t, m, 1, c, 0, false, WaitResult{}, unix.ECHILD)
}

// A traced process stops for the SIGCHLD of its child's stop and
// continue (do_notify_parent_cldstop), and of its exit.
//
//	C = B.fork(); A.ptrace(PTRACE_SEIZE, B, 0, 0); init.kill(C, SIGSTOP):
//	A.waitid(P_PID, B, WEXITED|WNOHANG) = B trapped SIGCHLD (likewise after SIGCONT and C.exit(1))
func TestTracedParentStopsForSIGCHLD(t *testing.T) {
	m := New(Config{})
	a, b := fork(t, m, 1), fork(t, m, 1)
	c := fork(t, m, b)
	pt(t, m, a, unix.PTRACE_SEIZE, b, 0, nil)
	for _, step := range []func() error{
		func() error { return m.Kill(1, c, int(unix.SIGSTOP)) },
		func() error { return m.Kill(1, c, int(unix.SIGCONT)) },
		func() error { return m.Exit(c, 1) },
	} {
		ok(t, step())
		wantWait(t, m, a, b, unix.WEXITED, true, stoppedBy(b, sigchld), nil)
		pt(t, m, a, unix.PTRACE_CONT, b, 0, nil)
	}
	wantWait(t, m, b, c, 0, false, WaitResult{Pid: c, Status: 1 << 8, Code: cldExited}, nil)
}

// execve sends SIGTRAP to a tracee attached without SEIZE only.
//
//	ATTACH B, CONT, B.execve(): A.waitid(P_PID, B, WEXITED|WNOHANG) = B trapped SIGTRAP
//	SEIZE C, C.execve() = 0: A.waitid(P_PID, C, WEXITED|WNOHANG) = 0
func TestExecTrap(t *testing.T) {
	m := New(Config{})
	a, b, c := fork(t, m, 1), fork(t, m, 1), fork(t, m, 1)
	pt(t, m, a, unix.PTRACE_ATTACH, b, 0, nil)
	pt(t, m, a, unix.PTRACE_CONT, b, 0, nil)
	ok(t, m.Execve(b))
	wantWait(t, m, a, b, unix.WEXITED, true, stoppedBy(b, int(unix.SIGTRAP)), nil)
	pt(t, m, a, unix.PTRACE_SEIZE, c, 0, nil)
	ok(t, m.Execve(c))
	wantWait(t, m, a, c, unix.WEXITED, true, WaitResult{}, nil)
}

// PTRACE_KILL and INTERRUPT of a zombie tracee succeed and do nothing;
// requests that need a stop fail with ESRCH; the tracer's waits without
// WEXITED find nothing to wait for.
//
//	KILL = 0, INTERRUPT = 0, CONT/DETACH/SETOPTIONS = ESRCH;
//	A.waitid(P_ALL, 0, WSTOPPED|WNOHANG) = ECHILD; A.wait4(B, WNOHANG) = B exited 3
func TestZombieTraceeRequests(t *testing.T) {
	m := New(Config{})
	a, b := fork(t, m, 1), fork(t, m, 1)
	pt(t, m, a, unix.PTRACE_SEIZE, b, 0, nil)
	ok(t, m.Exit(b, 3))
	pt(t, m, a, unix.PTRACE_KILL, b, 0, nil)
	pt(t, m, a, unix.PTRACE_INTERRUPT, b, 0, nil)
	for _, req := range []int{unix.PTRACE_CONT, unix.PTRACE_DETACH, unix.PTRACE_SETOPTIONS, 12345} {
		pt(t, m, a, req, b, 0, unix.ESRCH)
	}
	if _, err := m.Waitid(a, unix.P_ALL, 0, unix.WSTOPPED|unix.WNOHANG); !errors.Is(err, unix.ECHILD) {
		t.Fatalf("waitid(P_ALL, WSTOPPED) by the tracer of a zombie: %v, Linux: ECHILD", err)
	}
	wantWait(t, m, a, b, 0, false, WaitResult{Pid: b, Status: 3 << 8, Code: cldExited}, nil)
	wantWait(t, m, 1, b, 0, false, WaitResult{Pid: b, Status: 3 << 8, Code: cldExited}, nil)
}
