package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseLines(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Event
	}{
		{`13574 1796229749.846932 setpgid(13575, 13575) = 0 <0.000050>`,
			Event{Tid: 13574, Kind: KindCall, Name: "setpgid", Args: "13575, 13575", Result: Result{Value: 0}}},
		{`13574 1796229749.847575 clone(child_stack=NULL, flags=0x1200000 /* CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID */|17 /* SIGCHLD */ <unfinished ...>`,
			Event{Tid: 13574, Kind: KindUnfinished, Name: "clone", Args: "child_stack=NULL, flags=0x1200000 /* CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID */|17 /* SIGCHLD */"}},
		{`25405 1796229934.140651 <... clone resumed>, child_tidptr=0x7f9aa93b8a10) = 2 /* 25446 in strace's PID NS */ <0.000330>`,
			Event{Tid: 25405, Kind: KindResumed, Name: "clone", Args: ", child_tidptr=0x7f9aa93b8a10", Result: Result{Value: 2, StraceValue: 25446}}},
		{`25405 1796229934.161525 <... rt_sigsuspend resumed>) = ? ERESTARTNOHAND (To be restarted if no handler) <0.010841>`,
			Event{Tid: 25405, Kind: KindResumed, Name: "rt_sigsuspend", Result: Result{Unknown: true, Errno: "ERESTARTNOHAND"}}},
		{`25405 1796229934.051817 execve("/usr/local/go/bin/sh", ["sh", "-c", "a ) = 0"], 0x7fffd1b91a30 /* 35 vars */) = -1 ENOENT (No such file or directory) <0.000010>`,
			Event{Tid: 25405, Kind: KindCall, Name: "execve", Args: `"/usr/local/go/bin/sh", ["sh", "-c", "a ) = 0"], 0x7fffd1b91a30 /* 35 vars */`, Result: Result{Value: -1, Errno: "ENOENT"}}},
		{`25296 1796229933.744187 --- SIGCHLD {si_signo=17 /* SIGCHLD */, si_code=0x1 /* CLD_EXITED */, si_pid=25301} ---`,
			Event{Tid: 25296, Kind: KindSignal, Name: "SIGCHLD", Status: 17, Info: "si_signo=17 /* SIGCHLD */, si_code=0x1 /* CLD_EXITED */, si_pid=25301"}},
		{`25333 1796229933.897835 +++ superseded by execve in pid 25334 +++`,
			Event{Tid: 25333, Kind: KindSuperseded, Status: 25334}},
		{`25334 1796229933.895574 execve("/bin/true", ["true"], 0x7ffca8f1b938 /* 35 vars */ <pid changed to 25333 ...>`,
			Event{Tid: 25334, Kind: KindUnfinished, Name: "execve", Args: `"/bin/true", ["true"], 0x7ffca8f1b938 /* 35 vars */`, PidChanged: true}},
		{`25480 1796229934.407857 +++ killed by SIGTERM +++`, Event{Tid: 25480, Kind: KindKilled, Name: "SIGTERM", Status: 15}},
		{`7 +++ killed by SIGSEGV (core dumped) +++`, Event{Tid: 7, Kind: KindKilled, Name: "SIGSEGV", Status: 11, Core: true}},
		{`[pid   123] 12:00:01.123456 --- stopped by SIGTSTP ---`, Event{Tid: 123, Kind: KindStopped, Name: "SIGTSTP", Status: 20}},
		{`getpid() = 42`, Event{Kind: KindCall, Name: "getpid", Result: Result{Value: 42}}},
		{`1796229934.1 exit_group(0)   = ?`, Event{Kind: KindCall, Name: "exit_group", Args: "0", Result: Result{Unknown: true}}},
		{`9 +++ exited with 124 +++`, Event{Tid: 9, Kind: KindExited, Status: 124}},
	} {
		got, err := ParseLine(tc.line)
		if err != nil {
			t.Errorf("%s: %v", tc.line, err)
			continue
		}
		tc.want.Text = tc.line
		if got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.line, got, tc.want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, line := range []string{
		"hello world",
		"12 getpid(",
		"12 --- SIGFOO {} ---",
		"12 +++ exited with x +++",
		"12 <... wait4 resumed",
		"12 kill(1, 2) = -1",
		"12 +++ something else +++",
	} {
		if _, err := ParseLine(line); err == nil {
			t.Errorf("%q parsed", line)
		}
	}
	_, _, err := Parse("t.strace", strings.NewReader("1 getpid() = 1\n\nbad line\n"))
	if err == nil || err.Error() != "t.strace:3: not a line of strace's output" {
		t.Errorf("error %v", err)
	}
}

// Every recorded trace parses.
func TestParseRecorded(t *testing.T) {
	files, _ := filepath.Glob("../testdata/traces/*.strace")
	if len(files) == 0 {
		t.Fatal("no traces")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h, events, err := Parse(f, strings.NewReader(string(data)))
		if err != nil {
			t.Error(err)
			continue
		}
		if h.Nice == nil || h.UIDs == nil || len(h.Limits) != len(rlimitNames) || len(events) == 0 {
			t.Errorf("%s: header %+v, %d events", f, h, len(events))
		}
	}
}
