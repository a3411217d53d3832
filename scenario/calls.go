package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ArgKind is what an argument position of a call accepts.
type ArgKind int

// The kinds of argument position.
const (
	ArgInt    ArgKind = iota // an integer or constant expression: a ValueInt
	ArgPid                   // an integer, a task name or -NAME: a ValueInt or ValueTask
	ArgSet                   // a semaphore-set name or an integer id: a ValueSet or ValueInt
	ArgSembuf                // {NUM, OP, FLAGS}; all of a call's form one final ValueSembufs
	ArgSemArg                // semctl's fourth argument: an integer or a value list (ValueList)
)

// creates says what a call creates, and so whether "NAME =" may bind its result.
type creates int

const (
	createsNothing creates = iota
	createsTask
	createsSet
)

// CallSpec declares one call of the language: its name, the kinds of its argument positions,
// the argument counts it takes, and the kinds of Result it returns. It is the one place a call
// is declared: the parser checks statements against it, and each runner's tests check that the
// runner makes every declared call with the declared arguments and returns what it declares.
type CallSpec struct {
	Name string
	// Args are the kinds of the call's positions.
	Args []ArgKind
	// Counts are the argument counts the call takes when some trailing positions are
	// optional; nil means len(Args).
	Counts []int
	// Rest, when set, is the kind of one or more arguments the call takes after Args.
	Rest *ArgKind
	// Results are the kinds of Result the call returns when it returns. Any call may also
	// fail (ResultErrno), end with its task (ResultDone) or be beyond its runner's telling
	// (ResultFatal): see [CallSpec.Returns].
	Results []ResultKind
}

var sembufRest = ArgSembuf

// Shorthands for the call table.
var (
	returnsInt  = []ResultKind{ResultInt}
	returnsPid  = []ResultKind{ResultPid}
	returnsWait = []ResultKind{ResultWait, ResultInt} // ResultInt 0: WNOHANG found nothing
)

// callTable is version 1 of the language plus unshare, an extension, in name order.
var callTable = []CallSpec{
	{Name: "clone", Args: []ArgKind{ArgInt, ArgInt}, Counts: []int{1, 2}, Results: []ResultKind{ResultNewTask}},
	{Name: "execve", Results: returnsInt},
	{Name: "exit", Args: []ArgKind{ArgInt}, Results: []ResultKind{ResultDone}},
	{Name: "exit_group", Args: []ArgKind{ArgInt}, Results: []ResultKind{ResultDone}},
	{Name: "fork", Results: []ResultKind{ResultNewTask}},
	{Name: "getpgid", Args: []ArgKind{ArgPid}, Results: returnsPid},
	{Name: "getpgrp", Results: returnsPid},
	{Name: "getpid", Results: returnsPid},
	{Name: "getppid", Results: returnsPid},
	{Name: "getpriority", Args: []ArgKind{ArgInt, ArgPid}, Results: returnsInt},
	{Name: "getsid", Args: []ArgKind{ArgPid}, Results: returnsPid},
	{Name: "gettid", Results: returnsPid},
	{Name: "kill", Args: []ArgKind{ArgPid, ArgInt}, Results: returnsInt},
	{Name: "prctl", Args: []ArgKind{ArgInt, ArgInt}, Counts: []int{1, 2}, Results: returnsInt},
	{Name: "ptrace", Args: []ArgKind{ArgInt, ArgPid, ArgInt, ArgInt}, Counts: []int{1, 2, 4}, Results: returnsInt},
	{Name: "semctl", Args: []ArgKind{ArgSet, ArgInt, ArgInt, ArgSemArg}, Counts: []int{3, 4},
		Results: []ResultKind{ResultInt, ResultList, ResultPid}}, // ResultList: GETALL; ResultPid: GETPID
	{Name: "semget", Args: []ArgKind{ArgInt, ArgInt, ArgInt}, Results: []ResultKind{ResultNewSet}},
	{Name: "semop", Args: []ArgKind{ArgSet}, Rest: &sembufRest, Results: returnsInt},
	{Name: "semtimedop", Args: []ArgKind{ArgSet, ArgInt}, Rest: &sembufRest, Results: returnsInt},
	{Name: "setgid", Args: []ArgKind{ArgInt}, Results: returnsInt},
	{Name: "setpgid", Args: []ArgKind{ArgPid, ArgPid}, Results: returnsInt},
	{Name: "setpriority", Args: []ArgKind{ArgInt, ArgPid, ArgInt}, Results: returnsInt},
	{Name: "setresgid", Args: []ArgKind{ArgInt, ArgInt, ArgInt}, Results: returnsInt},
	{Name: "setresuid", Args: []ArgKind{ArgInt, ArgInt, ArgInt}, Results: returnsInt},
	{Name: "setrlimit", Args: []ArgKind{ArgInt, ArgInt, ArgInt}, Counts: []int{2, 3}, Results: returnsInt},
	{Name: "setsid", Results: returnsPid},
	{Name: "setuid", Args: []ArgKind{ArgInt}, Results: returnsInt},
	{Name: "sigaction", Args: []ArgKind{ArgInt, ArgInt, ArgInt}, Results: returnsInt},
	{Name: "signal", Args: []ArgKind{ArgInt, ArgInt}, Results: returnsInt},
	{Name: "tgkill", Args: []ArgKind{ArgPid, ArgPid, ArgInt}, Results: returnsInt},
	{Name: "unshare", Args: []ArgKind{ArgInt}, Results: returnsInt},
	{Name: "wait4", Args: []ArgKind{ArgPid, ArgInt}, Results: returnsWait},
	{Name: "waitid", Args: []ArgKind{ArgInt, ArgPid, ArgInt}, Results: returnsWait},
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
	}
	return createsNothing
}

// allows reports whether the call takes n arguments.
func (c CallSpec) allows(n int) bool {
	if c.Rest != nil {
		return n > len(c.Args)
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
		return fmt.Sprintf("%d or more arguments", len(c.Args)+1)
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
	}
	return "an integer"
}
