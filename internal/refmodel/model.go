// Package refmodel is a sequential reference model of the Linux process
// lifecycle: the oracle that the kernel package is tested against.
//
// It is written for obviousness, not speed: one Model struct holds every
// task, process and pid namespace in plain maps and slices, every call runs
// to completion before the next, and each rule is written the way
// kernel/fork.c, kernel/exit.c and kernel/pid.c state it. Tasks are named
// by their tid in the root pid namespace.
//
// Linux runs the exit of a task killed by a signal later, on that task's own
// time. The model takes one fixed interleaving of that race, the one the
// kernel package takes too: a fatal signal marks every thread of the
// process as exiting at once (so none of them can adopt children any more),
// and the rest of their exits runs, in order, once the call that sent the
// signal has finished. A namespace init whose namespace must empty first
// (zap_pid_ns_processes) finishes its exit once the namespace has emptied.
package refmodel

import (
	"errors"
	"sort"

	"golang.org/x/sys/unix"
)

// ErrInitExit is returned when the last live thread of the root
// namespace's init would exit: Linux panics ("Attempted to kill init!"), the
// model refuses the call and changes nothing.
var ErrInitExit = errors.New("refmodel: attempted to kill init")

// ErrWouldBlock is returned by a wait without WNOHANG that would sleep:
// the model has no other task that could wake it.
var ErrWouldBlock = errors.New("refmodel: wait would block")

// Linux constants the model needs beyond golang.org/x/sys/unix. The model
// writes these ABI values itself (here and in wait.go and ptrace.go) rather
// than take them from tasklist/internal/abi, on purpose: an independent
// reference shares nothing with the implementation it checks, so a wrong
// value cannot hide in both.
const (
	reservedPIDs   = 300     // RESERVED_PIDS
	defaultPIDMax  = 32768   // default kernel.pid_max
	maxPIDNSLevel  = 32      // MAX_PID_NS_LEVEL
	nrLimits       = 16      // RLIM_NLIMITS
	nrOpen         = 1 << 20 // default fs.nr_open
	nSig           = 64      // _NSIG
	capLast        = unix.CAP_CHECKPOINT_RESTORE
	allCaps        = uint64(1)<<(capLast+1) - 1
	invalidID      = ^uint32(0)
	exitSignalNone = -1 // a thread's exit_signal: it never notifies anyone
)

// Signal dispositions, as sa_handler values (the same numbering as the
// kernel package, written here on purpose: see the constants above).
const (
	SigDfl     = 0 // SIG_DFL
	SigIgn     = 1 // SIG_IGN
	SigHandler = 2 // a user handler
)

// SaNoCldStop and SaNoCldWait are SA_NOCLDSTOP and SA_NOCLDWAIT.
const (
	SaNoCldStop = 0x1
	SaNoCldWait = 0x2
)

// RLimInfinity is RLIM_INFINITY.
const RLimInfinity = ^uint64(0)

// RLimit is one resource limit.
type RLimit struct{ Cur, Max uint64 }

// SigAction is a signal disposition.
type SigAction struct {
	Handler int
	Flags   uint64
}

// Config configures a Model; the zero value is Linux's defaults.
type Config struct {
	// PIDMax is the root namespace's pid_max (default 32768); a new
	// namespace starts with its parent's value.
	PIDMax int
	// ThreadLimit is max_threads; 0 means no limit.
	ThreadLimit int
}

// Creds are one thread's credentials (struct cred, the parts the model
// uses).
type Creds struct {
	UID, EUID, SUID, FSUID uint32
	CapEffective           uint64
	CapPermitted           uint64
}

func (c Creds) hasCap(cap int) bool { return c.CapEffective&(1<<uint(cap)) != 0 }

// Task states.
const (
	running = iota
	exiting // PF_EXITING: do_exit has begun
	zombie  // EXIT_ZOMBIE
)

// Process exit states as the parent sees them.
const (
	procAlive  = iota
	procZombie // notified; wait may reap it
)

// namespace is a pid namespace with its own idr (pids) and cursor.
type namespace struct {
	id       int
	parent   *namespace
	level    int
	pidMax   int
	cursor   int // idr_next
	pids     map[int]*pid
	disabled bool  // PIDNS_ADDING cleared
	reaper   *task // child_reaper
}

// pid is a struct pid: one number per level, and the users that keep it
// allocated.
type pid struct {
	ns     *namespace // innermost level
	nrs    []int      // nrs[level]
	task   *task      // PIDTYPE_PID user
	pgrps  int        // processes in the group named by this pid
	sesses int        // processes in the session named by this pid
}

// nrIn returns the number in ns, or 0 when the pid is not visible there.
func (p *pid) nrIn(ns *namespace) int {
	at := p.ns
	for at != nil && at.level > ns.level {
		at = at.parent
	}
	if at != ns {
		return 0
	}
	return p.nrs[ns.level]
}

// sighand is a handler table; CLONE_SIGHAND shares it.
type sighand struct {
	act [nSig + 1]SigAction
}

// task is one thread.
type task struct {
	pid      *pid
	proc     *process
	state    int
	exitCode int
	children []*process // this thread's children list, in list order
	pdeath   int
	creds    Creds
	nice     int
	serial   int // creation order: Linux's task list order
	// nprocExceeded is PF_NPROC_EXCEEDED: set*uid found the new real
	// uid over the task's RLIMIT_NPROC; execve then fails while it is.
	nprocExceeded bool
	dead          bool // its exit took signal->live to zero (group_dead)
	// blocked is the thread's signal mask; pending the signals sent to it
	// that it blocks (signal_mask.go).
	blocked uint64
	pending queue
}

// process is a thread group (signal_struct plus the leader's parent-side
// state).
type process struct {
	leader     *task
	threads    []*task // thread list, creation order
	ns         *namespace
	parent     *task // real_parent (nil for the root init)
	exitSignal int
	exitState  int
	sighand    *sighand
	rlim       [nrLimits]RLimit
	isSub      bool // is_child_subreaper
	hasSub     bool // has_child_subreaper
	unkillable bool // SIGNAL_UNKILLABLE
	live       int  // signal->live
	groupExit  bool // SIGNAL_GROUP_EXIT
	groupCode  int
	exitStatus int // what wait reports, fixed by the last thread to exit
	pgrp, sess *pid
	zapping    *task // the init thread waiting in zap_pid_ns_processes
	joined     int   // when it joined its process group: walks visit the latest first
	// Job control: SIGNAL_STOP_STOPPED, the stop signal wait may still
	// report (0 once reported), SIGNAL_STOP_CONTINUED, stop signals not
	// yet acted on and fatal signals taken while stopped (bit sig-1).
	stopped     bool
	stopCode    int
	continued   bool
	stopPending uint64
	pendingSigs uint64
	// execSeq is self_exec_id; parentExecSeq the parent's when this
	// process was made (parent_exec_id); execed clears PF_FORKNOEXEC.
	execSeq, parentExecSeq int
	execed                 bool
	// nonDumpable is the mm's dumpable flag cleared: only CAP_SYS_PTRACE
	// may then attach (D4).
	nonDumpable bool
	// ptrace, tracee side. Linux traces threads; the model traces a
	// single-threaded process as a whole (Ptrace refuses the rest).
	// tracer is the thread that traces it (task->parent; nil: untraced),
	// traceSeq its place on the tracer's ptraced list; seized is
	// PT_SEIZED and ptOpts the PTRACE_O_* options. ptStop is the ptrace
	// stop it sits in (TASK_TRACED) and exitCode the task's exit_code in
	// it: what the tracer's wait reports (0 once reported) and, in a
	// signal-delivery stop, the signal it goes on with. trapPending is
	// JOBCTL_TRAP_STOP|JOBCTL_TRAP_NOTIFY; sigPrivate and sigShared the
	// signals queued while traced (task->pending, signal->shared_pending).
	tracer                *task
	traceSeq              int
	seized                bool
	ptOpts                uint64
	ptStop                int
	exitCode              int
	trapPending           bool
	sigPrivate, sigShared uint64
	// shared holds the signals sent to the process that every thread
	// blocks (signal->shared_pending, signal_mask.go).
	shared queue
	// stopDequeued is JOBCTL_STOP_DEQUEUED: set by a signal-delivery
	// stop (ptrace_signal), cleared by SIGCONT; a stop signal the tracer
	// passes on stops the process only while it is set (do_signal_stop).
	stopDequeued bool
}

// Model is the whole system.
type Model struct {
	cfg      Config
	nss      []*namespace
	root     *namespace
	init     *task
	tasks    map[int]*task  // findable tasks by root tid
	nproc    map[uint32]int // RLIMIT_NPROC count per real uid (uid 0 not counted)
	nthreads int            // tasks not yet released
	queue    []*task        // killed threads whose exit has yet to run
	stoppers []*process     // processes with stop signals yet to act on
	seq      int            // hands out task serials and group join times
	zappers  []*process     // namespace inits waiting for their namespace to empty
	// hits counts how often each notable rule fired, so that a test can
	// report what its runs exercised.
	hits map[string]int

	// PdeathDenied counts parent-death signals that check_kill_permission
	// refused: the exiting parent may not signal the child.
	PdeathDenied int
}

// New creates a model whose root namespace holds init (pid 1, uid 0 with
// every capability, leading its own session and process group).
func New(cfg Config) *Model {
	if cfg.PIDMax == 0 {
		cfg.PIDMax = defaultPIDMax
	}
	m := &Model{cfg: cfg, tasks: map[int]*task{}, nproc: map[uint32]int{}, hits: map[string]int{}}
	m.root = m.newNamespace(nil, cfg.PIDMax)
	p, _ := m.allocPID(m.root)
	t := &task{pid: p, creds: Creds{CapEffective: allCaps, CapPermitted: allCaps}, serial: m.next()}
	pr := &process{leader: t, threads: []*task{t}, ns: m.root, sighand: &sighand{},
		rlim: defaultRLimits(), unkillable: true, live: 1, pgrp: p, sess: p, joined: m.next()}
	p.pgrps, p.sesses = 1, 1
	t.proc = pr
	p.task = t
	m.root.reaper = t
	m.init = t
	m.tasks[p.nrs[0]] = t
	m.nthreads = 1
	return m
}

// defaultRLimits mirrors the kernel package's init limits (INIT_RLIMITS,
// with RLIMIT_NPROC unlimited).
func defaultRLimits() [nrLimits]RLimit {
	var l [nrLimits]RLimit
	for i := range l {
		l[i] = RLimit{RLimInfinity, RLimInfinity}
	}
	l[unix.RLIMIT_STACK] = RLimit{8 << 20, RLimInfinity}
	l[unix.RLIMIT_CORE] = RLimit{0, RLimInfinity}
	l[unix.RLIMIT_NOFILE] = RLimit{1024, 4096}
	l[unix.RLIMIT_MEMLOCK] = RLimit{8 << 20, 8 << 20}
	l[unix.RLIMIT_MSGQUEUE] = RLimit{819200, 819200}
	l[unix.RLIMIT_NICE] = RLimit{0, 0}
	l[unix.RLIMIT_RTPRIO] = RLimit{0, 0}
	return l
}

func (m *Model) newNamespace(parent *namespace, pidMax int) *namespace {
	ns := &namespace{id: len(m.nss), parent: parent, pidMax: pidMax, pids: map[int]*pid{}}
	if parent != nil {
		ns.level = parent.level + 1
	}
	m.nss = append(m.nss, ns)
	return ns
}

// allocPID is alloc_pid: one number per level, innermost first, each by
// idr_alloc_cyclic in [pid_min, pid_max).
func (m *Model) allocPID(ns *namespace) (*pid, error) {
	p := &pid{ns: ns, nrs: make([]int, ns.level+1)}
	undo := func(upto *namespace) {
		for at := ns; at != upto; at = at.parent {
			delete(at.pids, p.nrs[at.level])
		}
		// A failed first allocation resets the new namespace's cursor.
		if len(ns.pids) == 0 && !ns.disabled {
			ns.cursor = 0
		}
	}
	for at := ns; at != nil; at = at.parent {
		min := 1
		if at.cursor > reservedPIDs {
			min = reservedPIDs
		}
		nr := at.findFree(max(min, at.cursor))
		if nr < 0 && max(min, at.cursor) > min {
			nr = at.findFree(min)
		}
		if nr < 0 {
			undo(at)
			return nil, unix.EAGAIN
		}
		at.pids[nr] = p
		at.cursor = nr + 1
		p.nrs[at.level] = nr
	}
	if ns.disabled {
		undo(nil)
		return nil, unix.ENOMEM
	}
	return p, nil
}

// findFree returns the first free number in [from, pid_max), or -1.
func (ns *namespace) findFree(from int) int {
	for nr := from; nr < ns.pidMax; nr++ {
		if ns.pids[nr] == nil {
			return nr
		}
	}
	return -1
}

// putPID frees p's numbers once nothing uses it any more (free_pid).
func (m *Model) putPID(p *pid) {
	if p.task != nil || p.pgrps > 0 || p.sesses > 0 {
		return
	}
	for at := p.ns; at != nil; at = at.parent {
		if at.pids[p.nrs[at.level]] == p {
			delete(at.pids, p.nrs[at.level])
		}
	}
}

// lookup finds a task by its number in ns (find_task_by_pid_ns).
func (ns *namespace) lookup(nr int) *task {
	if p := ns.pids[nr]; p != nil {
		return p.task
	}
	return nil
}

// next returns the next value of the model's sequence counter.
func (m *Model) next() int {
	m.seq++
	return m.seq
}

func (m *Model) task(tid int) *task {
	return m.tasks[tid]
}

// TaskInfo is what the model exposes about one findable task.
type TaskInfo struct {
	Tid, Tgid  int   // root-namespace ids
	ParentTid  int   // root tid of real_parent, 0 for the root init
	PPid       int   // root tgid of real_parent, 0 for the root init
	Running    bool  // not yet exiting
	Zombie     bool  // the task is EXIT_ZOMBIE
	PIDs       []int // the task's tid at each namespace level, root first
	NSID       int   // the namespace the task lives in, by creation order
	Getpid     int
	Gettid     int
	Getppid    int
	Getpgrp    int
	Getsid     int
	Pdeath     int
	UID, EUID  uint32
	IsLeader   bool
	Subreaper  bool
	ExitSignal int // the process's exit signal
	Nice       int
	Stopped    bool // the process is stopped or about to stop
}

// Tasks returns the root tids of every findable task (running, exiting or
// zombie), sorted.
func (m *Model) Tasks() []int {
	out := make([]int, 0, len(m.tasks))
	for tid := range m.tasks {
		out = append(out, tid)
	}
	sort.Ints(out)
	return out
}

// Running returns the root tids of the tasks that can make calls, sorted.
func (m *Model) Running() []int {
	var out []int
	for _, tid := range m.Tasks() {
		if m.tasks[tid].state == running {
			out = append(out, tid)
		}
	}
	return out
}

// Info describes a findable task; ok is false if tid names none.
func (m *Model) Info(tid int) (TaskInfo, bool) {
	t := m.tasks[tid]
	if t == nil {
		return TaskInfo{}, false
	}
	pr := t.proc
	ns := pr.ns
	in := TaskInfo{
		Tid: tid, Tgid: pr.leader.pid.nrs[0], Running: t.state == running, Zombie: t.state == zombie,
		PIDs: append([]int(nil), t.pid.nrs...), NSID: ns.id,
		Getpid: pr.leader.pid.nrIn(ns), Gettid: t.pid.nrIn(ns),
		Getpgrp: pr.pgrp.nrIn(ns), Getsid: pr.sess.nrIn(ns), Pdeath: t.pdeath,
		UID: t.creds.UID, EUID: t.creds.EUID, IsLeader: pr.leader == t, Subreaper: pr.isSub,
		ExitSignal: pr.exitSignal, Nice: t.nice, Stopped: pr.stopped || pr.stopPending != 0 || pr.ptStop != ptRunning,
	}
	if p := pr.parent; p != nil {
		in.ParentTid = p.pid.nrs[0]
		in.PPid = p.proc.leader.pid.nrs[0]
		in.Getppid = p.proc.leader.pid.nrIn(ns)
	}
	return in, true
}

// Namespaces returns how many pid namespaces have been created (ids are
// 0..n-1 in creation order, 0 the root).
func (m *Model) Namespaces() int { return len(m.nss) }

// Allocated returns how many pids namespace id holds (pid_allocated).
func (m *Model) Allocated(id int) int { return len(m.nss[id].pids) }

// ChildReaper returns the root tid of namespace id's child reaper, 0 if
// it has none that is still findable.
func (m *Model) ChildReaper(id int) int {
	r := m.nss[id].reaper
	if r == nil || m.tasks[r.pid.nrs[0]] != r {
		return 0
	}
	return r.pid.nrs[0]
}

// Lookup returns the root tid of the task whose tid is nr in namespace id,
// or 0.
func (m *Model) Lookup(id, nr int) int {
	if t := m.nss[id].lookup(nr); t != nil {
		return t.pid.nrs[0]
	}
	return 0
}

// NPROC returns how many tasks are charged to uid for RLIMIT_NPROC.
func (m *Model) NPROC(uid uint32) int { return m.nproc[uid] }
