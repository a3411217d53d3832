package kernelrun

// Message types, the first word of every message an agent sends; they match agent.c.
const (
	msgReply  = 1 // the result of the command the task was serving
	msgHello  = 2 // a new task's first words: its host tid, with the runner's end of its socket
	msgTooBig = 3 // in place of a reply: the result does not fit in one message
)

// Commands, the first word of every message the runner sends; they match agent.c.
const (
	opFork = iota + 1
	opClone
	opExit
	opExitGroup
	opExecve
	opWait4
	opWaitid
	opGetpid
	opGettid
	opGetppid
	opGetpgrp
	opGetpgid
	opGetsid
	opSetsid
	opSetpgid
	opGetpriority
	opSetpriority
	opSetuid
	opSetresuid
	opSetgid
	opSetresgid
	opSetrlimit
	opKill
	opTgkill
	opSigaction
	opPrctl
	opPtrace
	opSemget
	opSemop
	opSemctl
	opUnshare
)

// maxWords is the most int64 words one message carries, either way.
const maxWords = 8192

// What one command carries: sembufs, three words each, and 16-bit semaphore values (SETALL's
// list, GETALL's reply), four to a word. Both exceed what Linux reads (SEMOPM, SEMMSL); they
// match agent.c.
const (
	semopCarry  = (maxWords - 6) / 3
	valuesCarry = (maxWords - 6) * 4
)

// ops maps the calls of the language to commands.
var ops = map[string]int{
	"fork": opFork, "clone": opClone, "exit": opExit, "exit_group": opExitGroup,
	"execve": opExecve, "wait4": opWait4, "waitid": opWaitid, "getpid": opGetpid,
	"gettid": opGettid, "getppid": opGetppid, "getpgrp": opGetpgrp, "getpgid": opGetpgid,
	"getsid": opGetsid, "setsid": opSetsid, "setpgid": opSetpgid,
	"getpriority": opGetpriority, "setpriority": opSetpriority, "setuid": opSetuid,
	"setresuid": opSetresuid, "setgid": opSetgid, "setresgid": opSetresgid,
	"setrlimit": opSetrlimit, "kill": opKill, "tgkill": opTgkill, "signal": opSigaction,
	"sigaction": opSigaction, "prctl": opPrctl, "ptrace": opPtrace, "semget": opSemget,
	"semop": opSemop, "semtimedop": opSemop, "semctl": opSemctl, "unshare": opUnshare,
}
