package kernelrun

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tasklist/scenario"
)

// newBackend starts a backend or skips the test, saying why, where the host cannot give one.
func newBackend(t *testing.T) *Backend {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the kernel runner needs root to create pid and IPC namespaces")
	}
	b, err := New()
	switch {
	case errors.Is(err, ErrNeedRoot):
		t.Skip("pid and IPC namespaces are not available here: ", err)
	case errors.Is(err, ErrNoCompiler):
		t.Skip(err)
	case err != nil:
		t.Fatal(err)
	}
	return b
}

// run runs src on a fresh backend and returns what it printed and its status.
func run(t *testing.T, name, src string) (stdout, stderr string, status int) {
	t.Helper()
	s, err := scenario.Parse(name, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	b := newBackend(t)
	var out, errs bytes.Buffer
	status = scenario.Run(s, b, &out, &errs)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String(), errs.String(), status
}

func TestQuickstart(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "quickstart.scn")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, errs, status := run(t, path, string(src))
	const want = `2: A = init.fork() = A
3: A.prctl(PR_SET_CHILD_SUBREAPER, 1) = 0
4: B = A.fork() = B
5: C = B.fork() = C
6: B.exit(7) = done
7: C.getppid() = A
8: A.wait4(-1, WNOHANG) = B exited 7
9: A.exit(0) = done
10: C.getppid() = init
11: init.wait4(A, 0) = A exited 0
`
	if out != want || errs != "" || status != 0 {
		t.Errorf("status %d, stdout:\n%s\nstderr:\n%s\nwant stdout:\n%s", status, out, errs, want)
	}
}

// scenarios hold an expectation on every line that prints one: each runs with status 0 and
// nothing on stderr when the kernel agrees. The uid they switch to is one no corpus file uses:
// RLIMIT_NPROC counts a uid's processes over the whole host, and the corpus runs beside them.
var scenarios = map[string]string{
	"threads": `
A = init.fork()
T = A.clone(CLONE_VM|CLONE_SIGHAND|CLONE_THREAD)
T.getpid() == A
T.gettid() == T
A.exit(0) == done
init.wait4(A, WNOHANG) == 0
A.getpid() == ESRCH
T.exit(5) == done
init.wait4(A, 0) == A exited 5
init.clone(CLONE_THREAD) == EINVAL
`,
	"execve": `
B = init.fork()
U = B.clone(CLONE_VM|CLONE_SIGHAND|CLONE_THREAD)
U.execve() == 0
U.getpid() == U
U.gettid() == U
B.getpid() == ESRCH
U.exit_group(3) == done
init.wait4(-1, 0) == U exited 3
`,
	"signals": `
A = init.fork()
B = A.fork()
init.kill(B, SIGSTOP) == 0
A.wait4(B, WUNTRACED|WNOHANG) == B stopped SIGSTOP
init.kill(B, SIGCONT) == 0
A.waitid(P_PID, B, WCONTINUED|WNOHANG) == B continued
A.signal(SIGUSR1, HANDLER) == 0
A.wait4(B, 0) &
init.kill(A, SIGUSR1) == 0
join A == EINTR
init.kill(B, SIGTERM) == 0
A.wait4(B, 0) == B killed SIGTERM
A.signal(SIGCHLD, SIG_IGN) == 0
C = A.fork()
C.exit(1) == done
A.wait4(-1, WNOHANG) == ECHILD
init.kill(init, SIGKILL) == 0
init.getpid() == init
`,
	"semaphores": `
S = init.semget(IPC_PRIVATE, 2, IPC_CREAT|0600)
init.semctl(S, 0, SETALL, [1 0]) == 0
A = init.fork()
A.semop(S, {1, -1, 0}) &
init.semctl(S, 1, GETNCNT) == 1
init.semop(S, {1, 2, 0}) == 0
join A == 0
init.semctl(S, 0, GETALL) == [1 1]
A.semop(S, {0, -1, SEM_UNDO}) == 0
A.semctl(S, 0, GETPID) == A
A.exit(0) == done
init.semctl(S, 0, GETVAL) == 1
init.semtimedop(S, 20, {0, -2, 0}) == EAGAIN
B = init.fork()
B.semop(S, {0, -5, 0}) &
init.semctl(S, 0, IPC_RMID) == 0
join B == EIDRM
`,
	"ptrace": `
A = init.fork()
B = A.fork()
B.ptrace(PTRACE_TRACEME) == 0
init.kill(B, SIGUSR1) == 0
A.waitid(P_PID, B, WSTOPPED|WNOHANG) == B trapped SIGUSR1
A.wait4(B, WNOHANG|WUNTRACED) == 0
A.ptrace(PTRACE_CONT, B, 0, 0) == 0
C = init.fork()
C.ptrace(PTRACE_ATTACH, A, 0, 0) == 0
C.wait4(A, __WALL) == A stopped SIGSTOP
C.ptrace(PTRACE_SETOPTIONS, A, 0, PTRACE_O_TRACEFORK) == 0
C.ptrace(PTRACE_CONT, A, 0, 0) == 0
D = A.fork() &
C.wait4(A, __WALL) == A stopped SIGTRAP|PTRACE_EVENT_FORK<<8
C.ptrace(PTRACE_CONT, A, 0, 0) == 0
join A == D
C.wait4(-1, __WALL) == D stopped SIGSTOP
C.ptrace(PTRACE_DETACH, D, 0, 0) == 0
D.getppid() == A
`,
	"vfork and namespaces": `
A = init.fork()
V = A.clone(CLONE_VM|CLONE_VFORK|SIGCHLD) &
init.kill(3, SIGKILL) == 0
join A == V
A.wait4(-1, 0) == V killed SIGKILL
N = init.clone(CLONE_NEWPID|SIGCHLD)
N.getppid() == 0
M = N.fork()
M.getppid() == N
N.kill(M, SIGKILL) == 0
N.wait4(-1, 0) == M killed SIGKILL
init.exit_group(0) == done
N.getpid() == ESRCH
`,
	"groups and priorities": `
P = init.fork()
init.setsid() == EPERM
init.getsid(0) == init
P.setpgid(0, 0) == 0
P.getpgrp() == P
P.setpriority(PRIO_PROCESS, 0, 5) == 0
init.getpriority(PRIO_PROCESS, P) == 5
P.setuid(61234) == 0
P.setpriority(PRIO_PROCESS, 0, 0) == EACCES
P.setrlimit(RLIMIT_NPROC, 1) == 0
P.fork() == EAGAIN
`,
}

func TestScenarios(t *testing.T) {
	for name, src := range scenarios {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			out, errs, status := run(t, name, src)
			if status != 0 || errs != "" {
				t.Errorf("status %d\nstdout:\n%s\nstderr:\n%s", status, out, errs)
			}
		})
	}
}

// A foreground call that can never return prints EDEADLK and leaves its task unusable.
func TestStall(t *testing.T) {
	old := StallTimeout
	StallTimeout = 200e6
	defer func() { StallTimeout = old }()
	out, _, _ := run(t, "stall", `
A = init.fork()
init.wait4(A, 0) == EDEADLK
init.getpid() == EDEADLK
A.exit(2) == done
init.getpid() == init
init.wait4(A, 0) == A exited 2
`)
	// the reply to the stalled wait4 comes once A exits, and is dropped
	want := "3: init.wait4(A, 0) = EDEADLK\n4: init.getpid() = EDEADLK\n5: A.exit(2) = done\n6: init.getpid() = init\n7: init.wait4(A, 0) = ECHILD\n"
	if !strings.HasSuffix(out, want) {
		t.Errorf("got\n%s\nwant suffix\n%s", out, want)
	}
}

// SETALL with a list shorter than the set makes Linux read past the list: the agent ends the
// list at an inaccessible page, so the call fails with EFAULT every time instead of storing
// whatever lay after the list.
func TestSetallShortList(t *testing.T) {
	out, errs, status := run(t, "setall", `
S = init.semget(IPC_PRIVATE, 3, 0600)
init.semctl(S, 0, SETALL, [1 2]) == EFAULT
init.semctl(S, 0, SETALL) == EFAULT
init.semctl(S, 0, SETALL, 7) == EFAULT
init.semctl(S, 0, GETALL) == [0 0 0]
init.semctl(S, 0, SETALL, [1 2 3 4]) == 0
init.semctl(S, 0, GETALL) == [1 2 3]
`)
	if status != 0 || errs != "" {
		t.Errorf("status %d\nstdout:\n%s\nstderr:\n%s", status, out, errs)
	}
}
