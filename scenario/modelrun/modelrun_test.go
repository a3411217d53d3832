package modelrun

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"tasklist/scenario"
)

func runText(t *testing.T, src string) (string, string, int) {
	t.Helper()
	s, err := scenario.Parse("t.scn", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	b, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var out, errOut bytes.Buffer
	status := scenario.Run(s, b, &out, &errOut)
	if err := b.Kernel().CheckInvariants(); err != nil {
		t.Errorf("invariants after the scenario: %v", err)
	}
	return out.String(), errOut.String(), status
}

func TestQuickstart(t *testing.T) {
	src, err := os.ReadFile("../../examples/quickstart.scn")
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, status := runText(t, string(src))
	if status != 0 || errOut != "" {
		t.Fatalf("status %d, stderr %q\n%s", status, errOut, out)
	}
	if !strings.Contains(out, "11: init.wait4(A, 0) = A exited 0\n") {
		t.Errorf("unexpected output:\n%s", out)
	}
}

// A background wait blocks until its child exits; join prints its result
// where the join is written (C7).
func TestBackgroundWaitBlocksUntilJoin(t *testing.T) {
	out, errOut, status := runText(t, `A = init.fork()
init.wait4(-1, 0) &
A.getppid() == init
A.exit(3)
join init == A exited 3
`)
	want := "3: A.getppid() = init\n4: A.exit(3) = done\n5: join init = A exited 3\n"
	if status != 0 || out[strings.Index(out, "3:"):] != want {
		t.Fatalf("status %d, stderr %q, output:\n%s", status, errOut, out)
	}
}

// The scenario's init is pid 1 of its own namespace and leads its own
// session and process group (A20, E2).
func TestInitIsANamespaceInit(t *testing.T) {
	out, _, status := runText(t, `init.getpid() == init
init.getppid() == 0
init.getsid(0) == init
init.getpgrp() == init
init.clone(CLONE_PARENT) == EINVAL
`)
	if status != 0 {
		t.Fatalf("status %d:\n%s", status, out)
	}
}

// Semaphores: a blocked semop is a background call that a later semop
// completes; an exiting task's SEM_UNDO adjustment is applied (H10, H12).
func TestSemaphoreCalls(t *testing.T) {
	out, errOut, status := runText(t, `S = init.semget(IPC_PRIVATE, 1, 0600)
A = init.fork()
A.semop(S, {0, -1, SEM_UNDO}) &
init.semctl(S, 0, GETNCNT) == 1
init.semop(S, {0, 2, 0}) == 0
join A == 0
A.exit(0)
init.semctl(S, 0, GETVAL) == 2
init.semctl(S, 0, GETPID) == A
init.semctl(S, 0, IPC_RMID) == 0
`)
	if status != 0 {
		t.Fatalf("status %d, stderr %q:\n%s", status, errOut, out)
	}
}

// ptrace and execve run on the model: a non-leader's exec takes the
// leader's pid and name (D1, de_thread).
func TestPtraceAndExecveCalls(t *testing.T) {
	out, errOut, status := runText(t, `A = init.fork()
A.ptrace(PTRACE_TRACEME) == 0
A.ptrace(PTRACE_TRACEME) == EPERM
T = A.clone(CLONE_VM|CLONE_SIGHAND|CLONE_THREAD)
T.execve() == 0
T.getpid() == T
A.getpid() == ESRCH
init.kill(A, 0) == 0
`)
	if status != 0 {
		t.Fatalf("status %d, stderr %q:\n%s", status, errOut, out)
	}
}

// A foreground call that can never complete reports EDEADLK, as the kernel
// runner does, instead of hanging the run; the task stays stuck in it.
func TestForegroundDeadlockIsReported(t *testing.T) {
	out, _, status := runText(t, `A = init.fork()
init.wait4(-1, 0) == EDEADLK
init.getpid() == EDEADLK
A.getppid() == init
`)
	if status != 0 {
		t.Fatalf("status %d:\n%s", status, out)
	}
}

// Close kills the tasks whose calls are still blocked, and returns only
// once they and their namespace have finished dying, so that the model it
// leaves is quiescent and its invariants hold (B11).
func TestCloseLeavesTheModelQuiescent(t *testing.T) {
	var src strings.Builder
	for i := range 16 {
		fmt.Fprintf(&src, "C%d = init.fork()\nC%d.fork()\n", i, i)
	}
	src.WriteString("init.wait4(0, 0) == EDEADLK\n")
	s, err := scenario.Parse("t.scn", []byte(src.String()))
	if err != nil {
		t.Fatal(err)
	}
	for range 40 {
		b, err := New()
		if err != nil {
			t.Fatal(err)
		}
		var errOut bytes.Buffer
		if status := scenario.Run(s, b, io.Discard, &errOut); status != 0 {
			t.Fatalf("status %d: %s", status, errOut.String())
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if err := b.Kernel().CheckInvariants(); err != nil {
			t.Fatalf("invariants after Close: %v", err)
		}
	}
}

// A background vfork returns once its child dies, on the call's own
// goroutine, while the driver goes on making tasks and reading names: the
// tables they share are locked (run with -race).
func TestBackgroundVforkReturnsWhileTheDriverRuns(t *testing.T) {
	var src strings.Builder
	src.WriteString("A = init.fork()\nB = A.clone(CLONE_VFORK|SIGCHLD) &\n")
	src.WriteString("init.kill(3, SIGKILL) == 0\n") // A's vfork child, unnamed until the join
	for i := range 8 {
		fmt.Fprintf(&src, "C%d = init.fork()\nC%d.getppid() == init\n", i, i)
	}
	src.WriteString("join A == B\ninit.wait4(B, __WALL) == ECHILD\nA.wait4(B, 0) == B killed SIGKILL\n")
	out, errOut, status := runText(t, src.String())
	if status != 0 {
		t.Fatalf("status %d, stderr %q:\n%s", status, errOut, out)
	}
}

// A stuck call that the next statement completes has returned before the
// statement after it: its task takes calls again at once, every time.
func TestWokenStuckCallReturnsBeforeNextStatement(t *testing.T) {
	var src strings.Builder
	src.WriteString("S = init.semget(IPC_PRIVATE, 1, 0600)\n")
	for i := range 50 {
		fmt.Fprintf(&src, `A%d = init.fork()
A%[1]d.semop(S, {0, -1, 0}) == EDEADLK
init.semop(S, {0, 1, 0}) == 0
A%[1]d.getpid() == A%[1]d
`, i)
	}
	out, errOut, status := runText(t, src.String())
	if status != 0 || errOut != "" {
		t.Fatalf("status %d, stderr:\n%s\noutput:\n%s", status, errOut, out)
	}
}

// A semtimedop ends by itself only while its task runs: one made by a
// stopped task never starts, and reports EDEADLK as the kernel runner
// does, instead of hanging the run.
func TestTimedCallOfStoppedTaskIsStuck(t *testing.T) {
	out, _, status := runText(t, `S = init.semget(IPC_PRIVATE, 1, 0600)
A = init.fork()
init.kill(A, SIGSTOP) == 0
A.semtimedop(S, 5, {0, -1, 0}) == EDEADLK
init.kill(A, SIGCONT) == 0
init.getpid() == init
`)
	if status != 0 {
		t.Fatalf("status %d:\n%s", status, out)
	}
}

// A thread whose exec is held at its PTRACE_EVENT_EXEC stop has given its
// tid to the old leader: its name stands for no task for every later call,
// as on the kernel runner, which never gets the exec's reply. The refusal
// of one call does not end it.
func TestNameOfThreadHeldInExecStaysGone(t *testing.T) {
	out, errOut, status := runText(t, `A = init.fork()
T = A.clone(CLONE_THREAD|CLONE_SIGHAND|CLONE_VM)
init.ptrace(PTRACE_SEIZE, T, 0, PTRACE_O_TRACEEXEC) == 0
T.execve() &
join T == EDEADLK
T.getpid() == ESRCH
T.getpid() == ESRCH
T.fork() == ESRCH
`)
	if status != 0 {
		t.Fatalf("status %d, stderr %q:\n%s", status, errOut, out)
	}
}
