package check

import (
	"testing"

	"tasklist/scenario"
)

// callsOfKind names, for each kind that is a system call, the calls of the scenario language's
// call table (scenario.Calls) it makes: the table is the one list of calls, and the checker's
// kinds are a subset of it.
var callsOfKind = map[kind][]string{
	kClone: {"clone", "fork"}, kExit: {"exit"}, kExitGroup: {"exit_group"}, kWait4: {"wait4"},
	kWaitid: {"waitid"}, kSetpgid: {"setpgid"}, kSetsid: {"setsid"}, kKill: {"kill"},
	kGetpriority: {"getpriority"}, kSetpriority: {"setpriority"}, kTraceme: {"ptrace"},
	kSetresuid: {"setresuid"}, kSemget: {"semget"}, kSemop: {"semop", "semtimedop"}, kSemctl: {"semctl"},
}

// notChecked are the calls of the language the checker does not make, each with the reason.
var notChecked = map[string]string{
	"execve":    "it kills the process's other threads, whose exits Linux runs after the call returns",
	"getpgid":   "a read of one task's ids, which the final observation of the table checks",
	"getpgrp":   "a read of the caller's ids, which the final observation of the table checks",
	"getpid":    "a read of the caller's ids, which the final observation of the table checks",
	"getppid":   "a read of the caller's parent, which the final observation of the table checks",
	"getsid":    "a read of one task's ids, which the final observation of the table checks",
	"gettid":    "a read of the caller's ids, which the final observation of the table checks",
	"prctl":     "a process's own subreaper and parent-death settings, links of no other task",
	"setgid":    "credentials are the caller's own; setresuid, in the setup, gives the workers a user of their own",
	"setresgid": "credentials are the caller's own; setresuid, in the setup, gives the workers a user of their own",
	"setuid":    "credentials are the caller's own; setresuid, in the setup, gives the workers a user of their own",
	"setrlimit": "a process's own limits",
	"sigaction": "a disposition decides what a signal does after the kill returns, which is not modelled",
	"signal":    "a disposition decides what a signal does after the kill returns, which is not modelled",
	"tgkill":    "kill covers the delivery of signals that neither kill nor stop; one thread's has no link to race",
	"tkill":     "as tgkill",
	"sigprocmask": "a mask, as a disposition, decides what a signal does after the kill returns, which is not " +
		"modelled; refmodel's state machine holds masks to the reference model",
	"sigpending":        "as sigprocmask",
	"sigsuspend":        "as sigprocmask; and it sleeps until a signal comes",
	"sigtimedwait":      "as sigprocmask",
	"unshare":           "the burst keeps every task in one pid namespace, so that the history's pids are the root's",
	"clone3":            "clone's kind makes the same copy_process; clone3's own checks come before it and link nothing",
	"close":             "a pidfd in a table of the caller's, which links no task",
	"getrlimit":         "a process's own limits",
	"pidfd_open":        "a pidfd refers to a struct pid, which the checker's kill already finds by number",
	"pidfd_send_signal": "it sends through kill's paths (the process, one thread, a process group), which kill and tgkill check",
	"poll":              "a read of one task's exit state, which the final observation of the table checks",
	"prlimit":           "another process's limits, which link no task and race nothing the history observes",
	"vfork":             "the parent sleeps until its child execs or exits, and execve is not checked",
}

// TestKindsFollowTheCallTable: every kind that is a system call makes calls of the table, and
// every call of the table is made by some kind or listed in notChecked with the reason, so
// that a call added to the table is named here until the checker makes it or says why not.
func TestKindsFollowTheCallTable(t *testing.T) {
	var made []string
	for k := range kindNames {
		calls, isCall := callsOfKind[kind(k)]
		if pseudo := kind(k) == kObserve || kind(k) == kCloneNice || kind(k) == kSemAsleep; !isCall && !pseudo {
			t.Errorf("check: kind %s names no call of the table (callsOfKind)", kind(k))
		}
		made = append(made, calls...)
	}
	for _, p := range scenario.Coverage("check (callsOfKind, or notChecked)", made, notChecked) {
		t.Error(p)
	}
}
