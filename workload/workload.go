package workload

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/kernel"
)

// Unit is what a workload's figure measures.
type Unit struct {
	// Name is how the figure is printed: "ops/s", "jobs/min", "µs/call".
	Name string
	// PerSecond converts units done per second into the figure (60 for
	// jobs per minute). It is 0 for a latency, whose figure is the time
	// one call took.
	PerSecond float64
}

// The units of the workloads, as the benchmarks they reproduce report
// them.
var (
	OpsPerSec     = Unit{Name: "ops/s", PerSecond: 1}
	BogoOpsPerSec = Unit{Name: "bogo-ops/s", PerSecond: 1}
	JobsPerMin    = Unit{Name: "jobs/min", PerSecond: 60}
	MicrosPerCall = Unit{Name: "µs/call"}
)

// HigherIsBetter reports whether a larger figure is an improvement: true
// for rates, false for latencies.
func (u Unit) HigherIsBetter() bool { return u.PerSecond != 0 }

// Op is one iteration of one worker. It returns the time its timed part
// took for a latency workload, 0 otherwise.
type Op func() (timed time.Duration, err error)

// Workload is one benchmark job: how to prepare a table for N workers and
// what each worker does once per iteration.
type Workload struct {
	// Name is the name the command line and the reports use.
	Name string
	// Summary says what one iteration does, in one line.
	Summary string
	// Seed names the seed thread whose benchmark the workload
	// reproduces.
	Seed string
	Unit Unit
	// PerOp is how many units of the figure one Op does: 2 for the
	// semop loops (two semops), the batch size for pthread-create (its
	// figure is per call), 1 otherwise.
	PerOp int
	// HostNote says how the host program's version differs, if it does.
	HostNote string
	// NotOnHost says why the host program cannot run the workload; it is empty when it
	// can.
	NotOnHost string
	setup     func(e *Env) (*Instance, error)
}

// Env is what a workload is set up on.
type Env struct {
	// Kernels holds worker w's kernel at index w; a shared table gives
	// every worker the same one, the private control a kernel each.
	Kernels []*kernel.Kernel
	// Population is how many other tasks get puts in each kernel's table
	// before it starts (DefaultPopulation when 0; -1 for none).
	Population int
	// Mix is the mix workload's workfile (the default one when nil).
	Mix *Mix
}

// DefaultPopulation is get's default number of other tasks in the table.
const DefaultPopulation = 1000

// MaxPopulation bounds Env.Population. A kernel's pid space holds
// pid.DefaultMax-1 tasks; the rest is for the workers: up to 1024 of them
// (package bench's bound), each running up to 16 tasks in the mix (a
// process per job and pthread-create's batch of threads).
const MaxPopulation = 16000

// Instance is a workload set up on an Env, ready to run.
type Instance struct {
	// Ops holds worker w's op at index w. Each is called from one
	// goroutine at a time.
	Ops []Op
	// workers are the worker tasks, in worker order; the mix has one per
	// job kind and worker.
	workers []*kernel.Task
}

// Setup prepares w on e: it creates the worker processes (and whatever
// the workload needs besides, such as the semaphore set or get's
// population) and returns each worker's op.
func (w *Workload) Setup(e *Env) (*Instance, error) {
	if len(e.Kernels) == 0 {
		return nil, fmt.Errorf("workload %s: no workers", w.Name)
	}
	if e.Population > MaxPopulation {
		return nil, fmt.Errorf("workload %s: a population of %d: at most %d", w.Name, e.Population, MaxPopulation)
	}
	inst, err := w.setup(e)
	if err != nil {
		return nil, fmt.Errorf("workload %s: %w", w.Name, err)
	}
	return inst, nil
}

// threadFlags are pthread_create's clone flags.
const threadFlags = unix.CLONE_THREAD | unix.CLONE_SIGHAND | unix.CLONE_VM

// The users workers run as; population tasks use their own range.
const (
	workerUID     = 1000
	populationUID = 2000
)

// All returns the workloads in the order the reports list them.
func All() []*Workload { return slices.Clone(all) }

// Names returns the workloads' names, in the order of All.
func Names() []string {
	names := make([]string, len(all))
	for i, w := range all {
		names[i] = w.Name
	}
	return names
}

// Named returns the workload called name: one of All, or replay:FILE, the replay of the
// trace in FILE (Replay).
func Named(name string) (*Workload, error) {
	if path, ok := strings.CutPrefix(name, ReplayPrefix); ok {
		return Replay(path)
	}
	for _, w := range all {
		if w.Name == name {
			return w, nil
		}
	}
	return nil, fmt.Errorf("unknown workload %q (workloads: %s)", name, strings.Join(Names(), ", "))
}

// kernelGroups returns, for each distinct kernel of e in order of first
// use, the workers that run on it.
func kernelGroups(e *Env) []kernelGroup {
	var groups []kernelGroup
	index := map[*kernel.Kernel]int{}
	for w, k := range e.Kernels {
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, kernelGroup{k: k})
		}
		groups[i].workers = append(groups[i].workers, w)
	}
	return groups
}

type kernelGroup struct {
	k       *kernel.Kernel
	workers []int
}

// newWorker forks a worker process under k's init. A uid ≥ 0 makes it
// run as that user (losing root's capabilities); ownGroup puts it in a
// process group of its own.
func newWorker(k *kernel.Kernel, uid int, ownGroup bool) (*kernel.Task, error) {
	t, err := k.Init().Fork()
	if err != nil {
		return nil, err
	}
	if ownGroup {
		if err := t.Setpgid(0, 0); err != nil {
			return nil, err
		}
	}
	if uid >= 0 {
		if err := t.Setuid(uid); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// perWorker sets up one worker process per worker with newWorker's
// arguments (uid(w) gives worker w's user) and makes each one's op.
func perWorker(e *Env, uid func(w int) int, ownGroup bool, op func(t *kernel.Task) Op) (*Instance, error) {
	inst := &Instance{Ops: make([]Op, len(e.Kernels))}
	for w, k := range e.Kernels {
		t, err := newWorker(k, uid(w), ownGroup)
		if err != nil {
			return nil, err
		}
		inst.workers = append(inst.workers, t)
		inst.Ops[w] = op(t)
	}
	return inst, nil
}

// processes is the setup of a workload whose workers are processes made
// by newWorker, each running op.
func processes(uid func(w int) int, ownGroup bool, op func(t *kernel.Task) Op) func(*Env) (*Instance, error) {
	return func(e *Env) (*Instance, error) { return perWorker(e, uid, ownGroup, op) }
}

func sameUser(int) int       { return workerUID }
func distinctUser(w int) int { return workerUID + w }
func root(int) int           { return -1 }
