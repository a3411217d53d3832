package workload

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
	"tasklist/kernel"
	"tasklist/lockstat"
)

// env returns an Env for workers on one shared kernel, or on a kernel
// each when private.
func env(t testing.TB, workers int, private bool, cfg kernel.Config) *Env {
	t.Helper()
	e := &Env{Population: 40}
	var shared *kernel.Kernel
	for range workers {
		if shared == nil || private {
			k, err := kernel.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			shared = k
		}
		e.Kernels = append(e.Kernels, shared)
	}
	return e
}

func setup(t testing.TB, name string, e *Env) *Instance {
	t.Helper()
	w, err := Named(name)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := w.Setup(e)
	if err != nil {
		t.Fatal(err)
	}
	if len(inst.Ops) != len(e.Kernels) {
		t.Fatalf("%d ops for %d workers", len(inst.Ops), len(e.Kernels))
	}
	return inst
}

// runOps calls every worker's op n times, concurrently across workers.
func runOps(t *testing.T, inst *Instance, n int) {
	t.Helper()
	errs := make(chan error, len(inst.Ops))
	for _, op := range inst.Ops {
		go func() {
			for range n {
				if _, err := op(); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range inst.Ops {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// allocated returns how many pids each distinct kernel of e holds.
func allocated(e *Env) []int {
	var n []int
	for _, g := range kernelGroups(e) {
		n = append(n, g.k.RootNamespace().Allocated())
	}
	return n
}

func checkKernels(t *testing.T, e *Env) {
	t.Helper()
	for _, g := range kernelGroups(e) {
		g.k.Quiesce()
		if err := g.k.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEveryWorkloadRuns: each workload sets up and runs on a shared
// kernel and on private ones, leaves every table consistent, and leaves
// as many pids in use as after its setup: nothing it makes outlives its
// iteration.
func TestEveryWorkloadRuns(t *testing.T) {
	defer lockstat.SetChecking(lockstat.SetChecking(false))
	for _, w := range All() {
		for _, private := range []bool{false, true} {
			e := env(t, 3, private, kernel.Config{})
			inst := setup(t, w.Name, e)
			before := allocated(e)
			runOps(t, inst, 25)
			checkKernels(t, e)
			if after := allocated(e); !slices.Equal(before, after) {
				t.Errorf("%s (private %v): pids in use %v after setup, %v after running", w.Name, private, before, after)
			}
		}
	}
}

// TestForkJobsLeaveNoZombies: after fork-exit and fork-exec iterations
// every worker has no child left, zombie or alive.
func TestForkJobsLeaveNoZombies(t *testing.T) {
	for _, name := range []string{"fork-exit", "fork-exec"} {
		e := env(t, 2, false, kernel.Config{})
		inst := setup(t, name, e)
		runOps(t, inst, 20)
		for _, w := range inst.workers {
			if _, err := w.Wait4(context.Background(), -1, unix.WNOHANG); !errors.Is(err, unix.ECHILD) {
				t.Errorf("%s: worker %d: wait4 after the jobs: %v, want ECHILD", name, w.Getpid(), err)
			}
		}
	}
}

// TestThreadspawnUsersAndThreads: threadspawn's workers are processes of
// one user, threadspawn-users' of a user each, threadspawn-threads' the
// threads of one process; none keeps a thread after its iterations.
func TestThreadspawnUsersAndThreads(t *testing.T) {
	cases := []struct {
		name          string
		distinctUsers bool
		oneProcess    bool
	}{
		{"threadspawn", false, false},
		{"threadspawn-users", true, false},
		{"threadspawn-threads", false, true},
	}
	for _, c := range cases {
		e := env(t, 3, false, kernel.Config{})
		inst := setup(t, c.name, e)
		runOps(t, inst, 10)
		uids, pids := map[int]bool{}, map[int]bool{}
		for _, w := range inst.workers {
			uids[w.Getuid()] = true
			pids[w.Getpid()] = true
		}
		if wantUsers := map[bool]int{true: 3, false: 1}[c.distinctUsers]; len(uids) != wantUsers {
			t.Errorf("%s: workers run as %d users, want %d", c.name, len(uids), wantUsers)
		}
		if wantProcs := map[bool]int{true: 1, false: 3}[c.oneProcess]; len(pids) != wantProcs {
			t.Errorf("%s: workers are in %d processes, want %d", c.name, len(pids), wantProcs)
		}
	}
}

// TestPthreadCreateTimesABatch: the op times its clones and ends the
// threads it made.
func TestPthreadCreateTimesABatch(t *testing.T) {
	e := env(t, 1, false, kernel.Config{})
	inst := setup(t, "pthread-create", e)
	before := allocated(e)
	timed, err := inst.Ops[0]()
	if err != nil || timed <= 0 {
		t.Fatalf("op = %v, %v; want a positive time", timed, err)
	}
	if after := allocated(e); after[0] != before[0] {
		t.Fatalf("%d pids after the batch, %d before", after[0], before[0])
	}
}

// TestGetPopulation: get's table holds the population in
// populationGroups groups of populationUsers users, besides the workers.
func TestGetPopulation(t *testing.T) {
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := populate(k, 100); err != nil {
		t.Fatal(err)
	}
	groups, users, n := map[int]bool{}, map[int]bool{}, 0
	for pid := 2; pid < 200; pid++ {
		task := k.RootNamespace().Lookup(pid)
		if task == nil {
			continue
		}
		n++
		pg, _ := task.Getpgid(0)
		groups[pg] = true
		users[task.Getuid()] = true
	}
	if n != 100 || len(groups) != populationGroups || len(users) != populationUsers {
		t.Fatalf("%d tasks in %d groups of %d users, want 100 in %d of %d", n, len(groups), len(users), populationGroups, populationUsers)
	}
}

// TestSetprioAlternates: the worker's nice value alternates and every
// fourth call goes to its own process group.
func TestSetprioAlternates(t *testing.T) {
	e := env(t, 1, false, kernel.Config{})
	inst := setup(t, "setprio", e)
	w := inst.workers[0]
	if pg, _ := w.Getpgid(0); pg != w.Getpid() {
		t.Fatalf("worker %d is in group %d, want its own", w.Getpid(), pg)
	}
	for i := range 4 {
		if _, err := inst.Ops[0](); err != nil {
			t.Fatal(err)
		}
		// getpriority returns 20 - nice.
		if got, _ := w.Getpriority(unix.PRIO_PROCESS, 0); got != 20-(i&1) {
			t.Fatalf("after call %d: getpriority %d, want %d", i+1, got, 20-(i&1))
		}
	}
}

// TestSemopWorkersOwnSemaphores: in semop-multi each worker moves its
// own semaphore of the kernel's one set, in semop-shared all move the
// first: a semaphore at its maximum value makes exactly the workers that
// use it fail their +1 with ERANGE.
func TestSemopWorkersOwnSemaphores(t *testing.T) {
	for _, c := range []struct {
		name  string
		full  uint16
		fails []bool
	}{
		{"semop-multi", 1, []bool{false, true, false}},
		{"semop-shared", 0, []bool{true, true, true}},
		{"semop-shared", 2, []bool{false, false, false}},
	} {
		e := env(t, 3, false, kernel.Config{})
		inst := setup(t, c.name, e)
		runOps(t, inst, 10)
		owner := inst.workers[0]
		const id = 0 // the namespace's first set
		vals := make([]uint16, 3)
		if _, err := owner.Semctl(id, 0, sem.GETALL, sem.Semun{Array: vals}); err != nil {
			t.Fatalf("%s: GETALL: %v", c.name, err)
		}
		if !slices.Equal(vals, []uint16{200, 200, 200}) {
			t.Fatalf("%s: values %v after the loops, want 200 each", c.name, vals)
		}
		if _, err := owner.Semctl(id, int(c.full), sem.SETVAL, sem.Semun{Val: int(sem.DefaultLimits().SEMVMX)}); err != nil {
			t.Fatal(err)
		}
		for w, op := range inst.Ops {
			_, err := op()
			if failed := errors.Is(err, unix.ERANGE); failed != c.fails[w] || (err != nil && !failed) {
				t.Errorf("%s with semaphore %d full: worker %d: %v", c.name, c.full, w, err)
			}
		}
	}
}

// TestSemShmRemovesItsSet: sem-shm jobs run in a namespace that holds
// one set at most, so each job must remove its set for the next to run.
func TestSemShmRemovesItsSet(t *testing.T) {
	limits := sem.DefaultLimits()
	limits.SEMMNI = 1
	e := env(t, 1, false, kernel.Config{SemLimits: limits})
	inst := setup(t, "sem-shm", e)
	runOps(t, inst, 5)
}

// TestMixDealsWithoutReplacement: over each deck every job runs as often
// as its weight says, in an order that changes between decks.
func TestMixDealsWithoutReplacement(t *testing.T) {
	var order []int
	var deck []Op
	weights := []int{1, 2, 5}
	for job, weight := range weights {
		for range weight {
			deck = append(deck, func() (time.Duration, error) { order = append(order, job); return 0, nil })
		}
	}
	op := dealer(deck, 1)
	for range 10 * len(deck) {
		if _, err := op(); err != nil {
			t.Fatal(err)
		}
	}
	for d := 0; d < 10; d++ {
		counts := make([]int, len(weights))
		for _, job := range order[d*len(deck) : (d+1)*len(deck)] {
			counts[job]++
		}
		if !slices.Equal(counts, weights) {
			t.Fatalf("deck %d ran the jobs %v times, want %v", d, counts, weights)
		}
	}
	if slices.Equal(order[:len(deck)], order[len(deck):2*len(deck)]) && slices.Equal(order[:len(deck)], order[2*len(deck):3*len(deck)]) {
		t.Fatal("the decks are not shuffled")
	}
}

// TestParseMix: the default workfile parses; bad lines are refused with
// their line number.
func TestParseMix(t *testing.T) {
	m := DefaultMix()
	if len(m.Jobs) == 0 || strings.Contains(m.String(), "mix") {
		t.Fatalf("default mix %q", m)
	}
	good, err := ParseMix(strings.NewReader("# c\n 3 get # three\n\n1 fork-exit\n"), "f")
	if err != nil || good.String() != "get:3,fork-exit:1" {
		t.Fatalf("ParseMix = %v, %v", good, err)
	}
	if full, err := ParseMix(strings.NewReader("4000 get\n96 fork-exit\n"), "f"); err != nil || full.String() != "get:4000,fork-exit:96" {
		t.Fatalf("a deck of MaxDeck jobs: ParseMix = %v, %v", full, err)
	}
	for text, want := range map[string]string{
		"get":                       "f:1: want WEIGHT NAME",
		"x get":                     "f:1: weight \"x\"",
		"0 get":                     "f:1: weight \"0\"",
		"1 get\n1 mix":              "f:2: a mix cannot contain itself",
		"1 nosuch":                  "f:1: unknown workload \"nosuch\"",
		"1 get\n2 get":              "f:2: get listed twice",
		"# only a comment\n":        "f: no jobs",
		"3000000000 get":            "f:1: weight 3000000000 too large (at most 4096)",
		"99999999999999999999 get":  "f:1: weight 99999999999999999999 too large (at most 4096)",
		"-99999999999999999999 get": "f:1: weight \"-99999999999999999999\" is not a positive integer",
		"4097 get":                  "f:1: weight 4097 too large (at most 4096)",
		"4000 get\n97 fork-exit":    "f:2: the weights add up to 4097, more than 4096",
	} {
		if _, err := ParseMix(strings.NewReader(text), "f"); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseMix(%q) = %v, want %q…", text, err, want)
		}
	}
}

// TestPopulationBound: a population past MaxPopulation is refused before
// anything is made; one at the bound fits in a table beside the mix's
// 1024 workers, each of which then runs its ops.
func TestPopulationBound(t *testing.T) {
	defer lockstat.SetChecking(lockstat.SetChecking(false)) // 25,000 forks
	get, _ := Named("get")
	e := env(t, 1, false, kernel.Config{})
	e.Population = MaxPopulation + 1
	if _, err := get.Setup(e); err == nil || !strings.Contains(err.Error(), "at most 16000") {
		t.Fatalf("Setup = %v, want the bound named", err)
	}
	if testing.Short() {
		t.Skip("sets up 1024 workers")
	}
	e = env(t, 1024, false, kernel.Config{})
	e.Population = MaxPopulation
	runOps(t, setup(t, "mix", e), 1)
}
