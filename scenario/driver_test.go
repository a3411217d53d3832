package scenario

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
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

// checkRun compares what a run printed and its status with what is wanted.
func checkRun(t *testing.T, out, errOut string, status int, wantOut, wantErr string, wantStatus int) {
	t.Helper()
	if out != wantOut || errOut != wantErr || status != wantStatus {
		t.Errorf("status %d, want %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s",
			status, wantStatus, out, wantOut, errOut, wantErr)
	}
}

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
	checkRun(t, out, errOut, status, wantOut, wantErr, 1)
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
	checkRun(t, out, errOut, status, wantOut, wantErr, 1)
}

// TestRunSkippedCreation checks that a name whose creating statement was skipped (its actor or
// an argument named nothing) names nothing either, in the foreground and in the background,
// rather than the zero task, init.
func TestRunSkippedCreation(t *testing.T) {
	out, errOut, status, b := run(t, `A = init.fork()
A.setrlimit(RLIMIT_NPROC, 0) == 0
B = A.fork() == EAGAIN
C = B.fork()
C.getpid()
init.kill(C, 0)
D = C.fork() &
join C
D.getpid()
C.exit(0)
E = init.fork() &
join init
E.getpid() == E
init.getpid() == init
`)
	wantOut := lines(
		"1: A = init.fork() = A",
		"2: A.setrlimit(RLIMIT_NPROC, 0) = 0",
		"3: B = A.fork() = EAGAIN",
		"12: join init = E",
		"13: E.getpid() = E",
		"14: init.getpid() = init",
	)
	wantErr := lines(
		"t.scn:4:5: B names nothing: its fork on line 3 failed",
		"t.scn:5:1: C names nothing: its fork on line 4 did not run",
		"t.scn:6:11: C names nothing: its fork on line 4 did not run",
		"t.scn:7:5: C names nothing: its fork on line 4 did not run",
		"t.scn:8:6: join C: the background call on line 7 did not run",
		"t.scn:9:1: D names nothing: its fork on line 7 did not run",
		"t.scn:10:1: C names nothing: its fork on line 4 did not run",
	)
	checkRun(t, out, errOut, status, wantOut, wantErr, 1)
	wantLog := []string{"do 0 fork", "do 1 setrlimit", "do 1 fork", "start 0 fork", "join 0", "do 2 getpid", "do 0 getpid"}
	if strings.Join(b.log, ";") != strings.Join(wantLog, ";") {
		t.Errorf("backend calls %q, want %q", b.log, wantLog)
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

// givingUp is a backend that cannot tell what the call on line fatalLine did, at the step
// named by at: "do" (in the foreground), "start" or "join" (in the background).
type givingUp struct {
	*fakeBackend
	fatalLine int
	at        string
	fatal     map[TaskRef]bool // actor -> its background call is the one to give up on
}

var errGaveUp = errors.New("the runner gave up waiting")

func (b *givingUp) Do(actor TaskRef, c Call) Result {
	if c.Pos.Line == b.fatalLine && b.at == "do" {
		return Result{Kind: ResultFatal, Err: errGaveUp}
	}
	return b.fakeBackend.Do(actor, c)
}

func (b *givingUp) Start(actor TaskRef, c Call) error {
	if c.Pos.Line == b.fatalLine && b.at == "start" {
		return errGaveUp
	}
	b.fatal[actor] = c.Pos.Line == b.fatalLine && b.at == "join"
	return b.fakeBackend.Start(actor, c)
}

func (b *givingUp) Join(actor TaskRef) Result {
	if b.fatal[actor] {
		return Result{Kind: ResultFatal, Err: errGaveUp}
	}
	return b.fakeBackend.Join(actor)
}

// A call whose result the backend cannot tell stops the run with status 2 and FILE:LINE on
// stderr, and prints no result for it: in the foreground, at its start and at its join.
func TestRunStopsAtFatal(t *testing.T) {
	s, err := Parse("t.scn", []byte(`A = init.fork()
A.getpid() == A
B = A.fork() &
join A == B
init.getpid() == init
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		at        string
		line      int
		wantLines int
		wantErr   string
	}{
		{"do", 2, 1, "t.scn:2: the runner gave up waiting\n"},
		{"start", 3, 2, "t.scn:3: the runner gave up waiting\n"},
		{"join", 3, 2, "t.scn:4: the runner gave up waiting\n"},
	} {
		b := &givingUp{fakeBackend: newFakeBackend(), fatalLine: tc.line, at: tc.at, fatal: map[TaskRef]bool{}}
		var out, errOut bytes.Buffer
		status := Run(s, b, &out, &errOut)
		if status != 2 || errOut.String() != tc.wantErr || strings.Count(out.String(), "\n") != tc.wantLines {
			t.Errorf("%s: status %d, want 2\nstdout (want %d lines):\n%s\nstderr (want %q):\n%s",
				tc.at, status, tc.wantLines, out.String(), tc.wantErr, errOut.String())
		}
	}
}

// TestOutcomes checks the outcomes Run prints from: a background call has none until its join,
// which carries the call's name and both expectations; a skipped statement carries why; a
// fatal result ends the sequence.
func TestOutcomes(t *testing.T) {
	s, err := Parse("t.scn", []byte(`A = init.fork() == A
A.semop(1, {0, 0, 0}) & == 5
join A == 6
B = A.fork() == EAGAIN
A.setrlimit(RLIMIT_NPROC, 0)
C = A.fork()
C.getpid()
init.getpid()
init.getpid()
`))
	if err != nil {
		t.Fatal(err)
	}
	b := &givingUp{fakeBackend: newFakeBackend(), fatalLine: 8, at: "do", fatal: map[TaskRef]bool{}}
	got := slices.Collect(Outcomes(s, b))
	want := []Outcome{
		{File: "t.scn", Line: 1, Source: "A = init.fork()", Call: "fork", Text: "A",
			Result: Result{Kind: ResultNewTask, NewTask: 1, NewPid: 2}},
		{File: "t.scn", Line: 3, Source: "join A", Call: "semop", Text: "EINVAL",
			Result:     Result{Kind: ResultErrno, Errno: unix.EINVAL},
			Mismatches: []Mismatch{{Line: 2, Expect: "5"}, {Line: 3, Expect: "6"}}},
		{File: "t.scn", Line: 4, Source: "B = A.fork()", Call: "fork", Text: "B",
			Result:     Result{Kind: ResultNewTask, NewTask: 2, NewPid: 3},
			Mismatches: []Mismatch{{Line: 4, Expect: "EAGAIN"}}},
		{File: "t.scn", Line: 5, Source: "A.setrlimit(RLIMIT_NPROC, 0)", Call: "setrlimit", Text: "0",
			Result: Result{Kind: ResultInt}},
		{File: "t.scn", Line: 6, Source: "C = A.fork()", Call: "fork", Text: "EAGAIN",
			Result: Result{Kind: ResultErrno, Errno: unix.EAGAIN}},
		{File: "t.scn", Line: 7, Source: "C.getpid()", Call: "getpid",
			Skipped: &Error{File: "t.scn", Line: 7, Col: 1, Msg: "C names nothing: its fork on line 6 failed"}},
		{File: "t.scn", Line: 8, Source: "init.getpid()", Call: "getpid",
			Result: Result{Kind: ResultFatal, Err: errGaveUp}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("outcomes:\n%+v\nwant:\n%+v", got, want)
	}
	for i, wantStatus := range []int{0, 1, 1, 0, 0, 1, 2} {
		if st := got[i].Status(); st != wantStatus {
			t.Errorf("outcome of line %d: status %d, want %d", got[i].Line, st, wantStatus)
		}
	}
	if err := got[6].FatalError(); err == nil || err.Error() != "t.scn:8: the runner gave up waiting" {
		t.Errorf("FatalError = %v", err)
	}
}

// A task a background call makes can be named as soon as the backend says it exists (Made),
// before the join; results print its name only from the join on, as version 1 printed a
// number there. A pidfd prints as its bound name, and as "pidfd" when no name was bound to
// it; a limit as SOFT HARD.
func TestRunVersion2Names(t *testing.T) {
	out, errOut, status, _ := run(t, `A = init.fork()
V = A.vfork() &
V.getppid() == A
V.getpid() == 3
join A == V
V.getpid() == V
B, P = A.clone(CLONE_PIDFD|SIGCHLD) == B, P
A.clone(CLONE_PIDFD|SIGCHLD) == 5, pidfd
Q = A.pidfd_open(B, 0) == Q
A.pidfd_open(B, 0) == pidfd
A.close(P) == 0
A.getrlimit(RLIMIT_NOFILE) == 1024 unlimited
`)
	want := lines(
		"1: A = init.fork() = A",
		"3: V.getppid() = A",
		"4: V.getpid() = 3",
		"5: join A = V",
		"6: V.getpid() = V",
		"7: B, P = A.clone(CLONE_PIDFD|SIGCHLD) = B, P",
		"8: A.clone(CLONE_PIDFD|SIGCHLD) = 5, pidfd",
		"9: Q = A.pidfd_open(B, 0) = Q",
		"10: A.pidfd_open(B, 0) = pidfd",
		"11: A.close(P) = 0",
		"12: A.getrlimit(RLIMIT_NOFILE) = 1024 unlimited",
	)
	checkRun(t, out, errOut, status, want, "", 0)
}

// A task's name used before its background call has made the task is skipped, with the
// reason; from the join on it names the task.
func TestRunNameBeforeTaskExists(t *testing.T) {
	out, errOut, status, _ := run(t, `A = init.fork()
B = A.fork() &
B.getpid()
join A == B
B.getpid() == B
`)
	want := lines(
		"1: A = init.fork() = A",
		"4: join A = B",
		"5: B.getpid() = B",
	)
	checkRun(t, out, errOut, status, want, "t.scn:3:1: B names nothing: its fork on line 2 has made no task yet\n", 1)
}
