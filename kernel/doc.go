// Package kernel models the Linux process-lifecycle subsystem: tasks and
// thread groups, clone, exit and exit_group, zombies, wait4 and waitid,
// reparenting to subreapers and pid-namespace inits, pid namespaces,
// credentials, process groups and sessions, priorities, and signals as far
// as kill, job control and exit need them. It reproduces Linux's
// observable behaviour (docs/linux-semantics.md) without a lock
// over the whole table.
//
// Syscall-shaped methods take the calling task as receiver
// (parent.Clone(args), t.Wait4(ctx, pid, options)) and return
// syscall.Errno errors, so errors.Is(err, unix.ECHILD) works.
//
// A task that has exited makes no more calls. Precisely: once a task has
// begun exiting (Exited reports true: it called Exit or ExitGroup, or a
// fatal signal or another thread's exit_group or exec marked it, including
// while its tracer holds it at PTRACE_EVENT_EXIT), every method of Task
// with an error result fails with ESRCH, before it looks at its
// arguments; so it does for a zombie and for a reaped task. A call already
// in progress when its task is killed may still complete, or ends with
// EINTR (a blocking call) or ESRCH. A blocking call looks for what it
// waits for before it looks for the kill, where Linux's loop does (a
// wait reaps a child that is ready by then), and the killed task's exit
// runs once the call has returned, as Linux's task dies on its way back to
// user space (call.go). Methods without an error result are
// accessors, not calls: Getpid, Gettid, Getppid, Getpgrp, Getuid and the
// other id getters, Creds, PrctlGetChildSubreaper, PrctlGetPdeathsig,
// PIDIn, TGIDIn, Namespace, IPCNamespace, Parent, Exited, Stopped and
// Sleeping keep answering with the task's last state, and WaitRunnable
// returns at once unless the task's exit is held at PTRACE_EVENT_EXIT.
//
// Blocking methods (Wait4, Waitid, Semop, Semtimedop, WaitRunnable) take a
// context.Context whose end interrupts the call with EINTR, as a signal
// would. A nil context is context.Background: the call blocks until it
// completes or its task is killed.
//
// # Concurrency
//
// No lock guards the table. Each lock guards one object:
//
//   - ThreadGroup.mu guards one process: its thread list and live count,
//     its group-exit state, the children lists of all its threads, its
//     list of children with something to report to wait, the queue of
//     its threads asleep in wait, and the parent-side state of each of
//     its children (parent pointer, exit signal, zombie notification).
//   - SignalHandlers.mu serialises sigaction on one handler table, which
//     processes created with CLONE_SIGHAND share.
//   - ThreadGroup.mu also guards each of its threads' interrupt state
//     (signal_intr.go): whether it is in an interruptible call, the channel a
//     signal closes and the signal that closed it.
//   - ThreadGroup.mu also guards the process's job-control state (stopped,
//     the stop or continue its parent may still be told of, pending stop
//     and fatal signals), each of its threads' jobctl word (jobctl.go: the
//     stops it owes, the ptrace stop it is in) and its threads' job queues
//     of children with a stop or a continue to report.
//   - ProcessGroup.mu, a big-reader lock (a reader-writer lock per shard
//     of the member list, pgrp_lock.go), guards a group's member list;
//     Session.mu a session's list of groups. Walks that act on a group's
//     members (kill of a group, setpriority, the orphaned-group test) hold
//     its lock for writing, every shard, and so do setpgid and setsid, for
//     the old and the new group, so a walk never visits a process of
//     another group (seed 002, docs/seeds.md). A fork into the group and
//     a release hold for reading only the shard of the process that
//     created the member, so that the changes every process makes run side
//     by side, and change that shard of the member list under the shard's
//     own lock, which only they take; walks merge the shards by the
//     members' join order (pgrp_members.go). getpriority's PRIO_PGRP and
//     PRIO_USER walks take neither: they read the lists as they were at
//     one moment by their sequence counts (seqList in list.go), and lock
//     only when changes keep interrupting.
//   - A user's shard locks (userShard.mu, class User.mu) each guard one
//     of the user's lists of threads whose real uid is the user's; a
//     thread stays in the shard of the process that created it. A
//     setpriority PRIO_USER walk holds every shard's lock; setuid holds the
//     thread's shard in both users to move it.
//   - FDTable.mu guards one descriptor table's files (fdtable.go): the
//     pidfds a task, or the tasks that share the table through
//     CLONE_FILES, have open.
//   - pid.Allocator.mu orders changes of one namespace level's pid_max;
//     allocation and freeing take no lock: an allocation claims its
//     number by moving the level's cursor, with an add or a
//     compare-and-swap (kernel/pid).
//
// Reads take no lock: pids, parents, credentials, rlimits and signal
// handlers are atomics or immutable snapshots behind atomic pointers, and
// the garbage collector keeps what a lockless reader holds alive, as RCU
// does for Linux.
//
// Guarded fields carry +checklocks annotations, which gVisor's checklocks
// verifies. Two views of a process are guarded by another process's lock,
// reached through a pointer that changes, which the analyzer cannot name:
// a child's parentView by its parent's lock, a traced thread's tracerView
// by its tracer's. The helpers that touch them assert that lock at run
// time with lockstat's AssertHeld, as Linux's lockdep_assert_held does
// (assertParentLocked, assertTracerLocked). Nor can checklocks see that a
// thread met on the thread list of a locked process belongs to it: such a
// loop asserts the thread's process lock (assertProcessLocked) on a line
// marked +checklocksforce, and is checked from there on.
//
// # Lock order
//
// A lock may be taken while holding only locks that come before it here:
//
//  0. A lock plan's table lock (package plan), only under a plan that
//     models a design with one: it is taken at the plan's sites before
//     any other kernel lock and dropped after the last, and sites never
//     nest, so release_task never runs inside another site's section
//     (what a section finds dead is released after it, as exit_notify
//     releases its dead list after write_unlock_irq). pid.Allocator.mu
//     and entropy's shard locks may be taken under it.
//  1. Session.mu, then ProcessGroup.mu, several groups in increasing
//     creation order, each group's shards in order (a reader holds one):
//     setsid holds the old and the new group, setpgid the
//     moved process's old group, the caller's and the target group (and
//     first the session's lock when it makes a group). Clone holds the
//     caller's group (for reading) while it links the child to its
//     parent, so that a walk over the group either sees the child or runs
//     before it exists.
//  2. ThreadGroup.mu, in increasing creation serial. A parent is created
//     before its children and a reaper (a subreaper or a namespace init) is
//     always an ancestor of the process whose children it adopts, so
//     "lower serial first" is the order in which reparenting needs them.
//     An operation that finds it needs a lower-serial lock while holding a
//     higher one drops what it holds, takes both in order and revalidates.
//     Linking a tracee to its tracer (ptrace.go) holds both processes'
//     locks, lower serial first, since the two need not be related; the
//     tracer's lock guards its tracee list and its view of each tracee,
//     the tracee's lock its own ptrace state.
//  3. SignalHandlers.mu, and a process group's shard locks (class
//     ProcessGroup.shard.mu), leaves that clone takes under the group's and
//     the parent's locks and a release under the group's.
//  4. User.mu: one user's shards in increasing order (a PRIO_USER walk),
//     or one shard of two users in increasing uid (setuid); nothing else
//     is taken while one is held.
//  5. pid.Allocator.mu (a leaf, taken only to change pid_max).
//  6. FDTable.mu, a leaf, taken with no other kernel lock held: a pidfd
//     is opened, closed or looked up, or a table copied, under it alone.
//
// entropy's shard locks are taken with no kernel lock held: a released
// task's runtime is mixed in after release_task's critical sections
// (seed 004), or inside its plan section under a plan that models Linux
// before that seed.
//
// The lockstat package checks this order at run time in every test.
//
// # Shared cache lines
//
// What each operation writes that another worker, running side by side
// on a process of its own, also writes, under tasklist's own locking and
// the default Config; a line two cores both write moves between them at
// every write, whether or not anyone waits. Reads of lines that change
// rarely (pid_max, the plan, kill(-1)'s registry, a parent's signal
// actions) are left out.
//
//   - Fork of a process: the pid cursor, one word, of the root namespace
//     and of every namespace the child is visible in. That is inherent: a
//     table that keeps Linux's global pid order has one cursor, which
//     every allocation moves. Besides it, the number's own slot in the
//     used bits and in the table (kernel/pid); those lines hold numbers
//     64 apart, which the cursor hands out 64 allocations apart, so a
//     line moves at most once per allocation of one of its numbers and
//     never while two workers each take one. Everything else the fork
//     writes is the forking process's own (its lock, children lists and
//     counts) or sharded by the creating process (its user's count and
//     member list, its group's lock and member list).
//   - Release of a process, by its parent's wait or by autoreap: the
//     number's slots again (a free writes nothing else in the space), and
//     the creator's shard of the user, of the group and of the entropy
//     pool. A release that empties its shard of a group whose leader has
//     left reads every shard's count.
//   - Exit and wait: the parent's lock, ready list and waiters: the
//     workers' own, unless the workload shares a parent.
//   - Thread spawn and the thread's exit and release: the cursor and the
//     number's slots; the process's lock, thread list and mm count, and
//     the creator's shards of the user and the entropy pool, all the
//     spawning worker's own.
//
// Exceptions, each of which the workload or the configuration chooses:
//
//   - Shards are picked by the creating process's serial modulo 8, so two
//     workers whose serials agree modulo 8 share their user, group and
//     entropy shards (workers forked one after another do not).
//   - Processes that share a parent, or threads of one process, share its
//     lock and lists, as they share the parent's siglock in Linux.
//   - Config.ThreadLimit puts a kernel-wide task count on every fork and
//     release (max_threads); RLIMIT_NPROC below infinity makes a fork of a
//     counted user read all of that user's shard counts.
//   - A kill(-1) in progress is told of every fork in its namespace.
//   - Lock statistics, when on, count in per-class stripes that locks
//     share by their address (lockstat).
//
// The benchmarks in shared_bench_test.go, kernel/pid and entropy measure
// each of these structures alone, at one and two goroutines.
//
// # Linearisation points
//
//   - A task is running once clone publishes it (CAS embryo→running under
//     the parent's ThreadGroup.mu); lookups never see an embryo (A15).
//   - A thread is exiting once it is marked so under its ThreadGroup.mu
//     (PF_EXITING); clone of a new thread and reparenting onto the group
//     check that state under the same lock.
//   - A process is a zombie for its parent once the notification adds it to
//     the parent's ready list under the parent's lock; a waiter claims it
//     with a CAS zombie→dead under the same lock, so exactly one waiter
//     wins (C9).
//   - Pids, users' counts and entropy are released after every critical
//     section (release_task's tail in Linux 6.15).
//   - A thread is traced once TRACEME, ATTACH or SEIZE links it under its
//     own process's and the tracer's lock; TRACEME, and a clone that
//     inherits its creator's tracer, link only to a tracer not yet marked
//     exiting under the tracer's lock, so a tracer's exit_ptrace, which
//     runs after that mark, sees every link (D10, seed 000).
//   - A process stops when its stop signal is acted on under its
//     ThreadGroup.mu (asynchronously after the kill, as Linux's target
//     acts on it when it next runs; Kernel.Quiesce waits for it); it
//     continues when SIGCONT is delivered under the same lock. A waiter
//     consumes a stop or continue report under the parent's and then the
//     child's lock, so each is reported once (C10).
package kernel
