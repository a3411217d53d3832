package scenario

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"tasklist/internal/abi"
)

// specExample is the example of the contract, verbatim.
const specExample = `# an orphan goes to the nearest child subreaper, then to the namespace's init
A = init.fork()
A.prctl(PR_SET_CHILD_SUBREAPER, 1) == 0
B = A.fork()
C = B.fork()
B.exit(7) == done
C.getppid() == A
A.wait4(-1, WNOHANG) == B exited 7
A.exit(0) == done
C.getppid() == init
init.wait4(A, 0) == A exited 0
`

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"trailing token", "init.fork() extra", "t.scn:1:13: expected end of line, found extra"},
		{"missing dot", "init fork()", "t.scn:1:6: expected '.', found fork"},
		{"missing paren", "init.fork", "t.scn:1:10: expected '(', found end of line"},
		{"unclosed args", "init.exit(1", "t.scn:1:12: expected ',', found end of line"},
		{"missing comma", "init.wait4(1 0)", "t.scn:1:14: expected ',', found 0"},
		{"empty argument", "init.wait4(1,)", "t.scn:1:14: expected a number or constant, found ')'"},
		{"call name not a name", "init.(1)", "t.scn:1:6: expected a call name, found '('"},
		{"unexpected character", "init.fork() $", "t.scn:1:13: unexpected character '$'"},
		{"unexpected character column in characters", "init.exit(1) == é\ninit.exit(é)",
			"t.scn:2:11: unexpected character 'é'"},
		{"empty expectation", "init.fork() ==  # nothing", "t.scn:1:13: expected a result after =="},
		{"unknown call", "init.frok()", "t.scn:1:6: unknown call frok"},
		{"too few arguments", "init.wait4(1)", "t.scn:1:13: wait4 takes 2 arguments, got 1"},
		{"too many arguments", "init.getpid(1, 2)", "t.scn:1:13: getpid takes no arguments, got 2"},
		{"one argument", "init.exit()", "t.scn:1:11: exit takes 1 argument, got 0"},
		{"optional arguments", "init.ptrace(PTRACE_CONT, 2, 0)",
			"t.scn:1:30: ptrace takes 1, 2 or 4 arguments, got 3"},
		{"too many optional arguments", "init.clone(0, 0, 0)",
			"t.scn:1:18: clone takes 1 or 2 arguments, got 3"},
		{"no sembuf", "init.semop(1)", "t.scn:1:13: semop takes 2 or more arguments, got 1"},
		{"task for integer", "init.exit(init)", "t.scn:1:11: argument 1 of exit must be an integer, not task init"},
		{"negated task for integer", "init.kill(1, -init)",
			"t.scn:1:14: argument 2 of kill must be an integer, not task -init"},
		{"task for set", "init.semop(init, {0, 1, 0})",
			"t.scn:1:12: argument 1 of semop must be a semaphore set, not task init"},
		{"set for pid", "S = init.semget(0, 1, 0)\ninit.kill(S, 9)",
			"t.scn:2:11: argument 1 of kill must be a pid or task name, not semaphore set S"},
		{"negated set", "S = init.semget(0, 1, 0)\ninit.semctl(-S, 0, GETVAL)",
			"t.scn:2:13: argument 1 of semctl must be a semaphore set, not semaphore set -S"},
		{"integer for sembuf", "init.semop(1, 2)",
			"t.scn:1:15: argument 2 of semop must be a sembuf {NUM, OP, FLAGS}, not an integer"},
		{"sembuf for integer", "init.exit({0, 1, 0})",
			"t.scn:1:11: argument 1 of exit must be an integer, not a sembuf"},
		{"list for integer", "init.exit([1])", "t.scn:1:11: argument 1 of exit must be an integer, not a value list"},
		{"unknown constant", "init.wait4(-1, WNOHNAG)", "t.scn:1:16: unknown constant or unbound name WNOHNAG"},
		{"unbound name", "init.kill(FOO, 9)", "t.scn:1:11: unknown constant or unbound name FOO"},
		{"unbound name in expression", "init.wait4(1, WNOHANG|X)", "t.scn:1:23: unknown constant or unbound name X"},
		{"name in expression", "init.kill(init|1, 9)",
			"t.scn:1:11: init is a name, not a constant; only constants combine with |"},
		{"negated constant", "init.kill(1, -SIGKILL)", "t.scn:1:14: cannot negate constant SIGKILL"},
		{"leading zero decimal", "init.exit(09)", "t.scn:1:11: malformed number 09"},
		{"empty hex", "init.exit(0x)", "t.scn:1:11: malformed number 0x"},
		{"bad hex digit", "init.exit(0x1g)", "t.scn:1:11: malformed number 0x1g"},
		{"letters after digits", "init.exit(12ab)", "t.scn:1:11: malformed number 12ab"},
		{"overflow", "init.exit(9223372036854775808)", "t.scn:1:11: number 9223372036854775808 out of range"},
		{"overflow uint64", "init.exit(99999999999999999999)",
			"t.scn:1:11: number 99999999999999999999 out of range"},
		{"negative overflow", "init.exit(-9223372036854775809)",
			"t.scn:1:11: number -9223372036854775809 out of range"},
		{"sembuf too short", "init.semop(1, {0, 1})",
			"t.scn:1:15: malformed sembuf: it has 2 fields, not 3 {NUM, OP, FLAGS}"},
		{"sembuf too long", "init.semop(1, {0, 1, 0, 0})",
			"t.scn:1:15: malformed sembuf: it has 4 fields, not 3 {NUM, OP, FLAGS}"},
		{"sembuf without commas", "init.semop(1, {0 1 0})", "t.scn:1:18: expected ',', found 1"},
		{"sembuf unclosed", "init.semop(1, {0, 1, 0)", "t.scn:1:23: expected ',', found ')'"},
		{"list unclosed", "init.semctl(1, 0, SETALL, [1 2)",
			"t.scn:1:31: expected a number or constant, found ')'"},
		{"list with a name", "init.semctl(1, 0, SETALL, [1 init])",
			"t.scn:1:30: init is a name, not a constant; only constants combine with |"},
		{"unbound actor", "A.fork()", "t.scn:1:1: actor A is not bound"},
		{"constant actor", "SIGKILL.fork()", "t.scn:1:1: SIGKILL is a constant, not a task"},
		{"set actor", "S = init.semget(0, 1, 0)\nS.fork()", "t.scn:2:1: S is a semaphore set, not a task"},
		{"bound twice", "A = init.fork()\n\nA = init.fork()", "t.scn:3:1: A is already bound on line 1"},
		{"bound twice by set", "A = init.fork()\nA = init.semget(0, 1, 0)", "t.scn:2:1: A is already bound on line 1"},
		{"rebinding init", "init = init.fork()", "t.scn:1:1: init is predefined and cannot be rebound"},
		{"binding join", "join = init.fork()", "t.scn:1:1: join is a keyword and cannot be bound"},
		{"binding constant", "WALL = init.fork()", "t.scn:1:1: WALL is a constant and cannot be bound"},
		{"binding what creates nothing", "X = init.getpid()",
			"t.scn:1:10: getpid creates nothing to bind to X; only fork, vfork, clone, clone3, semget and pidfd_open do"},
		{"pidfd of a call that opens none", "A, P = init.fork()",
			"t.scn:1:13: fork opens no pidfd to bind to P; only clone and clone3 with CLONE_PIDFD do"},
		{"pidfd without CLONE_PIDFD", "A, P = init.clone(SIGCHLD)",
			"t.scn:1:19: clone opens no pidfd to bind to P without CLONE_PIDFD"},
		{"pidfd named twice", "A, A = init.clone(CLONE_PIDFD)", "t.scn:1:4: A is bound twice on this line"},
		{"pidfd binding not a name", "A, 3 = init.clone(CLONE_PIDFD)",
			"t.scn:1:4: expected a name for the pidfd, found 3"},
		{"pidfd binding without =", "A, P init.clone(CLONE_PIDFD)", "t.scn:1:6: expected '=', found init"},
		{"pidfd as actor", "P = init.pidfd_open(init, 0)\nP.getpid()", "t.scn:2:1: P is a pidfd, not a task"},
		{"pidfd as a pid", "P = init.pidfd_open(init, 0)\ninit.kill(P, 0)",
			"t.scn:2:11: argument 1 of kill must be a pid or task name, not pidfd P"},
		{"task as a pidfd", "A = init.fork()\ninit.close(A)", "t.scn:2:12: argument 1 of close must be a pidfd, not task A"},
		{"number as a pidfd", "init.poll(3)", "t.scn:1:11: argument 1 of poll must be a pidfd, not an integer"},
		{"negated pidfd", "P = init.pidfd_open(init, 0)\ninit.close(-P)", "t.scn:2:12: argument 1 of close must be a pidfd, not pidfd -P"},
		{"P_PIDFD with a task", "A = init.fork()\ninit.waitid(P_PIDFD, A, WEXITED)",
			"t.scn:2:22: argument 2 of waitid must be a pidfd after P_PIDFD"},
		{"P_PIDFD with a number", "init.waitid(P_PIDFD, 3, WEXITED)",
			"t.scn:1:22: argument 2 of waitid must be a pidfd after P_PIDFD"},
		{"pidfd with P_PID", "P = init.pidfd_open(init, 0)\ninit.waitid(P_PID, P, WEXITED)",
			"t.scn:2:20: argument 2 of waitid may be a pidfd only after P_PIDFD"},
		{"background pidfd used before join", "A = init.fork()\nB, P = A.clone(CLONE_PIDFD|CLONE_VFORK|SIGCHLD) &\ninit.close(P)",
			"t.scn:3:12: unknown constant or unbound name P before join A"},
		{"CLONE_INTO_CGROUP", "init.clone3(CLONE_INTO_CGROUP, SIGCHLD)",
			"t.scn:1:13: clone3: CLONE_INTO_CGROUP takes a cgroup descriptor, which the language cannot name"},
		{"clone3 with one argument", "init.clone3(0)", "t.scn:1:14: clone3 takes 2 or more arguments, got 1"},
		{"join with nothing", "join init", "t.scn:1:6: join init: nothing in the background"},
		{"join twice", "init.semop(1, {0, -1, 0}) &\njoin init\njoin init",
			"t.scn:3:6: join init: nothing in the background"},
		{"join unbound", "join A", "t.scn:1:6: actor A is not bound"},
		{"join without actor", "join", "t.scn:1:5: expected a task name, found end of line"},
		{"join trailing", "A = init.fork()\nA.semop(1, {0, -1, 0}) &\njoin A B",
			"t.scn:3:8: expected end of line, found B"},
		{"call while in background", "A = init.fork()\nA.semop(1, {0, -1, 0}) &\nA.getpid()",
			"t.scn:3:1: A has a call in the background since line 2; join A first"},
		{"background set used as argument", "A = init.fork()\nS = A.semget(IPC_PRIVATE, 1, 0) &\ninit.semctl(S, 0, GETVAL)",
			"t.scn:3:13: unknown constant or unbound name S before join A"},
		{"background set bound twice", "A = init.fork()\nS = A.semget(IPC_PRIVATE, 1, 0) &\nS = init.fork()",
			"t.scn:3:1: S is already bound by the background call of A on line 2"},
		{"background task bound twice", "A = init.fork()\nB = A.vfork() &\nB = init.fork()",
			"t.scn:3:1: B is already bound on line 2"},
		{"binding after error line", "A = init.fork()\nB = A.fork( # oops",
			"t.scn:2:13: expected a number or constant, found end of line"},
		{"first error wins", "init.frok()\ninit.bad()", "t.scn:1:6: unknown call frok"},
		{"crlf", "init.fork()\r\ninit.frok()\r\n", "t.scn:2:6: unknown call frok"},
		{"tab columns", "\tinit.frok()", "t.scn:1:7: unknown call frok"},
		{"invisible character after a bound name", "A\u00a0= init.fork()", "t.scn:1:2: unexpected character '\\u00a0'"},
		{"invisible character after an actor", "init\u00a0.fork()", "t.scn:1:5: unexpected character '\\u00a0'"},
		{"invisible character after join", "join\u200binit", "t.scn:1:5: unexpected character '\\u200b'"},
		{"invisible character after a minus", "init.kill(-\u00a0init, 9)", "t.scn:1:12: unexpected character '\\u00a0'"},
		{"byte-order mark", "\ufeffinit.frok()", "t.scn:1:6: unknown call frok"},
		{"byte-order mark inside", "init.getpid()\n\ufeffinit.getpid()", "t.scn:2:1: unexpected character '\\ufeff'"},
		{"long unbound name", "init.exit(" + strings.Repeat("ABCDE", 20) + ")",
			"t.scn:1:11: unknown constant or unbound name " + strings.Repeat("ABCDE", 8) + "…"},
		{"long actor", strings.Repeat("x", 41) + ".fork()", "t.scn:1:1: actor " + strings.Repeat("x", 40) + "… is not bound"},
		{"long call name", "init." + strings.Repeat("f", 1000) + "()", "t.scn:1:6: unknown call " + strings.Repeat("f", 40) + "…"},
		{"long number", "init.exit(" + strings.Repeat("9", 100) + ")",
			"t.scn:1:11: number " + strings.Repeat("9", 40) + "… out of range"},
		{"long malformed number", "init.exit(1" + strings.Repeat("a", 100) + ")",
			"t.scn:1:11: malformed number 1" + strings.Repeat("a", 39) + "…"},
		{"long trailing token", "init.fork() " + strings.Repeat("y", 41), "t.scn:1:13: expected end of line, found " + strings.Repeat("y", 40) + "…"},
		{"name of exactly the limit", "init.exit(" + strings.Repeat("z", 40) + ")",
			"t.scn:1:11: unknown constant or unbound name " + strings.Repeat("z", 40)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.scn", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse(%q) succeeded, want %q", tt.src, tt.want)
			}
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("Parse(%q) error %T, want *Error", tt.src, err)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse(%q)\n got %s\nwant %s", tt.src, err, tt.want)
			}
		})
	}
}

func TestParseGood(t *testing.T) {
	srcs := map[string]string{
		"spec example": specExample,
		"background": `S = init.semget(IPC_PRIVATE, 2, IPC_CREAT|0600)
A = init.fork()
A.semop(S, {0, -1, SEM_UNDO}, {1, 1, IPC_NOWAIT|SEM_UNDO}) &
init.semtimedop(S, 100, {0, 1, 0}) == 0
join A == 0
B = A.clone(CLONE_VFORK|SIGCHLD) &
join A == B
B.exit(0)
init.semctl(S, 0, SETALL, [1, 2]) == 0
init.semctl(S, 0, SETALL, [1 2]) == 0
init.semctl(S, 0, GETALL) == [1 2]
init.kill(-A, SIGKILL)
init.waitid(P_PID, A, WEXITED|__WALL) == A killed SIGKILL
`,
		"comments and blank lines":         "\n# only a comment\n   \ninit.getpid() # trailing\n\t\n",
		"empty":                            "",
		"expectation on a background call": "A = init.fork()\nA.kill(A, 0) & == 0\njoin A == 0\n",
		"version 2": `A = init.fork()
V = A.vfork() &
V.getppid() == A
init.kill(V, SIGKILL)
join A == V
B, P = A.clone(CLONE_PIDFD|SIGCHLD)
C, Q = A.clone3(CLONE_PIDFD, SIGCHLD, 5)
R = A.pidfd_open(B, PIDFD_NONBLOCK|PIDFD_THREAD)
A.pidfd_send_signal(P, SIGKILL, PIDFD_SIGNAL_PROCESS_GROUP)
A.waitid(P_PIDFD, R, WEXITED|WNOHANG)
A.poll(Q) == 1
A.close(Q)
A.prlimit(B, RLIMIT_CORE) == 0 unlimited
A.prlimit(0, RLIMIT_CORE, 1, RLIM_INFINITY)
A.getrlimit(RLIMIT_NOFILE)
`,
	}
	for name, src := range srcs {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse("t.scn", []byte(src)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// argValues parses a one-call script and returns its arguments.
func argValues(t *testing.T, src string) []arg {
	t.Helper()
	s, err := Parse("t.scn", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.stmts) != 1 {
		t.Fatalf("%d statements, want 1", len(s.stmts))
	}
	return s.stmts[0].args
}

func TestParseNumbersAndConstants(t *testing.T) {
	tests := []struct {
		expr string
		want int64
	}{
		{"0", 0},
		{"42", 42},
		{"-3", -3},
		{"0x1f", 31},
		{"0X1F", 31},
		{"0600", 0o600},
		{"-010", -8},
		{"00", 0},
		{"9223372036854775807", math.MaxInt64},
		{"-9223372036854775808", math.MinInt64},
		{"1|2|4", 7},
		{"CLONE_NEWPID|SIGCHLD", unix.CLONE_NEWPID | int64(unix.SIGCHLD)},
		{"CLONE_THREAD | CLONE_SIGHAND | CLONE_VM", unix.CLONE_THREAD | unix.CLONE_SIGHAND | unix.CLONE_VM},
		{"IPC_CREAT|0600", unix.IPC_CREAT | 0o600},
		{"__WALL", unix.WALL},
		{"WALL", unix.WALL},
		{"__WCLONE|WNOTHREAD", unix.WCLONE | unix.WNOTHREAD},
		{"SIGRTMIN", 32},
		{"SIGRTMAX", 64},
		{"SIGSYS", 31},
		{"SIGHUP", 1},
		{"SIGCLD", 17},
		{"RLIM_INFINITY", -1},
		{"HANDLER", Handler},
		{"SIG_IGN", 1},
		{"SEM_UNDO", 0x1000},
		{"SETALL", 17},
		{"SEM_STAT_ANY", 20},
		{"PTRACE_O_TRACEFORK|PTRACE_O_TRACESYSGOOD", 3},
		{"PTRACE_EVENT_STOP", 0x80},
		{"SA_RESETHAND", 0x80000000},
	}
	for _, tt := range tests {
		args := argValues(t, "init.exit("+tt.expr+")")
		if a := args[0]; a.form != formInt || a.val != tt.want {
			t.Errorf("%s = %+v, want %d", tt.expr, a, tt.want)
		}
	}
}

func TestParseArgumentForms(t *testing.T) {
	args := argValues(t, "init.semop(7, {0, -1, IPC_NOWAIT}, {1, 2, SEM_UNDO})")
	if len(args) != 2 || args[0].val != 7 || args[1].form != formSembufs {
		t.Fatalf("semop args = %+v", args)
	}
	want := []Sembuf{{0, -1, unix.IPC_NOWAIT}, {1, 2, abi.SEM_UNDO}}
	if got := args[1].sembufs; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("sembufs = %v, want %v", got, want)
	}
	args = argValues(t, "init.semctl(1, 0, SETALL, [1 -2, 0x3 GETVAL])")
	if l := args[3].list; args[3].form != formList || len(l) != 4 || l[1] != -2 || l[2] != 3 || l[3] != 12 {
		t.Errorf("list = %+v", args[3])
	}
	args = argValues(t, "init.kill(-init, SIGTERM)")
	if a := args[0]; a.form != formName || a.name != "init" || !a.neg {
		t.Errorf("-init = %+v", a)
	}
}

func TestParseSourceAndExpect(t *testing.T) {
	s, err := Parse("t.scn", []byte("  A = init.fork()   ==  A   # c\ninit.wait4( A , 0 ) # no expectation\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := []struct{ source, expect string }{
		{s.stmts[0].source, s.stmts[0].expect},
		{s.stmts[1].source, s.stmts[1].expect},
	}
	want := []struct{ source, expect string }{
		{"A = init.fork()", "A"},
		{"init.wait4( A , 0 )", ""},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("statement %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestParseLongLine parses one long statement, with a result to check at every token, and finds
// an error at its far end at the right column.
func TestParseLongLine(t *testing.T) {
	const n = 200000
	var src strings.Builder
	src.WriteString("init.semctl(1, 0, SETALL, [")
	for i := range n {
		fmt.Fprintf(&src, "%d ", i)
	}
	src.WriteString("]) == [0 1 2 …]  # ünïcode ")
	args := argValues(t, src.String())
	list := args[3].list
	if len(list) != n {
		t.Fatalf("the list has %d values, want %d", len(list), n)
	}
	for i, v := range list {
		if v != int64(i) {
			t.Fatalf("value %d is %d", i, v)
		}
	}
	line := src.String()
	bad := line[:strings.Index(line, "]")] + "$])"
	_, err := Parse("t.scn", []byte("init.getpid()\n"+bad))
	want := fmt.Sprintf("t.scn:2:%d: unexpected character '$'", len(bad)-2)
	if err == nil || err.Error() != want {
		t.Errorf("got error %v, want %s", err, want)
	}
	bad = strings.Replace(line, "[0 1 2 …]", "[0 1 2 …] é ==", 1) + "\x00"
	s, err := Parse("t.scn", []byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.stmts[0].expect; got != "[0 1 2 …] é ==" {
		t.Errorf("expectation %q", got)
	}
}
