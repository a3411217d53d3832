// Package kernelrun runs scenario files on the host Linux kernel: it is the scenario.Backend
// behind `tasklist run --kernel FILE`, the oracle the model is measured against. It shares no
// code with the model (tasklist/kernel), so that the two can disagree.
//
// # Tasks
//
// Every task of a scenario is a process or thread of a small C program, the agent
// (agent/agent.c, embedded and compiled with the host's cc into the user's cache directory,
// under a name that carries the source's hash). The runner starts the agent as init: pid 1 of
// a fresh pid and IPC namespace (CLONE_NEWPID|CLONE_NEWIPC), after setsid(), with
// PR_SET_PDEATHSIG set to SIGKILL, default signal dispositions, an empty signal mask, nice 0
// and no supplementary groups. Every other task is made by a scenario call of another task, so the namespace's pids are
// handed out exactly as the scenario asks: the first fork gets pid 2.
//
// The agent makes each call with a raw syscall instruction (clone and clone3 with a fresh stack
// for every child, exit, exit_group, wait4, waitid, per-thread setuid, rt_sigaction with its
// own restorer, ptrace, sem*, prlimit64, ...): raw clones share glibc's thread pointer, so the
// C library's errno and locks are not theirs to use, and what is measured is the kernel.
// HANDLER installs a handler that returns at once; signal() is rt_sigaction with no flags
// (no SA_RESTART), like sigaction(SIG, KIND, 0). clone(FLAGS) is clone(2) unless the flags do
// not fit its 32 bits or the exit signal cannot go in their low byte; then it is clone3
// (scenario.CloneCall). vfork is vfork(2), whose child the agent moves onto a stack of its own
// at once, as it does a clone child; clone3 gets a set_tid array and a CLONE_PIDFD slot of its
// own, apart from CLONE_PARENT_SETTID's.
// execve re-executes the agent (/proc/self/exe) with the number of its socket, and the new
// image resumes serving on it. SETALL's value list is an array that ends where an
// inaccessible page begins, so a list shorter than the set fails with EFAULT (as in the
// model) instead of passing whatever memory followed it.
//
// Every argument reaches the kernel as the full 64-bit register the scenario wrote: the kernel
// cuts each to its parameter's C type (an int pid or signal keeps its low 32 bits), as it does
// for any program.
//
// # Protocol
//
// Each task serves commands on its own AF_UNIX SOCK_SEQPACKET socket, one at a time: the runner
// sends one message of int64 words, [op, arguments...], with every task argument already turned
// into a pid as the caller sees it; the task makes the call and sends [msgReply, result or
// -errno, extra words...]. A message holds at most maxWords words: sembufs take three words
// each, semaphore values (SETALL's list, GETALL's reply) are packed four 16-bit values to a
// word, so one message carries more than Linux reads (SEMOPM sembufs, SEMMSL values). A longer
// sembuf list is passed by its count alone, which Linux refuses (E2BIG) before it reads the
// list; a longer SETALL list is cut where Linux stops reading. A result the agent cannot carry
// is answered with msgTooBig. Every call of the language is a command, numbered in the order of
// scenario.Calls; the numbers of commands and messages and the sizes are protocol.go's alone,
// given to agent.c as -D flags when it is compiled. A fork or clone child says hello before
// serving: [msgHello, its tid] with the runner's end of its new socket passed as SCM_RIGHTS,
// sent on its creator's socket, because the creator may not be able to reply for a long time
// (CLONE_VFORK). The creator's reply carries a pidfd of the child (PIDFD_THREAD for threads),
// from which the runner learns the child's tid even when the child starts stopped and cannot
// say hello yet; the socket is then claimed when the child is first given a command.
//
// A pidfd is named by its open file (files.go): the agent passes the runner every pidfd a call
// opens (pidfd_open, CLONE_PIDFD) as SCM_RIGHTS, the runner keeps that descriptor of the same
// file, and a call that names the pidfd gets the number at which the caller's table has it,
// found by comparing the file with each of the caller's descriptors (kcmp KCMP_FILE); a table
// that does not hold it gets a number open nowhere. A child with a table of its own closes the
// sockets it inherited, and keeps its pidfds, as fork does.
//
// A task a background call made is found before the call returns (Made): from the reply if it
// came, else as the one task the runner does not know among the actor's children (or its
// process's threads for CLONE_THREAD, its parent's children for CLONE_PARENT); its record is
// the one the reply names later.
//
// Pids print as names through PidIn: for every task the runner reads NSpid from
// /proc/TID/status (its pid at each level from the runner's namespace down) and the inode of
// the pid namespace at each level (NS_GET_PARENT from /proc/TID/ns/pid), because sibling
// namespaces share levels. A task's record outlives the task, so names keep printing. A task
// that has exited (zombie or reaped), or whose tid now belongs to another task (start time
// differs), or whose thread group another thread exec'd, no longer exists: its calls print
// ESRCH.
//
// # Quiescence
//
// After every statement the runner samples /proc/TID/stat of the tasks the call may have set
// running until none has been runnable (R) for several samples in a row. A wakeup marks its
// task runnable before the waker's system call returns, so a quiet system has finished what the
// last call started: exits have reached the zombie state, signals have been handled, replies
// have been sent. A call that can signal, reap, wake or trace another task (kill, exit, wait4,
// semop, ptrace, execve, ...) may have set any task running, and every live task is sampled;
// a local call (scenario.CallSpec.Local: fork, getpid, setpgid, ...) only its caller, the
// tasks it made and the tasks with a call of their own in flight, since every other task sat
// idle in its command loop when the last statement settled. Each task's stat file is held open, so a sample is one pread
// per task. A system that does not settle within five seconds (something keeps running) cannot
// be read: the call ends the run with a fatal error.
//
// A call that ends its task (exit, exit_group, a fatal signal) is done when the task is a
// zombie or gone; it prints done. A background call (&) is handed back once its reply has
// come, or the task sleeps (S or D) in a system call other than the recvfrom of its command
// loop (/proc/TID/syscall), or is stopped, or has died; join then waits for the reply.
//
// A call blocked with every task asleep can only be ended by a timeout. After StallTimeout
// (plus a semtimedop's own timeout, unless it is too large for Linux's clock, which makes it
// an untimed wait: scenario.SemTimeout) the runner stops waiting: the call prints EDEADLK, and
// the task answers EDEADLK until its stale reply arrives, which is then dropped.
//
// # Results it cannot tell
//
// The runner never prints a result the kernel did not give. When it cannot pass a call, cannot
// reach a task, gives up waiting for the system to settle, or is interrupted, the call returns
// scenario.ResultFatal: the driver says why on standard error as FILE:LINE and the run ends
// with status 2.
//
// # Cleanup
//
// Close kills init from outside its namespace, which kills every task in it (init is reaped
// only once the namespace is empty); the IPC namespace and its semaphore sets go with the last
// task. SIGINT, SIGTERM and SIGHUP do the same and remove the runner's temporary directory; the
// call in flight then ends the run with a fatal error (status 2), and init's PR_SET_PDEATHSIG
// covers a runner that dies any other way.
//
// New fails with ErrNeedRoot without the privilege to create the namespaces and with
// ErrNoCompiler when no C compiler is found.
package kernelrun
