package kernel

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
	"tasklist/lockstat"
)

// Process exit states, as seen by the parent (exit_state of the leader).
const (
	procAlive  int32 = iota
	procZombie       // notified: the parent's wait may claim it
	procDead         // claimed by a waiter or autoreaped
)

// Wait classes: a child is waited for by default when its exit signal is
// SIGCHLD, with __WCLONE otherwise (eligible_child).
const (
	classSIGCHLD = 0
	classClone   = 1
)

// Task is one thread: a schedulable entity with its own pid (tid).
type Task struct {
	k  *Kernel
	tg *ThreadGroup
	// pid is this thread's pid (its tid in every namespace level). It
	// changes once at most: a non-leader's exec takes the leader's
	// (exchange_tids).
	pid atomic.Pointer[PID]

	// state is one of the task states; transitions out of running happen
	// under tg.mu, the claim of a zombie leader by CAS on tg.exitState.
	state stateWord

	// exitCode is the status word of this thread's own exit.
	// +checklocks:tg.mu
	exitCode int32
	// nrChildren counts the processes whose parent is this thread; they
	// sit on the process's children list. Written under tg.mu, read
	// without it.
	// +checkatomic
	nrChildren atomic.Int32
	// flags holds the thread's one-bit states that are read without a
	// lock (taskFlags).
	flags taskFlags
	// killPending is set when the thread has been sent SIGKILL (or its
	// group is exiting). killWoken is set once the kill has woken the
	// thread (markKilledLocked, wakeKilledLocked): dying (below) is
	// closed and an interruptible call interrupted. A kill that comes out
	// of another task's exit step (an exitBatch) wakes the thread only
	// when the step is over, as Linux's killed task runs only once the
	// section that killed it has dropped tasklist_lock.
	// +checklocks:tg.mu
	killPending bool
	// +checklocks:tg.mu
	killWoken bool
	// intrArmed is set while the thread sleeps in an interruptible call
	// (wait4, waitid, semop); intr (below), made on first use, is closed
	// when a signal interrupts that sleep, and intrSig records which one
	// until the call takes it (signal_intr.go).
	// +checklocks:tg.mu
	intrArmed bool
	// userShard is the shard of its user's member lists the task sits in,
	// fixed at clone.
	userShard uint8
	// +checklocks:tg.mu
	intrSig int32
	// childSeq numbers this thread's children in the order they joined
	// its children list.
	// +checklocks:tg.mu
	childSeq uint64
	// ready holds, per wait class, this thread's zombie children that
	// wait can report, in children-list order; jobs those with a stop or
	// a continue to report.
	// +checklocks:tg.mu
	ready [2]readyQueue
	// +checklocks:tg.mu
	jobs [2]jobQueue
	// threadLink is guarded by tg.mu, through the thread list.
	threadLink link[Task]
	// dying, when not nil, is closed once the kill has woken the thread
	// (killWoken); blocking calls select on it. It is made on first use.
	// +checklocks:tg.mu
	dying chan struct{}
	// +checklocks:tg.mu
	intr chan struct{}

	// sleepingOn holds the channels a blocking wait in progress sleeps on.
	sleepingOn sleepSlot

	// ipcNS is the task's IPC namespace; semUndo its semaphore undo list,
	// nil until first used or shared.
	ipcNS   atomic.Pointer[sem.Namespace]
	semUndo atomic.Pointer[sem.UndoList]

	creds        atomic.Pointer[Creds]
	nice         atomic.Int32
	pdeathSignal atomic.Int32
	// nsForChildren is the pid namespace new children are created in:
	// the task's own, or the one made by unshare(CLONE_NEWPID).
	nsForChildren atomic.Pointer[PIDNamespace]
	// user is the User of the task's real uid: the task is on its member
	// list and charged to it for RLIMIT_NPROC. It changes only under
	// that user's and the next one's locks.
	user atomic.Pointer[User]
	// userLink is guarded by the user's mu, through its member list.
	userLink seqLink[Task]
	// serial orders the task among all tasks by creation (the root pid
	// level's allocation sequence): Linux's task list order.
	serial uint64
	// started is the monotonic time of the task's clone; its release
	// mixes the runtime since then into the entropy pool.
	started int64

	// ptrace (ptrace.go): Linux traces threads, one by one.
	tracerView
	// vforkDone, set for a CLONE_VFORK child, is closed when it execs or
	// exits: its parent waits for that.
	vforkDone atomic.Pointer[chan struct{}]
	// The thread's own ptrace state: its PTRACE_O_* options, the signals
	// it will stop for (bit sig-1), sent to the thread itself
	// (tracePending: its private queue) or to its process (traceShared:
	// signal->shared_pending, dequeued after the private ones), the ptrace
	// stop it is in (its code; 0 when running), the code of a ptrace_event
	// stop it owes (0: none).
	// +checklocks:tg.mu
	ptraceOptions uint64
	// +checklocks:tg.mu
	tracePending uint64
	// +checklocks:tg.mu
	traceShared uint64
	// jobctl is the thread's job-control and ptrace-stop state
	// (jobctl.go), guarded by its process's lock.
	// +checklocks:tg.mu
	jobctl jobctlBits
	// nrTracees counts the threads this thread traces; written under
	// its process's lock, read without it by exit_ptrace's fast path.
	nrTracees atomic.Int32
	// traceStop and eventOwed (below) are the ptrace stop the thread is in
	// and the ptrace_event stop it owes, as above.
	// +checklocks:tg.mu
	traceStop int32
	// sig is the thread's signal mask and queue (signal_mask.go), nil
	// until it first blocks a signal.
	// +checklocks:tg.mu
	sig *sigState
	// +checklocks:tg.mu
	eventOwed int32
	// files is the task's descriptor table (fdtable.go), nil while it has
	// none. Only the task itself changes it (clone, exec, exit, unshare);
	// it is atomic for the runners and checks that read it.
	files atomic.Pointer[FDTable]
}

func threadLinkOf(t *Task) *link[Task] { return &t.threadLink }

// taskFlags is a thread's word of one-bit states read without a lock;
// each bit says who writes it.
type taskFlags struct{ w atomic.Uint32 }

const (
	// flagChildrenClosed is set, under tg.mu, when the thread's exit has
	// handed its children to a reaper; nothing may be adopted by it
	// afterwards.
	flagChildrenClosed uint32 = 1 << iota
	// flagGroupDead is set on the thread whose exit ended its process
	// (the last live thread: group_dead in do_exit).
	flagGroupDead
	// flagExitEventDue is set while an exiting thread whose tracer asked
	// for PTRACE_O_TRACEEXIT has not reached that stop yet: do_exit stops
	// there before exit_signals sets PF_EXITING, so until then the
	// thread can still adopt its siblings' children (find_alive_thread).
	// It is set under tg.mu; clearing it needs no lock, as the thread's
	// own exit_notify takes tg.mu after it and hands on what it adopted.
	flagExitEventDue
	// flagNprocExceeded is PF_NPROC_EXCEEDED: a change of real uid found
	// the new user over the task's RLIMIT_NPROC (flag_nproc_exceeded),
	// and the next execve fails with EAGAIN while it still is. A fork
	// inherits it; a fork that passes the limit check clears the
	// caller's.
	flagNprocExceeded
	// flagInCall is set while the thread is inside a call that a kill
	// ends only on its way out (call.go): the thread's exit then waits
	// for the call to return.
	flagInCall
)

func (f *taskFlags) has(bit uint32) bool { return f.w.Load()&bit != 0 }

// swap sets bit to on and reports whether it was set before.
func (f *taskFlags) swap(bit uint32, on bool) bool {
	if on {
		return f.w.Or(bit)&bit != 0
	}
	return f.w.And(^bit)&bit != 0
}

func (f *taskFlags) set(bit uint32, on bool) { f.swap(bit, on) }

// tracerView is the tracer's view of a traced thread: its tracer, its
// place on the list of the tracer's process, the stop the tracer's wait
// may still report and an exit that waits for that wait. As a child's
// parentView is by its parent's, it is guarded by the tracer's process
// lock, tracer.Load().tg.mu, which checklocks cannot name: the helpers
// that touch the view assert that lock (assertTracerLocked).
type tracerView struct {
	// tracer is the thread tracing this one (ptrace's task->parent), nil
	// if none. It is atomic so that the thread reads it without a lock;
	// it is set with the tracer's and this thread's process locks held
	// and cleared under the tracer's.
	tracer    atomic.Pointer[Task]
	traceLink link[Task]
	// traceReport is the code of a ptrace stop the tracer's wait may
	// still report (0: none).
	traceReport int32
	// traceZombie is set while the thread's exit waits for the tracer's
	// wait (C11).
	traceZombie bool
}

// assertTracerLocked reports, while lock checking is on, a caller that
// does not hold the lock of the tracer's process, which guards the view
// (lockdep_assert_held); it costs an atomic load otherwise. An untraced
// thread's view has no guard.
func (v *tracerView) assertTracerLocked() {
	if lockstat.Checking() {
		assertLockOf(&v.tracer)
	}
}

// assertLockOf is the assertion of assertTracerLocked and
// assertParentLocked, out of line so that they inline to their test of
// lockstat.Checking: it reports a caller that does not hold the process
// lock of the thread p points to. When p points to none (no parent, no
// tracer), no lock is asked for.
func assertLockOf(p *atomic.Pointer[Task]) {
	if t := p.Load(); t != nil {
		t.tg.mu.AssertHeld()
	}
}

// ThreadGroup is a process: the threads that share a tgid, signal state
// and a parent.
type ThreadGroup struct {
	k  *Kernel
	mu lockstat.Mutex
	// serial orders processes for locking: a parent's serial is lower than
	// its children's.
	serial uint64
	// ns is the pid namespace the process lives in (its innermost level).
	ns *PIDNamespace
	// sighand is the signal handler table, shared with CLONE_SIGHAND;
	// exec gives the process a private one (unshare_sighand).
	sighand atomic.Pointer[SignalHandlers]
	// ownSighand is the table a process made without CLONE_SIGHAND
	// starts with (sighand points to it), allocated with the process. A
	// process that shares it keeps this one reachable.
	ownSighand SignalHandlers

	// leader is the thread whose pid is the tgid.
	leader atomic.Pointer[Task]

	// +checklocks:mu
	threads ilist[Task]
	// soleThread is the only thread on threads when there is one, else
	// nil; it changes with the list, under mu. A walk over a group's
	// processes visits a single-threaded process through it without the
	// process's lock, as Linux's walks take none (RCU).
	soleThread atomic.Pointer[Task]
	// currTarget is signal->curr_target, where complete_signal starts
	// looking for a thread that wants a signal the one it was sent
	// through does not (nil: the head of the thread list).
	// +checklocks:mu
	currTarget *Task
	// liveThreads counts threads not yet exiting (signal->live).
	// +checklocks:mu
	liveThreads int32
	// unkillable is SIGNAL_UNKILLABLE: the process is a namespace init.
	unkillable bool
	// pgrpShard is the shard of every group's members the process sits
	// in (pgrpMembers).
	pgrpShard uint8
	// zapping is set while the process, a namespace init, is killing its
	// namespace (zap_pid_ns_processes): its zombie children are reaped at
	// once.
	// +checklocks:mu
	zapping bool
	// groupExiting is SIGNAL_GROUP_EXIT; groupExitCode (below) its
	// status.
	// +checklocks:mu
	groupExiting bool
	// groupExitMark publishes SIGNAL_GROUP_EXIT with its status, for
	// readers that may not take mu: status | groupExitSet, 0 until then
	// (markGroupExit, groupExitStatus). It is set when a group exit
	// starts and when the last thread exits.
	groupExitMark atomic.Int32
	// groupExitCode is SIGNAL_GROUP_EXIT's status (groupExiting).
	// +checklocks:mu
	groupExitCode int32
	// exitStatus is what wait reports, fixed when the last thread exits.
	// +checklocks:mu
	exitStatus int32
	// leaderNotifyClaimed is set by the one thread that notifies the
	// parent about the zombie leader once the group is empty.
	// +checklocks:mu
	leaderNotifyClaimed bool

	// Job control (signal->flags, group_exit_code and the pending stop
	// signals of Linux's signal_struct). stopped is SIGNAL_STOP_STOPPED;
	// stopCode the stop signal wait may still report (0 once reported);
	// stopSig the signal of the group stop in effect (what traced threads
	// report when they trap for it); continued is SIGNAL_STOP_CONTINUED, a
	// continue wait may still report: set under mu, consumed by a
	// compare-and-swap, since a tracer's wait, which may not take mu,
	// consumes it too. stopPending holds default-action stop signals not
	// yet acted on, pendingSigs the signals that arrived while stopped;
	// both are bit sets, bit sig-1.
	// +checklocks:mu
	stopped bool
	// +checklocks:mu
	stopCode int32
	// +checklocks:mu
	stopSig int32
	// stopWaiting counts the threads, traced ones and ones woken from an
	// interruptible call, that have yet to take part in the group stop in
	// effect (group_stop_count): the parent hears of the stop once it
	// reaches zero.
	// +checklocks:mu
	stopWaiting int32
	continued   atomic.Bool
	// +checklocks:mu
	stopPending uint64
	// +checklocks:mu
	pendingSigs uint64
	// resumeCh, when not nil, is closed once the process is neither
	// stopped nor about to stop; calls of its threads sleep on it.
	// +checklocks:mu
	resumeCh chan struct{}

	// children are the children of all the process's threads; each
	// child's parent field says which thread it belongs to.
	// +checklocks:mu
	children ilist[ThreadGroup]
	// nrChildren counts the children per wait class.
	// +checklocks:mu
	nrChildren [2]int32
	// nrZombies counts, per wait class, the children on the threads'
	// ready queues.
	// +checklocks:mu
	nrZombies [2]int32
	// waiters are the threads of the process asleep in wait4 or waitid
	// (wait_chldexit), each woken only by news of a task it waits for
	// (wait_queue.go).
	// +checklocks:mu
	waiters []queuedWait

	rlimits atomic.Pointer[rlimitTable]
	pgrp    atomic.Pointer[ProcessGroup]
	// execSeq counts execs (self_exec_id); execed is set by the first
	// (PF_FORKNOEXEC cleared).
	execSeq atomic.Uint32
	execed  atomic.Bool
	// nonDumpable is the mm's dumpable flag cleared (SUID_DUMP_DISABLE):
	// set by a change of effective ids, inherited by fork, reset by an
	// exec whose real and effective ids agree.
	nonDumpable atomic.Bool
	// nrTraced counts this process's threads that are traced, so that a
	// signal to a process with none skips looking for a tracee thread.
	nrTraced          atomic.Int32
	isChildSubreaper  atomic.Bool
	hasChildSubreaper atomic.Bool
	// mm is the address space the process's threads share with other
	// processes made with CLONE_VM (vfork included) until each execs or
	// its last thread exits; nil while nobody else has shared it, and
	// once let go.
	mm atomic.Pointer[addressSpace]
	// execTask is the thread whose exec is killing the others
	// (group_exec_task); execWait, when not nil, is closed when one of
	// them becomes a zombie or is released.
	// +checklocks:mu
	execTask *Task
	// +checklocks:mu
	execWait chan struct{}
	// execRequeued holds the signals (bit sig-1) that threads the exec
	// killed out of signal-delivery stops put back on the process's
	// queue; the exec'ing thread takes them once the exec is done.
	// +checklocks:mu
	execRequeued uint64
	// credGuardFree, when not nil, is closed when the exec in progress
	// ends (the release of signal->cred_guard_mutex), for attaches that
	// wait for it.
	// +checklocks:mu
	credGuardFree chan struct{}

	parentView

	// pgrpLink is guarded by the process group's locks (pgrpMembers);
	// joinSeq numbers the process's joining of its group, which orders
	// the group's walks, and is written with it.
	pgrpLink seqLink[ThreadGroup]
	joinSeq  uint64
	// sharedPending is signal->shared_pending for the signals every
	// thread blocks (signal_mask.go), nil until there is one.
	// +checklocks:mu
	sharedPending *sigQueue

	// tracees lists the threads that this process's threads trace
	// (ptrace.go).
	// +checklocks:mu
	tracees ilist[Task]
}

// parentView is the parent's view of a process: its parent thread, its
// place on that thread's children list and on its ready and job queues,
// and what its exit tells the parent. It is guarded by the parent's
// process lock, parent.Load().tg.mu, which checklocks cannot name, as it
// is reached through a pointer that reparenting changes: the helpers that
// touch the view assert that lock (assertParentLocked), and callers hold
// it as ptg.mu where ptg is the parent process.
type parentView struct {
	// parent is the parent thread (real_parent), nil for the root init
	// and the idle task. It is atomic so that getppid and lockParentOf
	// read it without a lock; a reparent holds the old and the new
	// parent's locks.
	parent atomic.Pointer[Task]
	// exitSignal is the signal sent to the parent on exit (0: none).
	exitSignal int32
	// parentExecSeq is the parent's execSeq when this process was made.
	parentExecSeq uint32
	// exitState is procAlive, procZombie or procDead; it is atomic for
	// readers without the parent's lock.
	exitState atomic.Int32
	// readyIdx is the process's index on its parent thread's ready queue,
	// jobIdx on its job queue; -1 when it is not on the queue.
	readyIdx, jobIdx int32
	// sibOrd is the process's place on its parent thread's children list.
	sibOrd      uint64
	siblingLink link[ThreadGroup]
}

func siblingLinkOf(tg *ThreadGroup) *link[ThreadGroup] { return &tg.siblingLink }

// assertParentLocked reports, while lock checking is on, a caller that
// does not hold the lock of the parent process, which guards the view
// (lockdep_assert_held); it costs an atomic load otherwise. The root
// init's view has no guard.
func (v *parentView) assertParentLocked() {
	if lockstat.Checking() {
		assertLockOf(&v.parent)
	}
}

// initLock sets up the process lock, keyed for lockstat by its serial:
// process locks nest in increasing serial (doc.go). The key is the serial
// plus one, since lockstat keeps key 0 for locks that never nest and the
// idle task's process has serial 0.
func (tg *ThreadGroup) initLock() { tg.mu.Init(threadGroupClass, tg.serial+1) }

// waitClass returns the wait class of a child with exit signal sig.
func waitClass(sig int32) int {
	if sig == int32(unix.SIGCHLD) {
		return classSIGCHLD
	}
	return classClone
}

// Kernel returns the kernel the task belongs to.
func (t *Task) Kernel() *Kernel { return t.k }

// ThreadGroup returns the task's process.
func (t *Task) ThreadGroup() *ThreadGroup { return t.tg }

// Leader returns the process's group leader.
func (tg *ThreadGroup) Leader() *Task { return tg.leader.Load() }

// Namespace returns the pid namespace the task lives in.
func (t *Task) Namespace() *PIDNamespace { return t.tg.ns }

// alive reports whether the task may still make calls.
func (t *Task) alive() bool { return t.state.Load() == taskRunning }

// Exited reports whether the task has begun exiting (or is gone).
func (t *Task) Exited() bool { return t.state.Load() >= taskExiting }

// PIDIn returns the task's tid as seen in ns, or 0 if it is not visible
// there (task_pid_nr_ns).
func (t *Task) PIDIn(ns *PIDNamespace) int { return t.pid.Load().nrIn(ns) }

// TGIDIn returns the task's process id as seen in ns, or 0.
func (t *Task) TGIDIn(ns *PIDNamespace) int { return t.tg.leader.Load().pid.Load().nrIn(ns) }

// Gettid returns the caller's thread id in its own namespace.
func (t *Task) Gettid() int { return t.pid.Load().nrIn(t.tg.ns) }

// Getpid returns the caller's process id (tgid) in its own namespace.
func (t *Task) Getpid() int { return t.TGIDIn(t.tg.ns) }

// Getppid returns the parent process's id as seen from the caller's
// namespace, or 0 when the parent lives outside it (a namespace init).
func (t *Task) Getppid() int {
	p := t.tg.parent.Load()
	if p == nil {
		return 0
	}
	return p.TGIDIn(t.tg.ns)
}

// Parent returns the parent thread (real_parent).
func (t *Task) Parent() *Task { return t.tg.parent.Load() }

// Tracer returns the thread that traces t (ptrace's task->parent), nil
// when t is not traced.
func (t *Task) Tracer() *Task { return t.tracer.Load() }

// Sleeping reports whether the task is blocked in wait4, waitid, semop or
// a vfork with no wake-up (a kill or an interrupting signal included)
// pending: it will not return until another task acts. Runners use it to
// tell a blocked background call from one still working.
func (t *Task) Sleeping() bool {
	s := t.sleepingOn.Load()
	if s == nil {
		return false
	}
	// A kill or a signal is a wake-up too: the call is about to return
	// EINTR, restart, or stop.
	select {
	case <-s.dying:
		return false
	case <-s.intr:
		return false
	default:
	}
	if s.pending != nil {
		return s.pending()
	}
	select {
	case <-s.wake:
		return false
	default:
		return true
	}
}

// sleep is what a blocking call sleeps on: its own kill channel and either
// its process's wait channel or, for a semaphore operation, a test of
// whether a waker has completed it.
type sleep struct {
	wake, dying, intr <-chan struct{}
	pending           func() bool
}

// dyingChanLocked returns the channel closed when the task is killed.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) dyingChanLocked() chan struct{} {
	if t.dying == nil {
		t.dying = make(chan struct{})
		if t.killWoken {
			close(t.dying)
		}
	}
	return t.dying
}

// assertProcessLocked reports, while lock checking is on, a caller that
// does not hold t's process lock (lockdep_assert_held); it costs a load of
// t.tg and an atomic load otherwise.
//
// It also tells checklocks what it cannot see in a loop over threads of a
// process whose lock the caller holds: that a thread's t.tg is that
// process. Called at the top of the loop body on a line marked
// +checklocksforce, it makes checklocks take t.tg.mu as held for the rest
// of the body, and lockstat checks that it is. The forced hold ends with
// the body: checklocks does not carry it round the loop, but would count
// it as one lock too many at a return, so such a body must neither return
// nor break out of the loop.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) assertProcessLocked() { t.tg.mu.AssertHeld() }

// markKilledLocked records a pending SIGKILL and, with wake, wakes the
// thread's blocking calls; without, the kill is part of an exit batch
// whose start wakes it (wakeKilledLocked).
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) markKilledLocked(wake bool) {
	if t.killPending {
		return
	}
	t.killPending = true
	if wake {
		t.wakeKilledLocked()
	}
}

// wakeKilledLocked is the wake-up of a pending kill (signal_wake_up with
// fatal set): dying is closed and an interruptible call interrupted, once.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) wakeKilledLocked() {
	if !t.killPending || t.killWoken {
		return
	}
	t.killWoken = true
	if t.dying != nil {
		close(t.dying)
	}
	t.interruptLocked(int(unix.SIGKILL))
}

// findAliveThreadLocked returns a thread of tg that is not exiting and can
// still adopt children (find_alive_thread), or nil. A thread whose exit
// waits at PTRACE_EVENT_EXIT, or is on its way to that stop, counts:
// do_exit stops there before exit_signals sets PF_EXITING.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) findAliveThreadLocked() (alive *Task) {
	for t := tg.threads.head; t != nil && alive == nil; t = t.threadLink.next {
		t.assertProcessLocked() // +checklocksforce: t is a thread of tg
		if (t.state.Load() == taskRunning || t.jobctl.has(jobctlExitHeld) || t.flags.has(flagExitEventDue)) && !t.flags.has(flagChildrenClosed) {
			alive = t
		}
	}
	return alive
}
