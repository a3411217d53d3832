package scenario

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// run parses src as t.scn and runs it on a fresh fake backend.
func run(t *testing.T, src string) (stdout, stderr string, status int, b *fakeBackend) {
	t.Helper()
	s, err := Parse("t.scn", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	b = newFakeBackend()
	var out, errOut bytes.Buffer
	status = Run(s, b, &out, &errOut)
	return out.String(), errOut.String(), status, b
}

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

func TestRunNamesPids(t *testing.T) {
	out, errOut, status, _ := run(t, `A = init.fork() == A
B = A.fork()
init.fork()
B.getppid() == A
B.exit(7) == done
A.wait4(-1, 0) == B exited 7
A.wait4(B, WNOHANG) == ECHILD
init.kill(B, SIGKILL) == ESRCH
init.kill(-A, 0) == ESRCH
init.kill(A, SIGKILL) == 0
init.wait4(A, 0) ==   A   killed   SIGKILL
N = init.clone(CLONE_NEWPID|SIGCHLD) == N
M = N.fork()
N.getpid() == N
M.getppid() == N
N.getppid() == 0
init.getpid()
`)
	want := lines(
		"1: A = init.fork() = A",
		"2: B = A.fork() = B",
		"3: init.fork() = 4",
		"4: B.getppid() = A",
		"5: B.exit(7) = done",
		"6: A.wait4(-1, 0) = B exited 7",
		"7: A.wait4(B, WNOHANG) = ECHILD",
		"8: init.kill(B, SIGKILL) = ESRCH",
		"9: init.kill(-A, 0) = ESRCH",
		"10: init.kill(A, SIGKILL) = 0",
		"11: init.wait4(A, 0) = A killed SIGKILL",
		"12: N = init.clone(CLONE_NEWPID|SIGCHLD) = N",
		"13: M = N.fork() = M",
		"14: N.getpid() = N",
		"15: M.getppid() = N",
		"16: N.getppid() = 0",
		"17: init.getpid() = init",
	)
	if out != want || errOut != "" || status != 0 {
		t.Errorf("status %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", status, out, want, errOut)
	}
}

func TestRunBackgroundAndSets(t *testing.T) {
	out, errOut, status, b := run(t, `S = init.semget(IPC_PRIVATE, 1, IPC_CREAT|0600) == S
A = init.fork()
A.semop(S, {0, -1, 0}) &
init.semop(S, {0, 1, 0}) == 0
join A == 0
init.semctl(S, 0, GETPID) == A
B = A.fork() &
join A == B
B.getppid() == A
init.semget(IPC_PRIVATE, 1, 0) == 101
T = init.semget(5, 2, IPC_CREAT)
U = init.semget(5, 2, 0) == U
init.semget(5, 2, 0) == U
init.semctl(T, 0, SETALL, [3 4]) == 0
init.semctl(U, 0, GETALL) == [3   4]
init.semctl(100, 0, GETALL) == [0]
`)
	want := lines(
		"1: S = init.semget(IPC_PRIVATE, 1, IPC_CREAT|0600) = S",
		"2: A = init.fork() = A",
		"4: init.semop(S, {0, 1, 0}) = 0",
		"5: join A = 0",
		"6: init.semctl(S, 0, GETPID) = A",
		"8: join A = B",
		"9: B.getppid() = A",
		"10: init.semget(IPC_PRIVATE, 1, 0) = 101",
		"11: T = init.semget(5, 2, IPC_CREAT) = T",
		"12: U = init.semget(5, 2, 0) = U",
		"13: init.semget(5, 2, 0) = U",
		"14: init.semctl(T, 0, SETALL, [3 4]) = 0",
		"15: init.semctl(U, 0, GETALL) = [3 4]",
		"16: init.semctl(100, 0, GETALL) = [0]",
	)
	if out != want || errOut != "" || status != 0 {
		t.Errorf("status %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", status, out, want, errOut)
	}
	wantLog := []string{"do 0 semget", "do 0 fork", "start 1 semop", "do 0 semop", "join 1"}
	if got := b.log[:len(wantLog)]; strings.Join(got, ";") != strings.Join(wantLog, ";") {
		t.Errorf("backend calls %q, want %q", got, wantLog)
	}
}

func TestRunExpectationFailures(t *testing.T) {
	out, errOut, status, _ := run(t, `A = init.fork() == B
A.getpid() == A
A.semop(1, {0, 0, 0}) & == 5
join A == EINVAL
join_ = A.fork() == join_
`)
	wantOut := lines(
		"1: A = init.fork() = A",
		"2: A.getpid() = A",
		"4: join A = EINVAL",
		"5: join_ = A.fork() = join_",
	)
	wantErr := lines(
		"t.scn:1: expected B, got A",
		"t.scn:3: expected 5, got EINVAL",
	)
	if out != wantOut || errOut != wantErr || status != 1 {
		t.Errorf("status %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s", status, out, wantOut, errOut, wantErr)
	}
}

func TestRunFailedCreation(t *testing.T) {
	out, errOut, status, _ := run(t, `A = init.fork()
A.setrlimit(RLIMIT_NPROC, 0) == 0
B = A.fork() == EAGAIN
B.getpid()
init.kill(B, 0)
B.exit(0) &
join B
A.getpid() == A
`)
	wantOut := lines(
		"1: A = init.fork() = A",
		"2: A.setrlimit(RLIMIT_NPROC, 0) = 0",
		"3: B = A.fork() = EAGAIN",
		"8: A.getpid() = A",
	)
	wantErr := lines(
		"t.scn:4:1: B names nothing: its fork on line 3 failed",
		"t.scn:5:11: B names nothing: its fork on line 3 failed",
		"t.scn:6:1: B names nothing: its fork on line 3 failed",
		"t.scn:7:6: join B: the background call on line 6 did not run",
	)
	if out != wantOut || errOut != wantErr || status != 1 {
		t.Errorf("status %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s", status, out, wantOut, errOut, wantErr)
	}
}

// A name bound by a statement that was skipped, because a name it uses names nothing, names
// nothing too: it must not stand for init, whose zero reference it would otherwise have.
func TestRunSkippedCreation(t *testing.T) {
	out, errOut, status, _ := run(t, `A = init.fork()
A.setrlimit(RLIMIT_NPROC, 0) == 0
B = A.fork() == EAGAIN
C = B.fork()
C.getpid()
D = C.fork() &
join C
D.getpid()
init.getpid() == init
`)
	wantOut := lines(
		"1: A = init.fork() = A",
		"2: A.setrlimit(RLIMIT_NPROC, 0) = 0",
		"3: B = A.fork() = EAGAIN",
		"9: init.getpid() = init",
	)
	wantErr := lines(
		"t.scn:4:5: B names nothing: its fork on line 3 failed",
		"t.scn:5:1: C names nothing: its fork on line 4 failed",
		"t.scn:6:5: C names nothing: its fork on line 4 failed",
		"t.scn:7:6: join C: the background call on line 6 did not run",
		"t.scn:8:1: D names nothing: its fork on line 6 failed",
	)
	if out != wantOut || errOut != wantErr || status != 1 {
		t.Errorf("status %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s", status, out, wantOut, errOut, wantErr)
	}
}

func TestFormat(t *testing.T) {
	b := newFakeBackend()
	child := b.newTask(Init, false) // pid 2
	r := &runner{b: b, tasks: []named{{"init", 0}, {"C", int(child)}}, sets: []named{{"S", 0}}}
	tests := []struct {
		res  Result
		want string
	}{
		{Result{Kind: ResultDone}, "done"},
		{Result{Kind: ResultInt, Int: -20}, "-20"},
		{Result{Kind: ResultPid, Pid: 0}, "0"},
		{Result{Kind: ResultPid, Pid: 1}, "init"},
		{Result{Kind: ResultPid, Pid: 2}, "C"},
		{Result{Kind: ResultPid, Pid: 77}, "77"},
		{Result{Kind: ResultNewTask, NewTask: child, NewPid: 2}, "C"},
		{Result{Kind: ResultWait, WaitPid: 2, How: Exited, Code: 0}, "C exited 0"},
		{Result{Kind: ResultWait, WaitPid: 2, How: Killed, Code: 9}, "C killed SIGKILL"},
		{Result{Kind: ResultWait, WaitPid: 2, How: Dumped, Code: 11}, "C dumped SIGSEGV"},
		{Result{Kind: ResultWait, WaitPid: 2, How: Stopped, Code: 19}, "C stopped SIGSTOP"},
		{Result{Kind: ResultWait, WaitPid: 2, How: Trapped, Code: 5}, "C trapped SIGTRAP"},
		{Result{Kind: ResultWait, WaitPid: 2, How: Trapped, Code: 5 | 0x80}, "C trapped SIGTRAP|0x80"},
		{Result{Kind: ResultWait, WaitPid: 2, How: Trapped, Code: 5 | unix.PTRACE_EVENT_FORK<<8},
			"C trapped SIGTRAP|PTRACE_EVENT_FORK<<8"},
		{Result{Kind: ResultWait, WaitPid: 2, How: Stopped, Code: 5 | unix.PTRACE_EVENT_STOP<<8},
			"C stopped SIGTRAP|PTRACE_EVENT_STOP<<8"},
		{Result{Kind: ResultWait, WaitPid: 2, How: Continued, Code: 18}, "C continued"},
		{Result{Kind: ResultWait, WaitPid: 9, How: Killed, Code: 35}, "9 killed SIGRTMIN+3"},
		{Result{Kind: ResultWait, WaitPid: 2, How: Killed, Code: 64}, "C killed SIGRTMAX"},
		{Result{Kind: ResultWait, WaitPid: 2, How: Killed, Code: 32}, "C killed SIGRTMIN"},
		{Result{Kind: ResultList, List: []int64{}}, "[]"},
		{Result{Kind: ResultList, List: []int64{1, -2, 3}}, "[1 -2 3]"},
		{Result{Kind: ResultNewSet, NewSet: 0, SetID: 7}, "S"},
		{Result{Kind: ResultNewSet, NewSet: 1, SetID: 32768}, "32768"},
		{Result{Kind: ResultErrno, Errno: unix.ESRCH}, "ESRCH"},
		{Result{Kind: ResultErrno, Errno: unix.EAGAIN}, "EAGAIN"},
		{Result{Kind: ResultErrno, Errno: 4000}, "errno 4000"},
		{Result{}, "invalid result kind 0"},
	}
	for _, tt := range tests {
		if got := r.format(Init, tt.res); got != tt.want {
			t.Errorf("format(%+v) = %q, want %q", tt.res, got, tt.want)
		}
	}
}

func TestValuePid(t *testing.T) {
	b := newFakeBackend()
	ns := b.newTask(Init, true) // pid 2 in the root namespace, 1 in its own
	tests := []struct {
		v      Value
		caller TaskRef
		want   int
	}{
		{Value{Kind: ValueInt, Int: -1}, Init, -1},
		{Value{Kind: ValueTask, Task: ns}, Init, 2},
		{Value{Kind: ValueTask, Task: ns, Neg: true}, Init, -2},
		{Value{Kind: ValueTask, Task: ns}, ns, 1},
		{Value{Kind: ValueTask, Task: Init, Neg: true}, ns, 0},
	}
	for _, tt := range tests {
		if got := tt.v.Pid(b, tt.caller); got != tt.want {
			t.Errorf("%+v.Pid(caller %d) = %d, want %d", tt.v, tt.caller, got, tt.want)
		}
	}
}

type closeFailer struct{ *fakeBackend }

func (closeFailer) Close() error { return errors.New("leftover tasks") }

func TestRunFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.scn", "A = init.fork() == A\n")
	bad := write("bad.scn", "A = init.fork()\nA.frok()\n")
	failing := write("failing.scn", "A = init.fork() == B\n")
	var fb *fakeBackend
	newFake := func() (Backend, error) { fb = newFakeBackend(); return fb, nil }
	tests := []struct {
		name       string
		path       string
		newBackend func() (Backend, error)
		status     int
		out, err   string
	}{
		{"good", good, newFake, 0, "1: A = init.fork() = A\n", ""},
		{"expectation fails", failing, newFake, 1, "1: A = init.fork() = A\n", failing + ":1: expected B, got A\n"},
		{"parse error", bad, newFake, 2, "", bad + ":2:3: unknown call frok\n"},
		{"no backend", good, func() (Backend, error) { return nil, errors.New("no namespaces") }, 2, "",
			good + ": cannot run: no namespaces\n"},
		{"close fails", good, func() (Backend, error) { return closeFailer{newFakeBackend()}, nil }, 2,
			"1: A = init.fork() = A\n", good + ": leftover tasks\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb = nil
			var out, errOut bytes.Buffer
			status := RunFile(tt.path, tt.newBackend, &out, &errOut)
			if status != tt.status || out.String() != tt.out || errOut.String() != tt.err {
				t.Errorf("status %d, stdout %q, stderr %q; want %d, %q, %q",
					status, out.String(), errOut.String(), tt.status, tt.out, tt.err)
			}
			if fb != nil && !fb.closed {
				t.Error("backend not closed")
			}
		})
	}
	var errOut bytes.Buffer
	if status := RunFile(filepath.Join(dir, "missing.scn"), newFake, &bytes.Buffer{}, &errOut); status != 2 ||
		strings.Count(errOut.String(), "\n") != 1 || !strings.Contains(errOut.String(), "missing.scn") {
		t.Errorf("missing file: status %d, stderr %q", status, errOut.String())
	}
}
