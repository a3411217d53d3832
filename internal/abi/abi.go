// Package abi holds the Linux user-space ABI values that tasklist needs and
// golang.org/x/sys/unix lacks, each written once: the model (kernel,
// ipc/sem), the scenario language and both of its runners take them from
// here, so that they cannot drift apart. Names are spelled as the C headers
// spell them, as in x/sys/unix.
//
// The reference model (internal/refmodel) keeps its own copies on purpose:
// it is an independent oracle, and a wrong value shared with what it checks
// would hide in both.
package abi

// si_code values of SIGCHLD, as waitid reports them (include/uapi/asm-generic/siginfo.h).
const (
	CLD_EXITED    = 1 // the child exited
	CLD_KILLED    = 2 // the child was killed
	CLD_DUMPED    = 3 // the child was killed and dumped core
	CLD_TRAPPED   = 4 // a traced child stopped
	CLD_STOPPED   = 5 // the child stopped
	CLD_CONTINUED = 6 // a stopped child was continued
)

// The semop flag and the semctl commands (include/uapi/linux/sem.h, linux/ipc.h).
// IPC_RMID, IPC_SET and IPC_STAT are in x/sys/unix.
const (
	SEM_UNDO = 0x1000 // undo the operation when the process exits

	IPC_INFO     = 3  // the namespace's limits
	GETPID       = 11 // pid of the last operator, as the caller sees it
	GETVAL       = 12 // a semaphore's value
	GETALL       = 13 // every value
	GETNCNT      = 14 // sleepers waiting for the value to increase
	GETZCNT      = 15 // sleepers waiting for the value to be zero
	SETVAL       = 16 // set a semaphore's value
	SETALL       = 17 // set every value
	SEM_STAT     = 18 // IPC_STAT by index
	SEM_INFO     = 19 // the namespace's limits and usage
	SEM_STAT_ANY = 20 // SEM_STAT without the read-permission check
)

// Signal dispositions, as sa_handler values (include/uapi/asm-generic/signal-defs.h), and
// SIG_HANDLER, tasklist's own value for a user handler that returns at once: it stands where a
// handler address would go, told apart from SIG_DFL, SIG_IGN and SIG_ERR (-1).
const (
	SIG_DFL     = 0
	SIG_IGN     = 1
	SIG_HANDLER = 2
)

// sigaction flags (include/uapi/asm-generic/signal.h, signal-defs.h).
const (
	SA_NOCLDSTOP = 0x00000001
	SA_NOCLDWAIT = 0x00000002
	SA_SIGINFO   = 0x00000004
	SA_ONSTACK   = 0x08000000
	SA_RESTART   = 0x10000000
	SA_NODEFER   = 0x40000000
	SA_RESETHAND = 0x80000000
)

// The ends of the real-time signals, as the kernel numbers them (glibc's SIGRTMIN is higher:
// it keeps two for itself).
const (
	SIGRTMIN = 32
	SIGRTMAX = 64
)
