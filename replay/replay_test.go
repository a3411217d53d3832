package replay

import (
	"strings"
	"testing"
)

// replayText replays a trace written in the test.
func replayText(t *testing.T, src string) *Summary {
	t.Helper()
	h, events, err := Parse("t.strace", strings.NewReader(strings.TrimLeft(src, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Replay("t.strace", h, events, Options{Explain: 3})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wantCounts checks a summary's counts and that nothing diverged unless expected.
func wantCounts(t *testing.T, s *Summary, calls, compared, divergences int) {
	t.Helper()
	if s.Calls != calls || s.Compared != compared || len(s.Divergences) != divergences {
		t.Errorf("calls %d compared %d divergences %v outside %v unsupported %v, want %d %d %d",
			s.Calls, s.Compared, s.Divergences, s.Outside, s.Unsupported, calls, compared, divergences)
	}
}

// A vfork child's lines come before its parent's vfork returns; its exec lets the parent
// go on, and the parent's wait reports it by identity.
func TestVforkChildBeforeReturn(t *testing.T) {
	s := replayText(t, `
10 vfork( <unfinished ...>
11 getppid() = 10
11 execve("/bin/true", ["true"], 0x1 /* 1 var */ <unfinished ...>
10 <... vfork resumed>) = 11
11 <... execve resumed>) = 0
10 wait4(-1,  <unfinished ...>
11 exit_group(3) = ?
11 +++ exited with 3 +++
10 <... wait4 resumed>[{WIFEXITED(s) && WEXITSTATUS(s) == 3}], 0, NULL) = 11
10 getppid() = 4
10 exit_group(0) = ?
10 +++ exited with 0 +++
`)
	wantCounts(t, s, 7, 7, 0)
	if s.EndsChecked != 2 || s.EndsAgree != 2 {
		t.Errorf("ends %d/%d", s.EndsAgree, s.EndsChecked)
	}
}

// A wrong result is a divergence that puts its task out of step.
func TestDivergencePutsTaskOutOfStep(t *testing.T) {
	s := replayText(t, `
10 fork() = 11
11 getppid() = 12
11 getpid() = 11
11 exit_group(0) = ?
11 +++ exited with 0 +++
10 wait4(11, [{WIFEXITED(s) && WEXITSTATUS(s) == 0}], 0, NULL) = 11
`)
	wantCounts(t, s, 5, 3, 1)
	if s.NotCompared != 2 || s.Divergences[0].Line != 2 || s.Divergences[0].ModelResult != "10" {
		t.Errorf("%+v", s)
	}
}

// A tid used again is a new task: the second fork's result names it, not the reaped one.
func TestPidReuse(t *testing.T) {
	s := replayText(t, `
10 fork() = 11
11 exit_group(1) = ?
11 +++ exited with 1 +++
10 wait4(11, [{WIFEXITED(s) && WEXITSTATUS(s) == 1}], 0, NULL) = 11
10 fork() = 11
11 getpid() = 11
11 exit_group(2) = ?
11 +++ exited with 2 +++
10 wait4(-1, [{WIFEXITED(s) && WEXITSTATUS(s) == 2}], 0, NULL) = 11
`)
	wantCounts(t, s, 7, 7, 0)
}

// A kill's stop is made on the model at the kill; the target's call before its signal line
// is not made, and the wait sees the stop.
func TestCallBeforeSignalLine(t *testing.T) {
	s := replayText(t, `
10 fork() = 11
10 kill(11, 19 /* SIGSTOP */) = 0
11 gettid() = 11
10 wait4(11,  <unfinished ...>
11 --- SIGSTOP {si_signo=19 /* SIGSTOP */, si_code=0 /* SI_USER */, si_pid=10, si_uid=0} ---
11 --- stopped by SIGSTOP ---
10 <... wait4 resumed>[{WIFSTOPPED(s) && WSTOPSIG(s) == SIGSTOP}], 0x2 /* WSTOPPED */, NULL) = 11
10 kill(11, 9 /* SIGKILL */) = 0
11 +++ killed by SIGKILL +++
10 wait4(11, [{WIFSIGNALED(s) && WTERMSIG(s) == SIGKILL}], 0, NULL) = 11
`)
	wantCounts(t, s, 6, 5, 0)
	if s.Outside[signalRace] != 1 || s.injected != 0 {
		t.Errorf("outside %v, %d injected", s.Outside, s.injected)
	}
}

// A WNOHANG wait that found nothing before its child's +++ line is not made: the model
// completed the exit at once.
func TestWaitBeforeExitCompletes(t *testing.T) {
	s := replayText(t, `
10 fork() = 11
11 exit_group(0 <unfinished ...>
10 wait4(11, 0x7ffd, 0x1 /* WNOHANG */, NULL) = 0
11 <... exit_group resumed>) = ?
11 +++ exited with 0 +++
10 wait4(11, [{WIFEXITED(s) && WEXITSTATUS(s) == 0}], 0x1 /* WNOHANG */, NULL) = 11
`)
	wantCounts(t, s, 4, 3, 0)
	if s.Outside[raceReason] != 1 {
		t.Errorf("outside %v", s.Outside)
	}
}

// A wait interrupted by a signal and restarted is one call, compared when it completes; a
// signal from outside the trace is injected by init.
func TestRestartedWait(t *testing.T) {
	s := replayText(t, `
10 rt_sigaction(10 /* SIGUSR1 */, {sa_handler=0x5555, sa_mask=[], sa_flags=0x14000000 /* SA_RESTORER|SA_RESTART */, sa_restorer=0x7f}, NULL, 8) = 0
10 fork() = 11
10 wait4(11,  <unfinished ...>
10 <... wait4 resumed>0x7ffd, 0, NULL) = ? ERESTARTSYS (To be restarted if SA_RESTART is set)
10 --- SIGUSR1 {si_signo=10 /* SIGUSR1 */, si_code=0 /* SI_USER */, si_pid=99, si_uid=0} ---
10 rt_sigreturn({mask=[]}) = 61
10 wait4(11,  <unfinished ...>
11 exit_group(0) = ?
11 +++ exited with 0 +++
10 <... wait4 resumed>[{WIFEXITED(s) && WEXITSTATUS(s) == 0}], 0, NULL) = 11
`)
	wantCounts(t, s, 5, 4, 0)
	if s.injected != 1 {
		t.Errorf("%d signals injected", s.injected)
	}
}

// Pids in another pid namespace are read through strace's translations and the clones
// that made the tasks there.
func TestPidNamespace(t *testing.T) {
	s := replayText(t, `
10 unshare(0x20000000 /* CLONE_NEWPID */) = 0
10 fork() = 11
11 getpid() = 1 /* 11 in strace's PID NS */
11 getppid() = 0
11 fork() = 2 /* 12 in strace's PID NS */
12 exit_group(0) = ?
12 +++ exited with 0 +++
11 wait4(-1, [{WIFEXITED(s) && WEXITSTATUS(s) == 0}], 0, NULL) = 2
11 exit_group(0) = ?
11 +++ exited with 0 +++
10 wait4(-1, [{WIFEXITED(s) && WEXITSTATUS(s) == 0}], 0, NULL) = 11
`)
	wantCounts(t, s, 9, 9, 0)
}

// The old action of rt_sigaction compares by kind and flags, a query too; a header's nice
// value is the root's.
func TestSigactionAndHeader(t *testing.T) {
	s := replayText(t, `
# tasklist trace: "x"
# nice: 5
10 rt_sigaction(2 /* SIGINT */, {sa_handler=0x1 /* SIG_IGN */, sa_mask=[], sa_flags=0x4000000 /* SA_RESTORER */, sa_restorer=0x7f}, {sa_handler=0 /* SIG_DFL */, sa_mask=[], sa_flags=0}, 8) = 0
10 rt_sigaction(2 /* SIGINT */, NULL, {sa_handler=0x1 /* SIG_IGN */, sa_mask=[], sa_flags=0x4000000 /* SA_RESTORER */, sa_restorer=0x7f}, 8) = 0
10 rt_sigaction(9 /* SIGKILL */, {sa_handler=0x1 /* SIG_IGN */, sa_mask=[], sa_flags=0}, 0x7ffd, 8) = -1 EINVAL (Invalid argument)
10 getpriority(PRIO_PROCESS, 0) = 15
10 rt_sigaction(2 /* SIGINT */, NULL, {sa_handler=0 /* SIG_DFL */, sa_mask=[], sa_flags=0}, 8) = 0
`)
	wantCounts(t, s, 5, 5, 1)
	if d := s.Divergences[0]; d.Line != 7 || d.TraceResult != "SIG_DFL flags 0x0" || d.ModelResult != "SIG_IGN flags 0x4000000" {
		t.Errorf("%+v", d)
	}
}

// Pidfds are named by the trace's numbers in each task's table: pidfd_open's result and
// CLONE_PIDFD's parent_tid bind them; a child has its parent's; exec closes them; a number
// no pidfd of the task's has is outside the replay. prlimit64 of another task is prlimit.
func TestPidfdsByNumber(t *testing.T) {
	s := replayText(t, `
10 fork() = 11
10 pidfd_open(11, 0) = 5
10 clone(child_stack=NULL, flags=CLONE_PIDFD|SIGCHLD, parent_tid=[6]) = 12
12 pidfd_send_signal(5, 0, NULL, 0) = 0
12 pidfd_send_signal(6, 0, NULL, 0) = -1 EBADF (Bad file descriptor)
10 pidfd_send_signal(5, 0, NULL, 0x4 /* PIDFD_SIGNAL_PROCESS_GROUP */) = -1 ESRCH (No such process)
10 prlimit64(11, RLIMIT_CORE, {rlim_cur=0, rlim_max=1000}, {rlim_cur=0, rlim_max=RLIM64_INFINITY}) = 0
11 prlimit64(0, RLIMIT_CORE, NULL, {rlim_cur=0, rlim_max=1000}) = 0
10 prlimit64(12, RLIMIT_CORE, NULL, NULL) = 0
11 exit_group(4) = ?
11 +++ exited with 4 +++
10 waitid(P_PIDFD, 5, {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=11, si_uid=0, si_status=4, si_utime=0, si_stime=0}, WEXITED, NULL) = 0
12 execve("/bin/true", ["true"], 0x1 /* 1 var */) = 0
12 pidfd_send_signal(5, 0, NULL, 0) = -1 EBADF (Bad file descriptor)
`)
	wantCounts(t, s, 13, 11, 0)
	if s.Outside["a descriptor the trace did not open as a pidfd"] != 2 {
		t.Errorf("outside %v", s.Outside)
	}
}
