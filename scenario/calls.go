package scenario

import (
	"fmt"
	"strconv"
	"strings"
)

// argKind is what an argument position accepts.
type argKind int

const (
	argInt    argKind = iota // an integer or constant expression
	argPid                   // an integer, a task name or -NAME
	argSet                   // a semaphore-set name or an integer id
	argSembuf                // {NUM, OP, FLAGS}
	argSemArg                // semctl's fourth argument: an integer or a value list
)

// creates says what a call creates, and so whether "NAME =" may bind its result.
type creates int

const (
	createsNothing creates = iota
	createsTask
	createsSet
)

// callSpec is the shape of one call: the kinds of its positions and the argument counts it
// takes. A call with a rest kind takes its fixed positions and then one or more of rest.
type callSpec struct {
	args    []argKind
	counts  []int // allowed counts when some trailing positions are optional; nil: len(args)
	rest    *argKind
	creates creates
}

var sembufRest = argSembuf

// calls is version 1 of the language plus unshare, an extension.
var calls = map[string]callSpec{
	"fork":        {creates: createsTask},
	"clone":       {args: []argKind{argInt, argInt}, counts: []int{1, 2}, creates: createsTask},
	"exit":        {args: []argKind{argInt}},
	"exit_group":  {args: []argKind{argInt}},
	"execve":      {},
	"wait4":       {args: []argKind{argPid, argInt}},
	"waitid":      {args: []argKind{argInt, argPid, argInt}},
	"getpid":      {},
	"gettid":      {},
	"getppid":     {},
	"getpgrp":     {},
	"getpgid":     {args: []argKind{argPid}},
	"getsid":      {args: []argKind{argPid}},
	"setsid":      {},
	"setpgid":     {args: []argKind{argPid, argPid}},
	"getpriority": {args: []argKind{argInt, argPid}},
	"setpriority": {args: []argKind{argInt, argPid, argInt}},
	"setuid":      {args: []argKind{argInt}},
	"setresuid":   {args: []argKind{argInt, argInt, argInt}},
	"setgid":      {args: []argKind{argInt}},
	"setresgid":   {args: []argKind{argInt, argInt, argInt}},
	"setrlimit":   {args: []argKind{argInt, argInt, argInt}, counts: []int{2, 3}},
	"kill":        {args: []argKind{argPid, argInt}},
	"tgkill":      {args: []argKind{argPid, argPid, argInt}},
	"signal":      {args: []argKind{argInt, argInt}},
	"sigaction":   {args: []argKind{argInt, argInt, argInt}},
	"prctl":       {args: []argKind{argInt, argInt}, counts: []int{1, 2}},
	"ptrace":      {args: []argKind{argInt, argPid, argInt, argInt}, counts: []int{1, 2, 4}},
	"semget":      {args: []argKind{argInt, argInt, argInt}, creates: createsSet},
	"semop":       {args: []argKind{argSet}, rest: &sembufRest},
	"semtimedop":  {args: []argKind{argSet, argInt}, rest: &sembufRest},
	"semctl":      {args: []argKind{argSet, argInt, argInt, argSemArg}, counts: []int{3, 4}},
	"unshare":     {args: []argKind{argInt}},
}

// allows reports whether the call takes n arguments.
func (c callSpec) allows(n int) bool {
	if c.rest != nil {
		return n > len(c.args)
	}
	if c.counts == nil {
		return n == len(c.args)
	}
	for _, k := range c.counts {
		if k == n {
			return true
		}
	}
	return false
}

// maxArgs is the most arguments the call takes, -1 for no limit.
func (c callSpec) maxArgs() int {
	if c.rest != nil {
		return -1
	}
	return len(c.args)
}

// kind is what position i accepts.
func (c callSpec) kind(i int) argKind {
	if i < len(c.args) {
		return c.args[i]
	}
	return *c.rest
}

// arity describes the counts the call takes, for error messages.
func (c callSpec) arity() string {
	if c.rest != nil {
		return fmt.Sprintf("%d or more arguments", len(c.args)+1)
	}
	counts := c.counts
	if counts == nil {
		counts = []int{len(c.args)}
	}
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

func (k argKind) String() string {
	switch k {
	case argPid:
		return "a pid or task name"
	case argSet:
		return "a semaphore set"
	case argSembuf:
		return "a sembuf {NUM, OP, FLAGS}"
	case argSemArg:
		return "an integer or a value list"
	}
	return "an integer"
}
