// Package scenario reads and runs scenario files: plain text programs that drive processes
// through system calls, one statement per line, so that the same file can run on the Go model of
// the kernel and on the host kernel and both print the same text.
//
// The language is a contract, written down in docs/scenario-language.md. In short:
//
//	# comment
//	[NAME [, FILE] =] ACTOR.CALL(ARG, ...) [&] [== EXPECT]
//	join ACTOR [== EXPECT]
//
// ACTOR is init or a name bound to a task by an earlier fork, vfork, clone or clone3. Arguments
// are integers (decimal, hex, octal with a leading 0), Linux constants joined with |, task names
// (a pid as the caller sees it), -NAME (a negated pid), semaphore-set names, pidfd names (the
// open file, at whatever number the caller's descriptor table has it), sembufs
// {NUM, OP, FLAGS} and value lists [1 2 3]. Integers are 64-bit and reach a call whole, as a register would; the
// call keeps what its C parameter holds (the low 32 bits of an int, pid_t or uid_t, all of an
// unsigned long), so kill(4294967297, 0) is kill(1, 0) on both runners. Every executed
// statement prints "LINE: SOURCE = RESULT"; a background call (&) prints its result at its
// join.
//
// This package is everything the two runners share: the lexer, the parser with its static
// checks, and the driver that binds names, tracks background calls, formats results and checks
// expectations. It knows nothing of how a kernel behaves: a [Backend] performs every call and
// reports its [Result] in kernel terms (pids, errnos, wait statuses); the driver turns those
// into the names and words of the contract.
//
// A run is a sequence of [Outcome] values, one per statement that printed a result, could not
// run, or ended the run ([Outcomes]): each carries the statement's line and source, the call,
// the Backend's Result, its printed text, and the expectations that did not hold or why the
// statement could not run. Printing ([Run], [RunSource], [Outcome.Print]) and comparing runs
// (package diff) both read outcomes; nothing parses printed text back. [ExecSource] parses,
// makes a Backend, runs and closes it for either.
//
// Each call is declared once, in the call table that [Calls] returns ([CallSpec]): its name,
// the kinds of its arguments, the counts it takes, the kinds of [Result] it returns, and what
// the runners decide by: whether it is local (sets running no other idle task), may block, is
// an exec, and where Linux takes tasklist_lock making it. The parser checks statements against
// it, every runner keys its handlers by it, and tests hold each runner and each column to it.
//
// # Adding a call
//
// A call is added in these places, and until each is done a test names the place and the call:
//
//   - scenario/calls.go: its row in the call table (TestCallsModel, TestCallsKernel hold the
//     runners to its arguments and results; TestLocalCallsChangeNoOtherIdleTask its Local
//     column; the model runner fails a call that sleeps without Blocks; TestCallsTasklistLock
//     its Tasklist sites under the linux-2.6.35 plan);
//   - package kernel: the Task method, and a plan site where Linux takes tasklist_lock;
//   - scenario/modelrun/calls.go: its handler (TestHandlersCoverTheCallTable);
//   - scenario/kernelrun/calls.go: its encoder and decoder (TestAgentCallsCoverTheCallTable);
//   - scenario/kernelrun/agent/agent.c: its handler and its entry in handlers
//     (TestAgentServesEveryCall);
//   - internal/scengen: a move that writes it (g.call), or the reason none does
//     (TestMovesCoverTheCallTable);
//   - check/calls_test.go and internal/refmodel/calls_test.go: the checker's kind and the
//     reference model's method that make it, or the reason none does
//     (TestKindsFollowTheCallTable, TestModelFollowsTheCallTable);
//   - docs/scenario-language.md: its row (TestCallsDocumented); docs/linux-semantics.md: its
//     behaviours; testdata/scenarios: files recorded from the host kernel.
//
// Parse refuses everything that can be seen without running (see [Parse]). A few things can only
// be seen at run time: a name whose fork, clone or semget failed, or whose statement did not
// run, was never bound, so a statement that uses it cannot run. Such a statement is skipped,
// reported on standard error as "FILE:LINE:COL: message", and makes the exit status 1, like a
// failed expectation; a name it would have bound is unbound too.
//
// A task's name bound by a background call ("B = A.clone(CLONE_VFORK) &") stands for the task
// as soon as the Backend says the call has made it (Backend.Made), so that a vfork child can act
// while its parent waits; results print the name from the join on, when version 1 bound it. The
// other names a background call binds are bound when its join prints the result, because only
// then does the driver learn what the call created.
//
// Constants take the values of the Linux headers for the architecture the package is built for,
// from golang.org/x/sys/unix where it has them. Two values are this package's own choice:
// HANDLER is [Handler], and RLIM_INFINITY is -1, the int64 with the bits of the kernel's
// all-ones rlim_t.
package scenario
