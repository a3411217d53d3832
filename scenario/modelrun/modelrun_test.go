package modelrun

import (
	"bytes"
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
