package scenario

import (
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"tasklist/internal/abi"
)

// Handler is the value of the constant HANDLER, a user signal handler that returns at once
// (abi.SIG_HANDLER: told apart from SIG_DFL, SIG_IGN and SIG_ERR).
const Handler = abi.SIG_HANDLER

// Values of the language's own choosing.
const (
	rlimInfinity  = -1 // RLIM_INFINITY's all-ones bits as an int64
	lastStdSignal = 31
)

// constants maps every constant name the language knows to its value.
var constants = buildConstants()

func buildConstants() map[string]int64 {
	m := map[string]int64{
		"CLONE_VM":             unix.CLONE_VM,
		"CLONE_FS":             unix.CLONE_FS,
		"CLONE_FILES":          unix.CLONE_FILES,
		"CLONE_SIGHAND":        unix.CLONE_SIGHAND,
		"CLONE_PIDFD":          unix.CLONE_PIDFD,
		"CLONE_PTRACE":         unix.CLONE_PTRACE,
		"CLONE_VFORK":          unix.CLONE_VFORK,
		"CLONE_PARENT":         unix.CLONE_PARENT,
		"CLONE_THREAD":         unix.CLONE_THREAD,
		"CLONE_NEWNS":          unix.CLONE_NEWNS,
		"CLONE_SYSVSEM":        unix.CLONE_SYSVSEM,
		"CLONE_SETTLS":         unix.CLONE_SETTLS,
		"CLONE_PARENT_SETTID":  unix.CLONE_PARENT_SETTID,
		"CLONE_CHILD_CLEARTID": unix.CLONE_CHILD_CLEARTID,
		"CLONE_DETACHED":       unix.CLONE_DETACHED,
		"CLONE_UNTRACED":       unix.CLONE_UNTRACED,
		"CLONE_CHILD_SETTID":   unix.CLONE_CHILD_SETTID,
		"CLONE_NEWCGROUP":      unix.CLONE_NEWCGROUP,
		"CLONE_NEWUTS":         unix.CLONE_NEWUTS,
		"CLONE_NEWIPC":         unix.CLONE_NEWIPC,
		"CLONE_NEWUSER":        unix.CLONE_NEWUSER,
		"CLONE_NEWPID":         unix.CLONE_NEWPID,
		"CLONE_NEWNET":         unix.CLONE_NEWNET,
		"CLONE_IO":             unix.CLONE_IO,
		"CLONE_CLEAR_SIGHAND":  unix.CLONE_CLEAR_SIGHAND,
		"CLONE_INTO_CGROUP":    unix.CLONE_INTO_CGROUP,
		"CLONE_NEWTIME":        unix.CLONE_NEWTIME,

		"WNOHANG":     unix.WNOHANG,
		"WUNTRACED":   unix.WUNTRACED,
		"WSTOPPED":    unix.WSTOPPED,
		"WEXITED":     unix.WEXITED,
		"WCONTINUED":  unix.WCONTINUED,
		"WNOWAIT":     unix.WNOWAIT,
		"__WNOTHREAD": unix.WNOTHREAD,
		"__WALL":      unix.WALL,
		"__WCLONE":    unix.WCLONE,
		"WNOTHREAD":   unix.WNOTHREAD,
		"WALL":        unix.WALL,
		"WCLONE":      unix.WCLONE,
		"P_ALL":       unix.P_ALL,
		"P_PID":       unix.P_PID,
		"P_PGID":      unix.P_PGID,
		"P_PIDFD":     unix.P_PIDFD,

		"PIDFD_NONBLOCK":             unix.PIDFD_NONBLOCK,
		"PIDFD_THREAD":               unix.PIDFD_THREAD,
		"PIDFD_SIGNAL_THREAD":        unix.PIDFD_SIGNAL_THREAD,
		"PIDFD_SIGNAL_THREAD_GROUP":  unix.PIDFD_SIGNAL_THREAD_GROUP,
		"PIDFD_SIGNAL_PROCESS_GROUP": unix.PIDFD_SIGNAL_PROCESS_GROUP,

		"PRIO_PROCESS": unix.PRIO_PROCESS,
		"PRIO_PGRP":    unix.PRIO_PGRP,
		"PRIO_USER":    unix.PRIO_USER,

		"SIG_DFL":      abi.SIG_DFL,
		"SIG_IGN":      abi.SIG_IGN,
		"HANDLER":      Handler,
		"SA_NOCLDSTOP": abi.SA_NOCLDSTOP,
		"SA_NOCLDWAIT": abi.SA_NOCLDWAIT,
		"SA_SIGINFO":   abi.SA_SIGINFO,
		"SA_ONSTACK":   abi.SA_ONSTACK,
		"SA_RESTART":   abi.SA_RESTART,
		"SA_NODEFER":   abi.SA_NODEFER,
		"SA_RESETHAND": abi.SA_RESETHAND,
		"SIGRTMIN":     abi.SIGRTMIN,
		"SIGRTMAX":     abi.SIGRTMAX,
		"SIGIOT":       int64(unix.SIGIOT),
		"SIGCLD":       int64(unix.SIGCLD),
		"SIGPOLL":      int64(unix.SIGPOLL),

		"PR_SET_PDEATHSIG":       unix.PR_SET_PDEATHSIG,
		"PR_GET_PDEATHSIG":       unix.PR_GET_PDEATHSIG,
		"PR_SET_CHILD_SUBREAPER": unix.PR_SET_CHILD_SUBREAPER,
		"PR_GET_CHILD_SUBREAPER": unix.PR_GET_CHILD_SUBREAPER,

		"PTRACE_TRACEME":                          unix.PTRACE_TRACEME,
		"PTRACE_PEEKTEXT":                         unix.PTRACE_PEEKTEXT,
		"PTRACE_PEEKDATA":                         unix.PTRACE_PEEKDATA,
		"PTRACE_PEEKUSR":                          unix.PTRACE_PEEKUSR,
		"PTRACE_POKETEXT":                         unix.PTRACE_POKETEXT,
		"PTRACE_POKEDATA":                         unix.PTRACE_POKEDATA,
		"PTRACE_POKEUSR":                          unix.PTRACE_POKEUSR,
		"PTRACE_CONT":                             unix.PTRACE_CONT,
		"PTRACE_KILL":                             unix.PTRACE_KILL,
		"PTRACE_SINGLESTEP":                       unix.PTRACE_SINGLESTEP,
		"PTRACE_GETREGS":                          unix.PTRACE_GETREGS,
		"PTRACE_SETREGS":                          unix.PTRACE_SETREGS,
		"PTRACE_ATTACH":                           unix.PTRACE_ATTACH,
		"PTRACE_DETACH":                           unix.PTRACE_DETACH,
		"PTRACE_SYSCALL":                          unix.PTRACE_SYSCALL,
		"PTRACE_SETOPTIONS":                       unix.PTRACE_SETOPTIONS,
		"PTRACE_GETEVENTMSG":                      unix.PTRACE_GETEVENTMSG,
		"PTRACE_GETSIGINFO":                       unix.PTRACE_GETSIGINFO,
		"PTRACE_SETSIGINFO":                       unix.PTRACE_SETSIGINFO,
		"PTRACE_GETREGSET":                        unix.PTRACE_GETREGSET,
		"PTRACE_SETREGSET":                        unix.PTRACE_SETREGSET,
		"PTRACE_SEIZE":                            unix.PTRACE_SEIZE,
		"PTRACE_INTERRUPT":                        unix.PTRACE_INTERRUPT,
		"PTRACE_LISTEN":                           unix.PTRACE_LISTEN,
		"PTRACE_PEEKSIGINFO":                      unix.PTRACE_PEEKSIGINFO,
		"PTRACE_GETSIGMASK":                       unix.PTRACE_GETSIGMASK,
		"PTRACE_SETSIGMASK":                       unix.PTRACE_SETSIGMASK,
		"PTRACE_SECCOMP_GET_FILTER":               unix.PTRACE_SECCOMP_GET_FILTER,
		"PTRACE_SECCOMP_GET_METADATA":             unix.PTRACE_SECCOMP_GET_METADATA,
		"PTRACE_GET_SYSCALL_INFO":                 unix.PTRACE_GET_SYSCALL_INFO,
		"PTRACE_GET_RSEQ_CONFIGURATION":           unix.PTRACE_GET_RSEQ_CONFIGURATION,
		"PTRACE_SET_SYSCALL_USER_DISPATCH_CONFIG": unix.PTRACE_SET_SYSCALL_USER_DISPATCH_CONFIG,
		"PTRACE_GET_SYSCALL_USER_DISPATCH_CONFIG": unix.PTRACE_GET_SYSCALL_USER_DISPATCH_CONFIG,
		"PTRACE_O_TRACESYSGOOD":                   unix.PTRACE_O_TRACESYSGOOD,
		"PTRACE_O_TRACEFORK":                      unix.PTRACE_O_TRACEFORK,
		"PTRACE_O_TRACEVFORK":                     unix.PTRACE_O_TRACEVFORK,
		"PTRACE_O_TRACECLONE":                     unix.PTRACE_O_TRACECLONE,
		"PTRACE_O_TRACEEXEC":                      unix.PTRACE_O_TRACEEXEC,
		"PTRACE_O_TRACEVFORKDONE":                 unix.PTRACE_O_TRACEVFORKDONE,
		"PTRACE_O_TRACEEXIT":                      unix.PTRACE_O_TRACEEXIT,
		"PTRACE_O_TRACESECCOMP":                   unix.PTRACE_O_TRACESECCOMP,
		"PTRACE_O_EXITKILL":                       unix.PTRACE_O_EXITKILL,
		"PTRACE_O_SUSPEND_SECCOMP":                unix.PTRACE_O_SUSPEND_SECCOMP,
		"PTRACE_O_MASK":                           unix.PTRACE_O_MASK,
		"PTRACE_EVENT_FORK":                       unix.PTRACE_EVENT_FORK,
		"PTRACE_EVENT_VFORK":                      unix.PTRACE_EVENT_VFORK,
		"PTRACE_EVENT_CLONE":                      unix.PTRACE_EVENT_CLONE,
		"PTRACE_EVENT_EXEC":                       unix.PTRACE_EVENT_EXEC,
		"PTRACE_EVENT_VFORK_DONE":                 unix.PTRACE_EVENT_VFORK_DONE,
		"PTRACE_EVENT_EXIT":                       unix.PTRACE_EVENT_EXIT,
		"PTRACE_EVENT_SECCOMP":                    unix.PTRACE_EVENT_SECCOMP,
		"PTRACE_EVENT_STOP":                       unix.PTRACE_EVENT_STOP,

		"RLIMIT_CPU":        unix.RLIMIT_CPU,
		"RLIMIT_FSIZE":      unix.RLIMIT_FSIZE,
		"RLIMIT_DATA":       unix.RLIMIT_DATA,
		"RLIMIT_STACK":      unix.RLIMIT_STACK,
		"RLIMIT_CORE":       unix.RLIMIT_CORE,
		"RLIMIT_RSS":        unix.RLIMIT_RSS,
		"RLIMIT_NPROC":      unix.RLIMIT_NPROC,
		"RLIMIT_NOFILE":     unix.RLIMIT_NOFILE,
		"RLIMIT_MEMLOCK":    unix.RLIMIT_MEMLOCK,
		"RLIMIT_AS":         unix.RLIMIT_AS,
		"RLIMIT_LOCKS":      unix.RLIMIT_LOCKS,
		"RLIMIT_SIGPENDING": unix.RLIMIT_SIGPENDING,
		"RLIMIT_MSGQUEUE":   unix.RLIMIT_MSGQUEUE,
		"RLIMIT_NICE":       unix.RLIMIT_NICE,
		"RLIMIT_RTPRIO":     unix.RLIMIT_RTPRIO,
		"RLIMIT_RTTIME":     unix.RLIMIT_RTTIME,
		"RLIM_INFINITY":     rlimInfinity,

		"IPC_PRIVATE":  unix.IPC_PRIVATE,
		"IPC_CREAT":    unix.IPC_CREAT,
		"IPC_EXCL":     unix.IPC_EXCL,
		"IPC_NOWAIT":   unix.IPC_NOWAIT,
		"IPC_RMID":     unix.IPC_RMID,
		"IPC_SET":      unix.IPC_SET,
		"IPC_STAT":     unix.IPC_STAT,
		"IPC_INFO":     abi.IPC_INFO,
		"SEM_UNDO":     abi.SEM_UNDO,
		"GETPID":       abi.GETPID,
		"GETVAL":       abi.GETVAL,
		"GETALL":       abi.GETALL,
		"GETNCNT":      abi.GETNCNT,
		"GETZCNT":      abi.GETZCNT,
		"SETVAL":       abi.SETVAL,
		"SETALL":       abi.SETALL,
		"SEM_STAT":     abi.SEM_STAT,
		"SEM_INFO":     abi.SEM_INFO,
		"SEM_STAT_ANY": abi.SEM_STAT_ANY,
	}
	for s := syscall.Signal(1); s <= lastStdSignal; s++ {
		m[unix.SignalName(s)] = int64(s)
	}
	for n := 1; abi.SIGRTMIN+n < abi.SIGRTMAX; n++ {
		m["SIGRTMIN+"+strconv.Itoa(n)] = int64(abi.SIGRTMIN + n)
	}
	m["SIG_BLOCK"], m["SIG_UNBLOCK"], m["SIG_SETMASK"] = unix.SIG_BLOCK, unix.SIG_UNBLOCK, unix.SIG_SETMASK
	return m
}

// sigsetText spells a signal set as a list of names in increasing signal order, [] when
// empty; bit sig-1 stands for signal sig.
func sigsetText(set uint64) string {
	var names []string
	for sig := 1; sig <= 64; sig++ {
		if set&(1<<(sig-1)) != 0 {
			names = append(names, signalName(sig))
		}
	}
	return "[" + strings.Join(names, " ") + "]"
}

// signalName spells a signal number the way the constants do; the real-time signals between
// the two named ends are SIGRTMIN+N, as strsignal and the shells write them.
func signalName(sig int) string {
	switch {
	case sig >= 1 && sig <= lastStdSignal:
		if n := unix.SignalName(syscall.Signal(sig)); n != "" {
			return n
		}
	case sig == abi.SIGRTMIN:
		return "SIGRTMIN"
	case sig == abi.SIGRTMAX:
		return "SIGRTMAX"
	case sig > abi.SIGRTMIN && sig < abi.SIGRTMAX:
		return "SIGRTMIN+" + strconv.Itoa(sig-abi.SIGRTMIN)
	}
	return strconv.Itoa(sig)
}

// errnoName spells an errno as the C headers do, falling back to its number for one the
// headers do not name.
func errnoName(e syscall.Errno) string {
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return "errno " + strconv.Itoa(int(e))
}
