package kernelrun

import (
	"math"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/internal/abi"
	"tasklist/scenario"
)

// Argument lists longer than one message carries still get Linux's answer, never a made-up
// one: semop with more sembufs than SEMOPM is refused by its count (E2BIG) however many there
// are, and SETALL and GETALL pass every value of the largest set Linux makes (SEMMSL). The
// calls are made directly: their lists are long.
func TestLongArgumentLists(t *testing.T) {
	const semmsl = 32000
	b := newBackend(t)
	defer b.Close()
	do := func(name string, args ...scenario.Value) scenario.Result {
		t.Helper()
		return b.Do(scenario.Init, scenario.Call{Name: name, Args: args})
	}
	num := func(v int64) scenario.Value { return scenario.Value{Kind: scenario.ValueInt, Int: v} }
	list := func(first, n int) scenario.Value {
		v := scenario.Value{Kind: scenario.ValueList}
		for i := range n {
			v.List = append(v.List, int64(first+i))
		}
		return v
	}
	res := do("semget", num(0), num(semmsl), num(0o600))
	if res.Kind != scenario.ResultNewSet {
		t.Fatalf("semget: %+v", res)
	}
	set := scenario.Value{Kind: scenario.ValueSet, Set: res.NewSet}
	ops := scenario.Value{Kind: scenario.ValueSembufs, Sembufs: make([]scenario.Sembuf, semopCarry+1)}
	if res := do("semop", set, ops); res.Kind != scenario.ResultErrno || res.Errno != unix.E2BIG {
		t.Errorf("semop with %d sembufs: %+v, want E2BIG", len(ops.Sembufs), res)
	}
	if res := do("semtimedop", set, num(10), ops); res.Kind != scenario.ResultErrno || res.Errno != unix.E2BIG {
		t.Errorf("semtimedop with %d sembufs: %+v, want E2BIG", len(ops.Sembufs), res)
	}
	stored := list(1, semmsl)
	if res := do("semctl", set, num(0), num(abi.SETALL), stored); res.Kind != scenario.ResultInt || res.Int != 0 {
		t.Errorf("SETALL of %d values: %+v", semmsl, res)
	}
	if res := do("semctl", set, num(0), num(abi.GETALL)); res.Kind != scenario.ResultList || !slices.Equal(res.List, stored.List) {
		t.Errorf("GETALL of %d values is not what SETALL stored: %d values", semmsl, len(res.List))
	}
	// Values beyond the set's size are never read, however many there are.
	if res := do("semctl", set, num(0), num(abi.SETALL), list(7, valuesCarry+10)); res.Kind != scenario.ResultInt || res.Int != 0 {
		t.Errorf("SETALL of %d values: %+v", valuesCarry+10, res)
	}
	if res := do("semctl", set, num(semmsl-1), num(abi.GETVAL)); res.Kind != scenario.ResultInt || res.Int != 7+semmsl-1 {
		t.Errorf("GETVAL of the last semaphore: %+v, want %d", res, 7+semmsl-1)
	}
}

// A system that never settles cannot be read: the call reports a fatal error, which stops
// the run with status 2 and FILE:LINE on stderr, instead of a result.
func TestGivesUpWhenTasksNeverSettle(t *testing.T) {
	old := settleTimeout
	settleTimeout = 200e6
	defer func() { settleTimeout = old }()
	s, err := scenario.Parse("spin", []byte("init.kill(init, 0) == 0\ninit.kill(init, 0) == 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	b := newBackend(t)
	defer b.Close()
	// A process that never sleeps, watched as one of the runner's tasks.
	spin := exec.Command("sh", "-c", "while :; do :; done")
	if err := spin.Start(); err != nil {
		t.Skip("no shell to spin: ", err)
	}
	defer spin.Wait()
	defer spin.Process.Kill()
	id := identity{tid: spin.Process.Pid, start: readStat(spin.Process.Pid).start}
	b.tasks = append(b.tasks, &task{identity: id})
	var out, errs strings.Builder
	status := scenario.Run(s, b, &out, &errs)
	if status != 2 || out.String() != "" || !strings.HasPrefix(errs.String(), "spin:1: the tasks did not settle") {
		t.Errorf("status %d (want 2)\nstdout:\n%s\nstderr:\n%s", status, out.String(), errs.String())
	}
}

// A semtimedop's stall time saturates instead of overflowing into an early EDEADLK, and a
// timeout too large for Linux's clock adds nothing: the call is an untimed one.
func TestStallForHugeTimeouts(t *testing.T) {
	call := func(ms int64) scenario.Call {
		return scenario.Call{Name: "semtimedop", Args: []scenario.Value{{}, {Kind: scenario.ValueInt, Int: ms}}}
	}
	if d := stallFor(call(math.MaxInt64)); d != StallTimeout {
		t.Errorf("stallFor(MaxInt64 ms) = %v, want StallTimeout %v", d, StallTimeout)
	}
	if d := stallFor(call(9223372036000 - 1)); d != math.MaxInt64 {
		t.Errorf("stallFor(just under KTIME_SEC_MAX s) = %v, want the largest duration", d)
	}
	if d := stallFor(call(1500)); d != StallTimeout+1500*time.Millisecond {
		t.Errorf("stallFor(1500 ms) = %v", d)
	}
}

// A new task that neither a pidfd nor a hello names could be slow rather than gone: the runner
// says it cannot find it instead of calling it gone.
func TestUnfoundChildIsFatal(t *testing.T) {
	b := newBackend(t)
	defer b.Close()
	if res, err := b.created(b.tasks[scenario.Init], 999, message{words: []int64{999}}); err == nil {
		t.Errorf("created with no pidfd and no hello = %+v, want an error", res)
	}
}

// A child released before its clone returned (reaped at once by a parent that ignores
// SIGCHLD, or by another thread's wait while a vfork parent slept) can have died before its
// hello: pidfd_open's ESRCH in the reply says so, and the runner binds it by its pid as gone.
func TestChildReleasedBeforeCloneReturnedIsBound(t *testing.T) {
	b := newBackend(t)
	defer b.Close()
	res, err := b.created(b.tasks[scenario.Init], 999, message{words: []int64{999, -int64(unix.ESRCH)}})
	if err != nil {
		t.Fatalf("created with pidfd_open's ESRCH: %v, want the task bound", err)
	}
	if res.Kind != scenario.ResultNewTask || res.NewPid != 999 {
		t.Fatalf("created = %+v, want new task 999", res)
	}
	if nt := b.tasks[res.NewTask]; !nt.gone || nt.nspid[len(nt.nspid)-1] != 999 {
		t.Errorf("bound task: gone %v, pids %v; want gone with pid 999", nt.gone, nt.nspid)
	}
}
