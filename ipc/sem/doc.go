// Package sem models System V semaphores (Linux ipc/sem.c and the parts of
// ipc/util.c they use) with Linux's observable behaviour: semget, semop,
// semtimedop, semctl and SEM_UNDO, errnos included and checked in the order
// Linux checks them (docs/linux-semantics.md, section H).
//
// A [Namespace] is one IPC namespace's semaphore registry. Calls take a
// [Caller] that describes the calling process: its pid, its credentials and
// its [UndoList]. The package does not know about tasks; the kernel package
// builds a Caller for each call and owns the undo lists (one per process,
// shared by CLONE_SYSVSEM, released at exit).
//
// Errors are syscall.Errno values, so errors.Is(err, unix.EIDRM) works.
// Blocking operations take a context.Context; its cancellation plays the
// part of a signal and makes the call fail with EINTR. A nil context is
// context.Background.
//
// # Concurrency
//
// Linux's design is kept because it keeps the common case, a single-op
// semop, on one semaphore's cache lines:
//
//   - Id lookup takes no lock. A two-level table of atomic pointers indexed
//     by id&0x7fff holds the sets; the full id (sequence number included) is
//     compared, so a stale id fails with EINVAL. A set removed after the
//     lookup is seen as removed under its lock (EIDRM), as with Linux's
//     ipc_obtain_object_check followed by ipc_valid_object (seed 003, docs/seeds.md).
//   - Permission is checked before any set lock, on an immutable snapshot
//     of the set's ownership and mode that IPC_SET replaces. Under the lock
//     the snapshot pointer is compared again and the check redone if IPC_SET
//     ran meanwhile, so every operation (semop and semctl alike) is checked
//     against the permissions in force when it takes effect. Linux does not
//     revalidate.
//   - A single-op semop takes only its semaphore's lock (Sem.mu). Calls with
//     several operations ("complex" ones), semctl and exit-time undo take the
//     set lock (Set.mu) and put the set in global mode (sem_lock,
//     complexmode_enter): they announce it in Set.useGlobal, then lock and
//     unlock every semaphore once, so no single-op call that missed the
//     announcement is still inside. A single-op call that sees global mode
//     takes the set lock instead. The set leaves global mode after ten
//     global-lock releases in a row with no complex operation asleep
//     (USE_GLOBAL_LOCK_HYSTERESIS), so a mixed workload does not pay the
//     drain each time. A new set starts in global mode.
//   - FIFO between single-op and complex sleepers: while a complex sleeper
//     exists, every altering sleeper waits on the set's queue (merge_queues)
//     and the set stays in global mode; when the last complex sleeper
//     leaves, single-op sleepers return to their semaphores' queues
//     (unmerge_queues). In fine-grained mode the set's queues are therefore
//     empty, which is why a single-op call may skip them.
//   - Sleepers are completed by the waker: it applies the sleeper's
//     operations under the lock it holds, records the result in the
//     sleeper's status and collects the sleeper in a wake queue; the
//     sleepers are woken after every lock is released (wake_q). A woken
//     sleeper returns its status without retrying.
//
// # Locking designs
//
// A namespace made by [NewNamespaceLocking] locks its sets as a
// plan.SemLocking says, so that the designs the seed threads compare run on
// this code (package plan: the linux-2.6.35 and gvisor presets, the
// sem-lockless-perm and sem-perm-no-revalidate toggles). The design is
// copied into each set and read as fields: the zero value, the design
// above, pays a few byte loads and branches per call, no call and no
// allocation. Every
// safe design gives the same results; only how calls wait for each other
// changes.
//
//   - SetLockOnly (Linux before 3.10; gVisor): every call takes the set
//     lock. A set never leaves global mode, so no semaphore lock is ever
//     taken, not even by a drain. The queues are those of global mode, so
//     the FIFO order and every outcome are unchanged.
//   - PermUnderLock (Linux before seed 003: ipc_lock_check, then ipcperms
//     under the lock): the lookup is still lockless, since the set must be
//     found to be locked, but its validity and the permission check come
//     after the set lock is taken. Checks Linux makes between the
//     permission check and the lock (semctl's array, values and semnum)
//     are made under the lock in every design, so their order relative to
//     EACCES is Linux's in both. The errno of a call whose set was removed
//     after its lookup is EIDRM in every design, as in Linux today (Linux
//     before 3.10 said EINVAL): a plan changes no result.
//   - WakeAll (gVisor; needs SetLockOnly): gVisor wakes sleepers to retry
//     their operations themselves, which both costs a lock round trip per
//     sleeper and changes who is served first. To keep Linux's outcomes,
//     the waker still completes the sleepers that can proceed, in FIFO
//     order, under its lock; then it also wakes every other sleeper of the
//     set, on every change (a semop that altered a value, SETVAL, SETALL,
//     an exit's undo). Each such sleeper takes the set lock, finds that no
//     waker decided its outcome and sleeps again. That is gVisor's
//     thundering herd, at an upper bound (gVisor wakes only the sleepers of
//     semaphores whose value looks sufficient), without its reordering. A
//     task stays asleep for [Sleeper] throughout.
//   - NoRevalidate (unsafe, in a build with the tasklist_unsafe tag
//     only; seed 003's race, closed in Linux by
//     ipc_valid_object): a call that checked the set before locking it does
//     not check again under the lock, so one whose set IPC_RMID removed in
//     between acts on the removed set and may succeed where Linux fails it
//     with EIDRM. A semop that proceeds there returns 0 although the
//     sleepers its change would have completed were failed with EIDRM;
//     that pair of results is what a race checker can see. A call that
//     would sleep on a removed set fails with EIDRM instead, since nothing
//     would ever wake it, and undo entries are never attached to a removed
//     set: the race gives wrong answers, never a hang, and every memory
//     access stays under the set's lock.
//
// What guards what:
//
//   - Namespace.mu (ids->rwsem) guards key lookup, id allocation and the
//     namespace's counters; semget, IPC_SET and IPC_RMID hold it. Readers of
//     the id table take no lock.
//   - Set.mu (the kern_ipc_perm lock) guards the set's queues, its undo
//     entries and its complex-sleeper count, and in global mode (always,
//     under SetLockOnly) every semaphore of the set.
//   - Sem.mu guards one semaphore (value, last pid, otime, its queues and
//     the matching adjustment in every undo entry of the set) in
//     fine-grained mode. In global mode those fields belong to Set.mu
//     instead; checklocks cannot express that choice, so the functions that
//     run in either mode are marked +checklocksignore and say so.
//   - UndoList.mu guards one undo list's map from set to undo entry.
//
// # Lock order
//
// A lock may be taken while holding only locks that come before it here:
//
//  1. Namespace.mu.
//  2. Set.mu. Two sets' locks are never held together.
//  3. Sem.mu. At most one semaphore lock is held at a time: global mode
//     locks and unlocks them one by one. Never taken under SetLockOnly.
//  4. UndoList.mu (a leaf; taken under Set.mu, never with Sem.mu).
//
// The locking designs add no nesting: a sleeper woken under WakeAll takes
// its queue's lock holding nothing, as one leaving its queue does. The
// lockstat package checks this order at run time in every test.
//
// # Linearisation points
//
//   - A semop that proceeds without sleeping, a semctl and an exit-time undo
//     take effect under the lock they hold.
//   - A sleeping semop takes effect when a waker applies it under the
//     waker's lock; one that fails with EAGAIN (timeout) or EINTR does so
//     when it leaves its queue under the lock. A WakeAll wake-up that finds
//     no outcome takes no effect.
//   - A set is removed when IPC_RMID marks it deleted under Namespace.mu and
//     Set.mu, after failing every sleeper with EIDRM and detaching every
//     undo entry.
package sem
