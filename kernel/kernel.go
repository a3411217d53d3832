package kernel

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/entropy"
	"tasklist/ipc/sem"
	"tasklist/kernel/pid"
	"tasklist/lockstat"
)

// Lock classes, one per kind of object; see the lock order in doc.go.
var (
	threadGroupClass = lockstat.NewClass("kernel.ThreadGroup.mu")
	sighandClass     = lockstat.NewClass("kernel.SignalHandlers.mu")
	sessionClass     = lockstat.NewClass("kernel.Session.mu")
	pgrpClass        = lockstat.NewClass("kernel.ProcessGroup.mu")
	userClass        = lockstat.NewClass("kernel.User.mu")
)

// ErrInitExit is returned when the last live thread of the root pid
// namespace's init tries to exit. Linux panics ("Attempted to kill init!");
// the model refuses the exit and leaves init running.
var ErrInitExit = errors.New("kernel: attempted to kill init")

// RLimit is one resource limit, as struct rlimit. RLimInfinity means no
// limit.
type RLimit struct {
	Cur, Max uint64
}

// RLimInfinity is RLIM_INFINITY.
const RLimInfinity = ^uint64(0)

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
}

// withDefaults returns cfg with Linux's default for every zero field, or
// an error wrapping EINVAL that names the first field out of range.
func (cfg Config) withDefaults() (Config, error) {
	invalid := func(field string, v any) error {
		return fmt.Errorf("kernel: Config.%s = %v: %w", field, v, unix.EINVAL)
	}
	if cfg.PIDMax == 0 {
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
	// continues to parents.
	async atomic.Int64
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
	k := &Kernel{cfg: cfg, boot: time.Now(), entropy: entropy.New(0)}
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

// Quiesce waits until no exit of a killed task is still running: every
// task that was sent a fatal signal has finished exiting or is blocked on
// another task (a namespace init waiting for its namespace to empty), and
// every stop or continue has taken effect and reached the parent. Calls
// made concurrently may start new work; Quiesce is for callers that have
// stopped issuing calls, such as the scenario runner between statements.
func (k *Kernel) Quiesce() {
	backoff := time.Microsecond
	for k.async.Load() != 0 {
		runtime.Gosched()
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Millisecond)
	}
}

// goAsync runs f on a goroutine of its own, counted by Quiesce from
// before goAsync returns, so that Quiesce cannot miss it.
func (k *Kernel) goAsync(f func()) {
	k.async.Add(1)
	go func() {
		defer k.async.Add(-1)
		f()
	}()
}
