// Package kernel models the Linux process-lifecycle subsystem: tasks and
// thread groups, clone, exit and exit_group, zombies, wait4 and waitid,
// reparenting to subreapers and pid-namespace inits, pid namespaces,
// credentials, and the parts of signal handling that exit depends on. It
// reproduces Linux's observable behaviour (shared/spec/linux-semantics.md)
// without a lock over the whole table.
//
// Syscall-shaped methods take the calling task as receiver
// (parent.Clone(args), t.Wait4(ctx, pid, options)) and return
// syscall.Errno errors, so errors.Is(err, unix.ECHILD) works. A task that
// has exited can make no more calls: its methods fail with ESRCH.
//
// # Concurrency
//
// No lock guards the table. Each lock guards one object:
//
//   - ThreadGroup.mu guards one process: its thread list and live count,
//     its group-exit state, the children lists of all its threads, its
//     list of children with something to report to wait, and the
//     parent-side state of each of its children (parent pointer, exit
//     signal, zombie notification).
//   - SignalHandlers.mu serialises sigaction on one handler table, which
//     processes created with CLONE_SIGHAND share.
//   - ProcessGroup.mu and Session.mu guard a group's or session's member
//     list.
//   - pid.Allocator.mu guards one namespace level's pid bitmap and cursor.
//
// Reads take no lock: pids, parents, credentials, rlimits and signal
// handlers are atomics or immutable snapshots behind atomic pointers, and
// the garbage collector keeps what a lockless reader holds alive, as RCU
// does for Linux.
//
// # Lock order
//
// A lock may be taken while holding only locks that come before it here:
//
//  1. Session.mu, then ProcessGroup.mu (two groups in increasing creation
//     order, as setsid holds the old and the new one). Clone holds the
//     caller's group while it links the child to its parent, so that a
//     walk over the group either sees the child or runs before it exists.
//  2. ThreadGroup.mu, in increasing creation serial. A parent is created
//     before its children and a reaper (a subreaper or a namespace init) is
//     always an ancestor of the process whose children it adopts, so
//     "lower serial first" is the order in which reparenting needs them.
//     An operation that finds it needs a lower-serial lock while holding a
//     higher one drops what it holds, takes both in order and revalidates.
//  3. SignalHandlers.mu.
//  4. pid.Allocator.mu (a leaf).
//
// The lockstat package checks this order at run time in every test.
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
package kernel
