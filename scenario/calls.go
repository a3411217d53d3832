package scenario

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"tasklist/plan"
)

// ArgKind is what an argument position of a call accepts.
type ArgKind int

// The kinds of argument position.
const (
	ArgInt     ArgKind = iota // an integer or constant expression: a ValueInt
	ArgPid                    // an integer, a task name or -NAME: a ValueInt or ValueTask
	ArgSet                    // a semaphore-set name or an integer id: a ValueSet or ValueInt
	ArgSembuf                 // {NUM, OP, FLAGS}; all of a call's form one final ValueSembufs
	ArgSemArg                 // semctl's fourth argument: an integer or a value list (ValueList)
	ArgTimeout                // an integer: a timeout in milliseconds (see [CallSpec.Timeout])
	ArgSigset                 // a signal set, [SIGNAME ...]: a ValueList of signal numbers
	ArgFD                     // a pidfd's name: a ValueFile
	ArgID                     // waitid's id: as ArgPid, or a pidfd's name after P_PIDFD
)

// creates says what a call creates, and so whether "NAME =" may bind its result.
type creates int

const (
	createsNothing creates = iota
	createsTask
	createsSet
	createsFile
)

// CallSpec declares one call of the language. The call table ([Calls]) is the registry of
// calls: the parser checks statements against it, and every runner keys its handlers by a
// call's Name — modelrun's calls on the model, kernelrun's encoding and decoding and its
// agent's commands, the generator's moves (internal/scengen) — and says, in a test that names
// the runner and the call, which declared call it lacks. The columns besides the call's
// shape are what the runners decide by, and tests hold each to what the model does.
type CallSpec struct {
	Name string
	// Args are the kinds of the call's positions.
	Args []ArgKind
	// Counts are the argument counts the call takes when some trailing positions are
	// optional; nil means len(Args).
	Counts []int
	// Rest, when set, is the kind of one or more arguments the call takes after Args, or of
	// none or more when RestOptional is set. Rest sembufs form one final ValueSembufs
	// argument; other rest arguments are a Value each.
	Rest         *ArgKind
	RestOptional bool
	// ClonesPidfd marks a call that also opens a pidfd of the task it makes when its first
	// argument, its flags, has CLONE_PIDFD: its ResultNewTask then carries the file
	// (HasFile), which "TASK, FILE = ..." binds.
	ClonesPidfd bool
	// Results are the kinds of Result the call returns when it returns. Any call may also
	// fail (ResultErrno), end with its task (ResultDone) or be beyond its runner's telling
	// (ResultFatal): see [CallSpec.Returns].
	Results []ResultKind
	// Local marks a call that sets running no task but its caller and the tasks it makes:
	// it sends no signal, stops, continues and kills nobody, reaps nothing and makes no
	// ptrace request. After a local call the kernel runner watches only those tasks, and the
	// tasks with a call of their own in flight, for quiescence. A test runs the corpus on the
	// model and fails on a local call that changed another idle task.
	Local bool
	// Blocks marks a call that may sleep until another task acts: a wait without WNOHANG, a
	// semop without IPC_NOWAIT, an exec waiting for its other threads to exit, a clone with
	// CLONE_VFORK, a PTRACE_ATTACH waiting for an exec to finish. Such a call made in the
	// foreground can print EDEADLK; any call can also wait while its task is stopped, which
	// this does not count. The model runner fails a call that sleeps without it.
	Blocks bool
	// Exec marks a call that replaces its caller's program: a thread other than the leader
	// that makes it takes its leader's tid (de_thread), so the kernel runner follows it by
	// its process.
	Exec bool
	// Tasklist lists where Linux takes tasklist_lock while making the call, as the sites of
	// package plan that stand for those places (each names its Linux function); none for a
	// call Linux makes under RCU and per-object locks alone. The linux-2.6.35 plan takes the
	// table lock there, and a test makes every call under it and fails on a call that took
	// the lock where it declares no site that takes it so.
	Tasklist []plan.Site
}

var sembufRest, intRest = ArgSembuf, ArgInt

// Shorthands for the call table.
var (
	returnsInt    = []ResultKind{ResultInt}
	returnsPid    = []ResultKind{ResultPid}
	returnsWait   = []ResultKind{ResultWait, ResultInt} // ResultInt 0: WNOHANG found nothing
	returnsSigset = []ResultKind{ResultSigset}
	returnsLimit  = []ResultKind{ResultLimit}
)

func args(kinds ...ArgKind) []ArgKind { return kinds }

func sites(s ...plan.Site) []plan.Site { return s }

// callTable is the language, in name order: version 1, unshare, an extension, and the calls
// version 2 added. The comment after a call with sites names the Linux functions that take
// tasklist_lock.
var callTable = []CallSpec{
	{Name: "clone", Args: args(ArgInt, ArgInt), Counts: []int{1, 2}, Results: []ResultKind{ResultNewTask},
		ClonesPidfd: true, Local: true, Blocks: true, Tasklist: sites(plan.CloneLink)}, // copy_process
	{Name: "clone3", Args: args(ArgInt, ArgInt), Rest: &intRest, RestOptional: true,
		Results: []ResultKind{ResultNewTask}, ClonesPidfd: true, Local: true, Blocks: true,
		Tasklist: sites(plan.CloneLink)}, // copy_process
	{Name: "close", Args: args(ArgFD), Results: returnsInt, Local: true},
	{Name: "execve", Results: returnsInt, Blocks: true, Exec: true,
		Tasklist: sites(plan.ExecSwap, plan.Release)}, // de_thread; release_task of the old leader
	{Name: "exit", Args: args(ArgInt), Results: []ResultKind{ResultDone},
		Tasklist: sites(plan.ExitPtrace, plan.ExitNotify, plan.Release)}, // exit_ptrace, exit_notify, release_task
	{Name: "exit_group", Args: args(ArgInt), Results: []ResultKind{ResultDone},
		Tasklist: sites(plan.ExitPtrace, plan.ExitNotify, plan.Release)}, // as exit
	{Name: "fork", Results: []ResultKind{ResultNewTask}, Local: true, Tasklist: sites(plan.CloneLink)}, // copy_process
	{Name: "getpgid", Args: args(ArgPid), Results: returnsPid, Local: true},
	{Name: "getpgrp", Results: returnsPid, Local: true},
	{Name: "getpid", Results: returnsPid, Local: true},
	{Name: "getppid", Results: returnsPid, Local: true},
	{Name: "getpriority", Args: args(ArgInt, ArgPid), Results: returnsInt, Local: true,
		Tasklist: sites(plan.PrioProcess, plan.PrioPgrp, plan.PrioUser)}, // sys_getpriority
	{Name: "getrlimit", Args: args(ArgInt), Results: returnsLimit, Local: true},
	{Name: "getsid", Args: args(ArgPid), Results: returnsPid, Local: true},
	{Name: "gettid", Results: returnsPid, Local: true},
	{Name: "kill", Args: args(ArgPid, ArgInt), Results: returnsInt,
		Tasklist: sites(plan.KillGroup)}, // kill_something_info: kill_pgrp, and the walk of kill(-1)
	{Name: "pidfd_open", Args: args(ArgPid, ArgInt), Results: []ResultKind{ResultNewFile}, Local: true},
	{Name: "pidfd_send_signal", Args: args(ArgFD, ArgInt, ArgInt), Results: returnsInt,
		Tasklist: sites(plan.KillGroup)}, // kill_pgrp_info, for PIDFD_SIGNAL_PROCESS_GROUP
	{Name: "poll", Args: args(ArgFD), Results: returnsInt, Local: true},
	{Name: "prctl", Args: args(ArgInt, ArgInt), Counts: []int{1, 2}, Results: returnsInt, Local: true},
	{Name: "prlimit", Args: args(ArgPid, ArgInt, ArgInt, ArgInt), Counts: []int{2, 4}, Results: returnsLimit,
		Local: true, Tasklist: sites(plan.Prlimit)}, // sys_prlimit64, for another process's limits
	{Name: "ptrace", Args: args(ArgInt, ArgPid, ArgInt, ArgInt), Counts: []int{1, 2, 4}, Results: returnsInt,
		Blocks: true, Tasklist: sites(plan.PtraceLink, plan.PtraceRequest)}, // ptrace_attach, ptrace_traceme, __ptrace_detach; ptrace_check_attach
	{Name: "semctl", Args: args(ArgSet, ArgInt, ArgInt, ArgSemArg), Counts: []int{3, 4},
		Results: []ResultKind{ResultInt, ResultList, ResultPid}}, // ResultList: GETALL; ResultPid: GETPID
	{Name: "semget", Args: args(ArgInt, ArgInt, ArgInt), Results: []ResultKind{ResultNewSet}, Local: true},
	{Name: "semop", Args: args(ArgSet), Rest: &sembufRest, Results: returnsInt, Blocks: true},
	{Name: "semtimedop", Args: args(ArgSet, ArgTimeout), Rest: &sembufRest, Results: returnsInt, Blocks: true},
	{Name: "setgid", Args: args(ArgInt), Results: returnsInt, Local: true},
	{Name: "setpgid", Args: args(ArgPid, ArgPid), Results: returnsInt, Local: true,
		Tasklist: sites(plan.SetPgid)}, // sys_setpgid
	{Name: "setpriority", Args: args(ArgInt, ArgPid, ArgInt), Results: returnsInt, Local: true,
		Tasklist: sites(plan.PrioProcess, plan.PrioPgrp, plan.PrioUser)}, // sys_setpriority
	{Name: "setresgid", Args: args(ArgInt, ArgInt, ArgInt), Results: returnsInt, Local: true},
	{Name: "setresuid", Args: args(ArgInt, ArgInt, ArgInt), Results: returnsInt, Local: true},
	// do_prlimit took tasklist_lock for the caller's own limits too from Linux 2.6.36 until a
	// later release dropped it; the plans leave it out.
	{Name: "setrlimit", Args: args(ArgInt, ArgInt, ArgInt), Counts: []int{2, 3}, Results: returnsInt, Local: true},
	{Name: "setsid", Results: returnsPid, Local: true, Tasklist: sites(plan.SetPgid)}, // sys_setsid
	{Name: "setuid", Args: args(ArgInt), Results: returnsInt, Local: true},
	{Name: "sigaction", Args: args(ArgInt, ArgInt, ArgInt), Results: returnsInt, Local: true},
	{Name: "signal", Args: args(ArgInt, ArgInt), Results: returnsInt, Local: true},
	{Name: "sigpending", Results: returnsSigset, Local: true},
	// Taking a signal it unblocks may stop or kill the caller's whole process.
	{Name: "sigprocmask", Args: args(ArgInt, ArgSigset), Results: returnsSigset},
	{Name: "sigsuspend", Args: args(ArgSigset), Blocks: true}, // always EINTR
	{Name: "sigtimedwait", Args: args(ArgSigset, ArgTimeout), Results: []ResultKind{ResultSignal}, Blocks: true},
	{Name: "tgkill", Args: args(ArgPid, ArgPid, ArgInt), Results: returnsInt},
	{Name: "tkill", Args: args(ArgPid, ArgInt), Results: returnsInt},
	{Name: "unshare", Args: args(ArgInt), Results: returnsInt, Local: true},
	{Name: "vfork", Results: []ResultKind{ResultNewTask}, Local: true, Blocks: true,
		Tasklist: sites(plan.CloneLink)}, // copy_process
	{Name: "wait4", Args: args(ArgPid, ArgInt), Results: returnsWait, Blocks: true,
		Tasklist: sites(plan.WaitScan, plan.Release)}, // do_wait; release_task of the reaped zombie
	{Name: "waitid", Args: args(ArgInt, ArgID, ArgInt), Results: returnsWait, Blocks: true,
		Tasklist: sites(plan.WaitScan, plan.Release)}, // as wait4
}

// calls indexes callTable by name.
var calls = indexCalls()

func indexCalls() map[string]CallSpec {
	m := make(map[string]CallSpec, len(callTable))
	for _, c := range callTable {
		m[c.Name] = c
	}
	return m
}

// Calls returns every call of the language, in name order. The caller must not modify them.
func Calls() []CallSpec { return slices.Clone(callTable) }

// LookupCall returns the declaration of the call name, if the language has it.
func LookupCall(name string) (CallSpec, bool) {
	c, ok := calls[name]
	return c, ok
}

// ArgCounts returns the argument counts the call takes; a call with a Rest kind takes the
// count returned and any larger one.
func (c CallSpec) ArgCounts() []int {
	switch {
	case c.Rest != nil && c.RestOptional:
		return []int{len(c.Args)}
	case c.Rest != nil:
		return []int{len(c.Args) + 1}
	case c.Counts == nil:
		return []int{len(c.Args)}
	}
	return c.Counts
}

// Returns reports whether the call may return a Result of kind k: one of its Results, or a
// failure, the end of its task, or a Result its runner cannot tell, which any call may give.
func (c CallSpec) Returns(k ResultKind) bool {
	return k == ResultErrno || k == ResultDone || k == ResultFatal || slices.Contains(c.Results, k)
}

// creates is what a call that returns creates, for "NAME =" to bind.
func (c CallSpec) creates() creates {
	switch {
	case slices.Contains(c.Results, ResultNewTask):
		return createsTask
	case slices.Contains(c.Results, ResultNewSet):
		return createsSet
	case slices.Contains(c.Results, ResultNewFile):
		return createsFile
	}
	return createsNothing
}

// Allows reports whether the call takes n arguments.
func (c CallSpec) Allows(n int) bool {
	if c.Rest != nil {
		return n >= c.ArgCounts()[0]
	}
	return slices.Contains(c.ArgCounts(), n)
}

// maxArgs is the most arguments the call takes, -1 for no limit.
func (c CallSpec) maxArgs() int {
	if c.Rest != nil {
		return -1
	}
	return len(c.Args)
}

// Timeout returns how long a call made with args waits at most before it returns by itself,
// when it has a timeout argument (ArgTimeout) that gives it a deadline (see [SemTimeout]).
func (c CallSpec) Timeout(args []Value) (d time.Duration, timed bool) {
	for i, k := range c.Args {
		if k == ArgTimeout && i < len(args) {
			return SemTimeout(args[i].Int)
		}
	}
	return 0, false
}

// Kind returns what argument i of the call accepts.
func (c CallSpec) Kind(i int) ArgKind {
	if i < len(c.Args) {
		return c.Args[i]
	}
	return *c.Rest
}

// arity describes the counts the call takes, for error messages.
func (c CallSpec) arity() string {
	if c.Rest != nil {
		return fmt.Sprintf("%d or more arguments", c.ArgCounts()[0])
	}
	counts := c.ArgCounts()
	switch {
	case counts[0] == 0 && len(counts) == 1:
		return "no arguments"
	case counts[0] == 1 && len(counts) == 1:
		return "1 argument"
	}
	words := make([]string, len(counts))
	for i, n := range counts {
		words[i] = strconv.Itoa(n)
	}
	last := len(words) - 1
	if last == 0 {
		return words[0] + " arguments"
	}
	return strings.Join(words[:last], ", ") + " or " + words[last] + " arguments"
}

func (k ArgKind) String() string {
	switch k {
	case ArgPid:
		return "a pid or task name"
	case ArgSet:
		return "a semaphore set"
	case ArgSembuf:
		return "a sembuf {NUM, OP, FLAGS}"
	case ArgSemArg:
		return "an integer or a value list"
	case ArgSigset:
		return "a signal set [SIGNAME ...]"
	case ArgFD:
		return "a pidfd"
	case ArgID:
		return "a pid, a task name or, after P_PIDFD, a pidfd"
	}
	return "an integer"
}

// Coverage compares what a runner makes of the language with the call table: made are the
// calls it makes, excused those it leaves out, each with the reason. It describes, naming the
// runner and the call, every declared call neither made nor excused, every call both made and
// excused, and every name made or excused that the table does not declare; each runner's tests
// report these, so that a call added to the table is named until each runner makes it or says
// why not.
func Coverage(runner string, made []string, excused map[string]string) []string {
	var problems []string
	isMade := map[string]bool{}
	for _, name := range made {
		isMade[name] = true
	}
	for _, c := range callTable {
		_, isExcused := excused[c.Name]
		switch {
		case !isMade[c.Name] && !isExcused:
			problems = append(problems, fmt.Sprintf("%s: does not make %s and gives no reason", runner, c.Name))
		case isMade[c.Name] && isExcused:
			problems = append(problems, fmt.Sprintf("%s: makes %s but gives a reason not to", runner, c.Name))
		}
	}
	for _, name := range append(slices.Sorted(maps.Keys(isMade)), slices.Sorted(maps.Keys(excused))...) {
		if _, ok := calls[name]; !ok {
			problems = append(problems, fmt.Sprintf("%s: names %s, which the call table does not declare", runner, name))
		}
	}
	return problems
}
