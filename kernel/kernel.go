package kernel

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/entropy"
	"tasklist/ipc/sem"
	"tasklist/kernel/pid"
	"tasklist/lockstat"
	"tasklist/plan"
)

// Lock classes, one per kind of object; see the lock order in doc.go.
var (
	threadGroupClass = lockstat.NewClass("kernel.ThreadGroup.mu")
	sighandClass     = lockstat.NewClass("kernel.SignalHandlers.mu")
	sessionClass     = lockstat.NewClass("kernel.Session.mu")
	pgrpClass        = lockstat.NewClass("kernel.ProcessGroup.mu")
	pgrpShardClass   = lockstat.NewClass("kernel.ProcessGroup.shard.mu")
	userClass        = lockstat.NewClass("kernel.User.mu")
)

// ErrInitExit is returned when the last live thread of the root pid
// namespace's init tries to exit. Linux panics ("Attempted to kill init!");
// the model refuses the exit and leaves init running.
var ErrInitExit = errors.New("kernel: attempted to kill init")

// Config configures a Kernel. The zero value is Linux's defaults, and so
// is every zero field: a Config sets only what it means to change.
type Config struct {
	// PIDMax is the root namespace's pid_max (default 32768; at least
	// 301, at most 4194304, as /proc/sys/kernel/pid_max accepts). A new
	// pid namespace starts with its parent's value.
	PIDMax int
	// ThreadLimit is the system-wide limit on tasks (max_threads); 0
	// means no limit, which also keeps the global task counter off the
	// fork path. It may not be negative.
	ThreadLimit int
	// RLimits overrides init's resource limits (RLIMIT_* → limit, with
	// Cur ≤ Max); the rest are Linux's defaults for init.
	RLimits map[int]RLimit
	// SemLimits are the SysV semaphore limits of every IPC namespace;
	// each zero field takes Linux's default (sem.Limits.WithDefaults),
	// and the result must pass sem.Limits.Validate.
	SemLimits sem.Limits
	// PIDSpace, when set, is where the root pid namespace draws its
	// numbers from, shared with every other kernel given the same space:
	// their tasks get distinct pids in one cyclic order, as if in one
	// table, and the space's lock is the only thing they share. It is a
	// benchmark control (the limit of any design that keeps Linux's
	// global pid order); only the first such kernel's init is pid 1.
	// PIDMax must then be 0 or the space's pid_max.
	PIDSpace *pid.Space
	// Plan says where a table lock is taken on top of the per-object
	// locks (package plan); nil is tasklist's own design, with none.
	Plan *plan.Plan
}

// withDefaults returns cfg with Linux's default for every zero field, or
// an error wrapping EINVAL that names the first field out of range.
func (cfg Config) withDefaults() (Config, error) {
	invalid := func(field string, v any) error {
		return fmt.Errorf("kernel: Config.%s = %v: %w", field, v, unix.EINVAL)
	}
	switch {
	case cfg.PIDSpace != nil && cfg.PIDMax == 0:
		cfg.PIDMax = cfg.PIDSpace.Max()
	case cfg.PIDSpace != nil && cfg.PIDMax != cfg.PIDSpace.Max():
		return cfg, invalid("PIDMax", cfg.PIDMax)
	case cfg.PIDMax == 0:
		cfg.PIDMax = pid.DefaultMax
	}
	if cfg.PIDMax < pid.MinMax || cfg.PIDMax > pid.Limit {
		return cfg, invalid("PIDMax", cfg.PIDMax)
	}
	if cfg.ThreadLimit < 0 {
		return cfg, invalid("ThreadLimit", cfg.ThreadLimit)
	}
	for res, lim := range cfg.RLimits {
		if res < 0 || res >= nrLimits || lim.Cur > lim.Max {
			return cfg, invalid(fmt.Sprintf("RLimits[%d]", res), lim)
		}
	}
	cfg.SemLimits = cfg.SemLimits.WithDefaults()
	if err := cfg.SemLimits.Validate(); err != nil {
		return cfg, fmt.Errorf("kernel: Config.SemLimits: %w", err)
	}
	return cfg, nil
}

// Kernel is one model system: a root pid namespace whose init is created
// by New.
type Kernel struct {
	cfg    Config
	plan   *plan.Plan
	rootNS *PIDNamespace
	init   *Task
	// idle is the idle task (pid 0), the root init's real parent: it
	// exists only to trace the root init after its PTRACE_TRACEME.
	idle *Task

	// users maps a uid to its *User; reads take no lock.
	users sync.Map

	// nrThreads counts live tasks when Config.ThreadLimit is set.
	nrThreads atomic.Int64

	// boot is the kernel's start: task runtimes are monotonic durations
	// since it. entropy is fed each released task's runtime.
	boot    time.Time
	entropy *entropy.Pool

	// async counts work that runs on goroutines of its own on behalf of
	// a task and is neither finished nor waiting on another task: exits
	// of killed tasks, group stops, and notifications of stops and
	// continues to parents. Its fall to zero is an event for settle.
	async atomic.Int64
	// settle wakes callers waiting for the model to settle (settle.go).
	settle settle
}

// New creates a kernel whose root pid namespace holds init (pid 1), which
// leads its own session and process group, runs as uid 0 with every
// capability and has the default resource limits. Errors: a Config field
// out of range, as an error wrapping EINVAL that names it.
func New(cfg Config) (*Kernel, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	k := &Kernel{cfg: cfg, plan: cfg.Plan, boot: time.Now(), entropy: entropy.New(cfg.Plan.EntropyShards())}
	ns, err := newPIDNamespace(k, nil, cfg.PIDMax)
	if err != nil {
		return nil, err
	}
	k.rootNS = ns
	k.idle = k.newIdle()
	limits := defaultRLimits()
	for res, lim := range cfg.RLimits {
		limits[res] = lim
	}
	init, err := k.newInit(limits)
	if err != nil {
		return nil, err
	}
	k.init = init
	return k, nil
}

// Init returns the root namespace's init task.
func (k *Kernel) Init() *Task { return k.init }

// RootNamespace returns the root pid namespace.
func (k *Kernel) RootNamespace() *PIDNamespace { return k.rootNS }

// ReadEntropy fills p from the kernel's entropy pool, which every released
// task's runtime was mixed into (release_task's add_device_randomness),
// and returns len(p). It never fails.
func (k *Kernel) ReadEntropy(p []byte) (int, error) { return k.entropy.Read(p) }

// EntropySamples returns how many task runtimes were mixed into the pool.
func (k *Kernel) EntropySamples() uint64 { return k.entropy.Samples() }

// now is the monotonic clock, read once when a task is made and once when
// it is released.
func (k *Kernel) now() int64 { return int64(time.Since(k.boot)) }
