// Package check is tasklist's race checker: it runs randomized concurrent
// schedules of system calls on the kernel package under a lock plan
// (package plan) and checks what they did three ways. It is what
// `tasklist check` runs.
//
//	rep, err := check.Run(ctx, check.Options{Plan: p, Duration: time.Minute})
//	if rep.Violation != nil {
//		fmt.Print(rep.Violation.Message, rep.Violation.History())
//		rep.Violation.WriteHTML("violation.html")
//	}
//
// # Rounds
//
// A run is a sequence of rounds, each drawn from a seed. A round builds a
// fresh kernel under the plan and makes a setup one call at a time: two
// sessions of process groups with distinct nice values, some threads,
// parents with a child that will PTRACE_TRACEME, semaphore sets. Then the
// burst:
//
//   - races, aimed at where the unsafe toggles break, each a pair of
//     goroutines started at the same instant (they spin until both run):
//     a parent's exit against its child's PTRACE_TRACEME (all pairs at
//     once, so that the exits contend for init, which adopts the
//     children: zhang-v1); a process's move out of its group against a
//     PRIO_PGRP get/setpriority walk of that group (pgrp-walk-unlocked);
//     once a sleeper is seen asleep in a semop, the removal of its set
//     against a semop that would wake it, which must not succeed on the
//     removed set while the sleeper fails with EIDRM; the set is then
//     made again under its key (sem-perm-no-revalidate). The races run
//     before the workers, with the processors to themselves, each pair's
//     sides spinning until both run and starting at offsets of a few
//     microseconds drawn from the seed;
//   - Options.Workers goroutines, each owning some of the setup's
//     processes (a task makes one call at a time), making random calls:
//     clone, fork and threads, exit and exit_group, wait4 and waitid with
//     WNOHANG, setpgid, setsid, kill with signals that neither kill nor
//     stop, get/setpriority of every which, semop, semtimedop, semctl
//     (GETALL, SETVAL, IPC_RMID) and semget.
//
// Each call's invocation and response are stamped on one logical clock.
// After the burst every set is removed (which must wake every sleeper) and
// Kernel.Quiesce waits for asynchronous work; then the round is checked:
//
//  1. Kernel.CheckInvariants;
//  2. linearizability, with porcupine, of the burst's history against the
//     sequential reference model (internal/refmodel for the task calls, a
//     model of ipc/sem.c here for the semaphore calls), ending with an
//     observation of the table (parents, groups, sessions, nice values,
//     tracers) that catches effects lost or misplaced;
//  3. lock order, with lockstat's checker on and its violations collected;
//
// and a call that does not return within a generous bound, or a semop
// still asleep after every set was removed, is a violation too.
//
// The semaphore model knows a sleeper is queued once it was seen asleep
// (an operation of its own, over the interval from the semop's start to
// the sighting): from then on the call that lets it proceed completes it,
// as update_queue does, and a removal fails it with EIDRM.
//
// Calls whose effects Linux runs after the call returns (a fatal signal's
// exit, a stop) are not made, since the model applies a call's effects at
// once. Linux's own non-atomic step that the burst can meet is modelled: a
// clone copies its caller's nice value before it links the child
// (dup_task_struct, then attach_pid), so each clone is checked as two
// operations over the same interval.
//
// # Partitions
//
// A history is split into partitions whose calls commute, which porcupine
// checks separately: the task calls of the workers, of each race (each
// race has tasks of its own and an observation of them), and the calls on
// each family of semaphore sets (one key's sets, or one private set). The
// workers' processes run as a user of their own, so that none of their
// calls, not even kill(-1) or PRIO_USER, reaches a race's tasks, which are
// root's; the workers' semaphore calls are made by root processes of
// their own.
//
// # Violations
//
// A violation is shrunk: the failing round's schedule is run again with
// less in it (without the workers, without the races, one phase of races,
// without a goroutine or a step), each candidate several times, since an
// interleaving cannot be replayed; the failing round with the fewest calls
// is reported. Violation.History prints it, Violation.WriteHTML writes
// porcupine's visualisation.
//
// A seed replays a run's rounds (the same setups and calls for each
// goroutine); the interleavings differ from run to run.
//
// # Passing
//
// A run passes (Report.Passed) only if it checked at least one round (the
// first runs whatever the duration), found nothing, and porcupine decided
// every round: a round it could not decide in time, which grows likelier
// past some tens of workers, is neither passed nor failed. A run ended by
// its context drops the round under way at once, during its setup, its
// burst, its check or the shrinking of a violation, and says so.
//
// Run sets lockstat's checking and reporter for its duration; runs must not
// overlap.
package check
