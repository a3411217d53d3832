// Package replay replays real programs' process calls, recorded with strace, on the
// tasklist model, and compares every result with what the kernel returned: `tasklist trace`
// records, `tasklist replay` replays.
//
// # Recording
//
// Record runs a command under strace as
//
//	strace -f -q -ttt -T -X verbose -s 96 --decode-pids=pidns --seccomp-bpf -A -o FILE
//	       -e trace=TracedCalls -e signal=all -- CMD ARGS...
//
// one file in one global order, each line with its tid (-ff would lose the order), the exit
// lines kept (-q, not -qq), numbers printed beside their names, pids translated into
// strace's pid namespace. The file starts with a header of comment lines (WriteHeader): the
// recording process's nice value, ids, capability sets, resource limits and the kernel's
// release, which the traced process inherits.
//
// # Parsing
//
// Parse reads the header and strace's lines (ParseLine): complete calls, `<unfinished ...>`
// and `<... NAME resumed>` halves, `--- SIG {siginfo} ---`, `--- stopped by SIG ---`,
// `+++ exited with N +++`, `+++ killed by SIG (core dumped) +++`, `+++ superseded by execve
// in pid N +++`, results such as `= ? ERESTARTSYS`, with or without pid prefixes and time
// stamps. A line it cannot read is a SyntaxError, FILE:LINE: message.
//
// # Replay semantics
//
// The traced root is a child of the model's init, which stands for everything outside the
// trace: the root's real parent, group and session, and any reaper of its orphans, compare
// as init. The root starts from the header's nice value, ids and limits; a trace without a
// header gives them by its root's first reads (getpriority, getresuid, prlimit64).
//
// Calls are made in file order at their entry line through the scenario runner's Backend
// (package modelrun): in the background at an unfinished line, joined at its resumed line, so
// that the causal order of the trace holds on the model (a clone before its child's first
// line, a kill before its target's signal line, an exit before its +++ line, a child's +++
// before the wait that reports it). A task is its tid plus a generation, since tids are
// reused; a child whose first line comes before its creator's clone returns (a vfork child)
// is bound to the task the model's clone has made so far (modelrun's Made).
//
// Results compare as the scenario runners print them, with pids as task identities, never
// numbers: a pid names the trace's task whose tid it is, in the caller's pid namespace (as
// strace translated it, or as the clones there returned it), or init. Semaphore ids compare
// as the sets the trace's semget calls made; getpriority's raw 20-nice as the nice value;
// rt_sigaction's old action by its kind (SIG_DFL, SIG_IGN or a handler) and flags; a wait's
// status where strace decoded it, ptrace event bits included. A call that blocks on the model
// where the trace's returned prints "blocks"; a call the trace's task died in prints "done".
//
// Normalisation: fork, vfork, clone and clone3 are the scenario calls of those names (clone3
// into a cgroup is outside the model); a pidfd is named by the file the model's call opened,
// bound to the number the trace shows for it (pidfd_open's result, CLONE_PIDFD's parent_tid
// or pidfd field) in the task's table, which children copy, CLONE_FILES shares and exec
// empties, so pidfd_send_signal and waitid(P_PIDFD) are made with the file; glibc's
// semtimedop with no timeout is semop, a timeout is passed in milliseconds; prlimit64 on the
// caller is a read of the model's limit and setrlimit, of another task prlimit;
// rt_sigaction with a new action is sigaction, the handler's address HANDLER; rt_sigprocmask,
// rt_sigpending, rt_sigsuspend and rt_sigtimedwait are sigprocmask, sigpending, sigsuspend
// and sigtimedwait, with strace's signal sets and a timeout in milliseconds. Reads the
// scenario language has no call for (getuid and the other id reads, rt_sigaction with no new
// action, getrlimit, PR_GET_PDEATHSIG) read the model's task directly.
//
// A call interrupted by a signal (`= ? ERESTARTSYS` and its kin) is settled by what its task
// does next: the same call again (or restart_syscall) continues it, and its result is
// compared with the model's once it completes; a handler that returns with EINTR compares
// EINTR. Signals: one sent by a replayed kill or tgkill, a child's SIGCHLD, and the SIGHUP,
// SIGCONT and SIGKILL the kernel sends on an exit are the model's to send, and their lines
// are checked (a SIGCHLD's child has ended on the model too); any other (a timer, the
// terminal, a sender outside the trace, a call the model lacks such as tkill) is
// injected at its signal line by init. A `--- stopped by ---` line checks that the model's
// task is stopped, a +++ line that it has ended; the status it ended with is compared where a
// wait reports it, and at the end, for the tasks init reaps.
//
// The model completes an exit, and a kill's effect, as the call is made; the kernel lets
// other tasks run in between. A WNOHANG wait that found nothing in the trace, where the model
// would report a child whose +++ or stopped line comes later, raced that completion: it is
// counted outside the replay (the model is asked with WNOWAIT, which changes nothing) rather
// than made, which would reap the child early.
//
// After a disagreement its task is out of step: its later calls are still made, to keep the
// tasks around it in step, but counted "not compared", never as agreeing.
//
// # Counts
//
// Summary counts, per trace, the calls (a call and its restarts once), those compared,
// agreeing and disagreeing, those outside the model's scope by reason (memory, file and futex
// calls, an execve that failed on the file system, rt_sigreturn, whose result is the
// interrupted call's, prctl options and ptrace requests the process model has not), those
// the model lacks by reason (rt_sigqueueinfo, pidfd_getfd...: each a row of the call
// table, rows, to be changed when the model gains the call), those not compared after a
// divergence, and the +++ lines
// checked. WriteTable and WriteJSON print them.
//
// # A trace as a workload
//
// Compile (CompileFile) replays a trace once, as above, and keeps every call the replay
// made on the model, by the traced task that made it, with the model's result: a Program.
// A Runner replays the Program, pass after pass, on the tasks of one worker process of a
// model shared with other runners (`tasklist bench --workloads replay:FILE`, package
// workload), each traced task a goroutine, as fast as the trace's causal order allows. A call
// waits for the calls of other tasks that the trace puts before it and that touched a process
// it touches, on the replay's model: its caller's, the ones its pid arguments name, the
// children a wait may reap, and every process whose state a call changed (ended, stopped,
// continued, reparented) with its parent and children; the semaphores; or anything, for a
// call that acts on groups or on everything (a kill of a group or of -1, setpgid, setsid,
// PRIO_PGRP and PRIO_USER, ptrace, a subreaper). That keeps the edges the replay keeps by
// going in file order (a clone before its child's first call, a kill before what its target
// does next, an exit before the wait that reports it) and lets tasks that share nothing run
// side by side. A call left unfinished at its line counts as made, for the calls after it,
// once it sleeps, as on the replay. Every result is checked against the replay's; a call
// that changed nothing (a read, a WNOHANG wait that found nothing) and found the model
// behind is made again until it catches up, since the model ends a killed task, and stops
// one, on a goroutine of its own after the kill. A pass runs under an init of its own, the
// first process of a fresh pid namespace, as the replay's, whose exit at the end of the pass
// ends every task the trace left.
package replay
