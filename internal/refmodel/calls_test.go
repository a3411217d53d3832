package refmodel

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"tasklist/scenario"
)

// modelledBy names, for each call of the scenario language's call table (scenario.Calls) that
// the reference model makes, the Model method that makes it.
var modelledBy = map[string]string{
	"clone": "Clone", "fork": "Clone", "execve": "Execve", "exit": "Exit", "exit_group": "ExitGroup",
	"getpriority": "Getpriority", "kill": "Kill", "prctl": "PrctlSetChildSubreaper", "ptrace": "Ptrace",
	"setpgid": "Setpgid", "setpriority": "Setpriority", "setresuid": "Setresuid", "setrlimit": "Setrlimit",
	"setsid": "Setsid", "setuid": "Setuid", "sigaction": "Sigaction", "signal": "Sigaction",
	"tgkill": "Tgkill", "wait4": "Wait4", "waitid": "Waitid",
	"sigprocmask": "Sigprocmask", "sigpending": "Sigpending", "sigtimedwait": "Sigtimedwait", "tkill": "Tkill",
}

// notModelled are the calls of the language the reference model does not make, each with the
// reason.
var notModelled = map[string]string{
	"sigsuspend": "it sleeps until a signal comes, and every call of the model runs to completion; " +
		"sigtimedwait with no timeout is its non-sleeping counterpart",
	"getpgid":           "a read of a task's ids, which Info gives",
	"getpgrp":           "a read of a task's ids, which Info gives",
	"getpid":            "a read of a task's ids, which Info gives",
	"getppid":           "a read of a task's ids, which Info gives",
	"getsid":            "a read of a task's ids, which Info gives",
	"gettid":            "a read of a task's ids, which Info gives",
	"semctl":            "semaphores are checked against check's own model of ipc/sem.c",
	"semget":            "semaphores are checked against check's own model of ipc/sem.c",
	"semop":             "semaphores are checked against check's own model of ipc/sem.c",
	"semtimedop":        "semaphores are checked against check's own model of ipc/sem.c",
	"setgid":            "the model's credentials are uids and capabilities; group ids decide nothing it models",
	"setresgid":         "the model's credentials are uids and capabilities; group ids decide nothing it models",
	"unshare":           "the model makes pid namespaces only with clone's CLONE_NEWPID",
	"clone3":            "Clone makes its copy_process; clone3's checks and set_tid are the kernel's alone",
	"close":             "the model has no descriptor tables",
	"getrlimit":         "a read of a process's limits, which Setrlimit's results check",
	"pidfd_open":        "the model has no descriptor tables",
	"pidfd_send_signal": "the model has no descriptor tables; its signals go through Kill and Tgkill",
	"poll":              "the model has no descriptor tables",
	"prlimit":           "Setrlimit is the model's one change of limits",
	"vfork":             "a vfork parent sleeps until its child execs or exits, which the model's calls never wait for",
}

// TestModelFollowsTheCallTable: every call of the table is made by a Model method or listed in
// notModelled with the reason, so that a call added to the table is named here until the
// reference model makes it or says why not.
func TestModelFollowsTheCallTable(t *testing.T) {
	model := reflect.TypeFor[*Model]()
	for call, method := range modelledBy {
		if _, ok := model.MethodByName(method); !ok {
			t.Errorf("refmodel: %s is to be made by Model.%s, which does not exist", call, method)
		}
	}
	for _, p := range scenario.Coverage("refmodel (modelledBy, or notModelled)", slices.Collect(maps.Keys(modelledBy)), notModelled) {
		t.Error(p)
	}
}
