package kernelrun

import (
	"fmt"

	"tasklist/scenario"
)

// The protocol's numbers are written here only: agent.c is compiled with them defined
// (agentDefines).

// Message types, the first word of every message an agent sends.
const (
	msgReply  = 1 // the result of the command the task was serving
	msgHello  = 2 // a new task's first words: its host tid, with the runner's end of its socket
	msgTooBig = 3 // in place of a reply: the result does not fit in one message
)

// Commands, the first word of every message the runner sends; agent.c knows each by its name
// in opNames.
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
// list, GETALL's reply), four to a word. Both exceed what Linux reads (SEMOPM, SEMMSL).
const (
	semopCarry  = (maxWords - 6) / 3
	valuesCarry = (maxWords - 6) * 4
)

// opNames are the names agent.c gives the commands.
var opNames = [...]string{
	opFork: "OP_FORK", opClone: "OP_CLONE", opExit: "OP_EXIT", opExitGroup: "OP_EXIT_GROUP",
	opExecve: "OP_EXECVE", opWait4: "OP_WAIT4", opWaitid: "OP_WAITID", opGetpid: "OP_GETPID",
	opGettid: "OP_GETTID", opGetppid: "OP_GETPPID", opGetpgrp: "OP_GETPGRP", opGetpgid: "OP_GETPGID",
	opGetsid: "OP_GETSID", opSetsid: "OP_SETSID", opSetpgid: "OP_SETPGID",
	opGetpriority: "OP_GETPRIORITY", opSetpriority: "OP_SETPRIORITY", opSetuid: "OP_SETUID",
	opSetresuid: "OP_SETRESUID", opSetgid: "OP_SETGID", opSetresgid: "OP_SETRESGID",
	opSetrlimit: "OP_SETRLIMIT", opKill: "OP_KILL", opTgkill: "OP_TGKILL", opSigaction: "OP_SIGACTION",
	opPrctl: "OP_PRCTL", opPtrace: "OP_PTRACE", opSemget: "OP_SEMGET", opSemop: "OP_SEMOP",
	opSemctl: "OP_SEMCTL", opUnshare: "OP_UNSHARE",
}

// agentDefines are the C compiler's -D flags that give agent.c the protocol's numbers.
func agentDefines() []string {
	defs := []string{
		define("MSG_REPLY", msgReply), define("MSG_HELLO", msgHello), define("MSG_TOO_BIG", msgTooBig),
		define("MAXWORDS", maxWords), define("SEMOP_CARRY", semopCarry), define("VALUES_CARRY", valuesCarry),
		define("HANDLER_KIND", scenario.Handler),
	}
	for op, name := range opNames[1:] {
		defs = append(defs, define(name, op+1))
	}
	return defs
}

func define(name string, v int) string { return fmt.Sprintf("-D%s=%d", name, v) }

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
