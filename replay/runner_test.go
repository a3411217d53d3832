package replay

import (
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"tasklist/kernel"
	"tasklist/lockstat"
	"tasklist/plan"
)

// compileText compiles a trace written in the test.
func compileText(t *testing.T, src string) (*Program, error) {
	t.Helper()
	h, events, err := Parse("t.strace", strings.NewReader(strings.TrimLeft(src, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return Compile("t.strace", h, events)
}

// newWorker returns a kernel under plan p (nil: tasklist's own) and n worker processes.
func newWorkers(t *testing.T, p *plan.Plan, n int) (*kernel.Kernel, []*kernel.Task) {
	t.Helper()
	k, err := kernel.New(kernel.Config{Plan: p})
	if err != nil {
		t.Fatal(err)
	}
	var ws []*kernel.Task
	for range n {
		w, err := k.Init().Fork()
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	return k, ws
}

// checkClean checks that k holds nothing but its init and workers, consistently.
func checkClean(t *testing.T, k *kernel.Kernel, workers int) {
	t.Helper()
	k.Quiesce()
	if err := k.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if n := k.RootNamespace().Allocated(); n != 1+workers {
		t.Fatalf("%d pids in use after the passes, want %d: a pass left tasks behind", n, 1+workers)
	}
}

// Every recorded trace becomes a program that makes each call its replay made on the model:
// the trace's calls less those outside the model's scope and those it lacks. Two runners
// sharing one model, under tasklist's own design and under linux-2.6.35's table lock, pass
// after pass, get from every call what the replay's model returned, and leave nothing
// behind.
func TestPassesAgreeWithTheReplay(t *testing.T) {
	defer lockstat.SetChecking(lockstat.SetChecking(false)) // some 30,000 calls
	files, err := filepath.Glob("../testdata/traces/*.strace")
	if err != nil || len(files) == 0 {
		t.Fatalf("no traces: %v", err)
	}
	bigLock, err := plan.Parse("linux-2.6.35", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".strace"), func(t *testing.T) {
			p, err := CompileFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s, err := ReplayFile(file, Options{})
			if err != nil {
				t.Fatal(err)
			}
			made := s.Calls
			for _, n := range s.Outside {
				made -= n
			}
			for _, n := range s.Unsupported {
				made -= n
			}
			if p.Calls() != made {
				t.Errorf("a pass makes %d calls, the replay made %d", p.Calls(), made)
			}
			for _, pl := range []*plan.Plan{nil, bigLock} {
				k, workers := newWorkers(t, pl, 2)
				var wg sync.WaitGroup
				for _, w := range workers {
					r := p.NewRunner(w)
					wg.Go(func() {
						for range 3 {
							if err := r.Pass(); err != nil {
								t.Errorf("plan %v: %v", pl, err)
								return
							}
						}
					})
				}
				wg.Wait()
				checkClean(t, k, len(workers))
			}
		})
	}
}

// Calls of tasks that touch no process in common wait for nothing but the calls that made
// their tasks; an exit waits for its parent's last call, a wait for the exits of the
// children it may reap, and setpgid, which acts on groups, for every call before it.
func TestProgramOrder(t *testing.T) {
	p, err := compileText(t, `
10 fork() = 11
10 fork() = 12
11 getpid() = 11
12 getpid() = 12
11 exit_group(0) = ?
11 +++ exited with 0 +++
12 setpgid(0, 0) = 0
12 exit_group(0) = ?
12 +++ exited with 0 +++
10 wait4(-1, [{WIFEXITED(s) && WEXITSTATUS(s) == 0}], 0, NULL) = 11
10 wait4(-1, [{WIFEXITED(s) && WEXITSTATUS(s) == 0}], 0, NULL) = 12
`)
	if err != nil {
		t.Fatal(err)
	}
	deps := map[int][]int{} // a trace call's line -> the lines of the calls it waits for
	for _, op := range p.ops {
		if !op.counted {
			continue
		}
		lines := []int{}
		for _, d := range op.deps {
			lines = append(lines, p.ops[d].line)
		}
		slices.Sort(lines)
		deps[op.line] = lines
	}
	want := map[int][]int{
		1:  {1},    // 10's first fork: init's fork of 10, made at the first line
		2:  {},     // 10's own fork before it is enough
		3:  {1},    // 11's getpid: its fork, not 12's
		4:  {2},    // 12's getpid: its fork, not 11's getpid
		5:  {2},    // 11's exit tells 10, whose last call is the second fork
		7:  {1, 5}, // setpgid: init's last call and 11's, and so everything before
		8:  {},     // 12's exit: its setpgid covers the rest
		10: {8},    // the wait: 12's exit, after which 11's came
		11: {},
	}
	if !maps.EqualFunc(deps, want, slices.Equal) {
		t.Errorf("a call's line: the lines it waits for\n%v, want\n%v", deps, want)
	}
}

// A pass checks every result: one that is not what the replay's model returned fails the
// pass, naming the trace's line, and the pass still ends every task it made; the next pass
// is a whole one again.
func TestPassFailsOnADifferentResult(t *testing.T) {
	p, err := compileText(t, `
10 fork() = 11
11 getppid() = 10
11 exit_group(3) = ?
11 +++ exited with 3 +++
10 wait4(-1, [{WIFEXITED(s) && WEXITSTATUS(s) == 3}], 0, NULL) = 11
`)
	if err != nil {
		t.Fatal(err)
	}
	wait := slices.IndexFunc(p.ops, func(op progOp) bool { return op.line == 5 && op.counted })
	if wait < 0 || p.ops[wait].want.code != 3 {
		t.Fatalf("no wait at line 5 that reaps a child exited with 3: %+v", p.ops)
	}
	k, workers := newWorkers(t, nil, 1)
	r := p.NewRunner(workers[0])
	if err := r.Pass(); err != nil {
		t.Fatal(err)
	}
	p.ops[wait].want.code = 4
	err = r.Pass()
	if err == nil || !strings.HasPrefix(err.Error(), "t.strace:5: wait4: ") || !strings.Contains(err.Error(), "exited 3 in this pass") {
		t.Errorf("a pass whose wait reaps a child exited with 3, not 4: %v", err)
	}
	checkClean(t, k, 1)
	p.ops[wait].want.code = 3
	if err := r.Pass(); err != nil {
		t.Fatal(err)
	}
	checkClean(t, k, 1)
}

// A trace no pass could replay to its end is refused, FILE:LINE: why: one whose call the
// model blocks in for good where the trace's returned, and one with no calls.
func TestCompileRefuses(t *testing.T) {
	for src, want := range map[string]string{
		"10 rt_sigsuspend([], 8) = -1 EINTR (Interrupted system call)\n": "t.strace:1: the model blocks in this call for good",
		"# nice: 0\n": "t.strace:1: no calls to replay",
	} {
		_, err := compileText(t, src)
		var serr *SyntaxError
		if !errors.As(err, &serr) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %s...", src, err, want)
		}
	}
}
