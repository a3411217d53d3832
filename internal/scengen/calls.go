package scengen

import (
	"fmt"
	"strconv"
	"strings"

	"tasklist/scenario"
)

// Moves write calls through the scenario language's call table: a move names a call and gives
// its arguments as typed values, and callText checks them against the call's declaration
// (scenario.LookupCall) before it writes the text. A call the language lacks, a count it does
// not take or an argument its position does not accept is a bug in a move, and panics: every
// move runs in the package's tests.

// argForm is the form an argument is written in, as the scenario parser reads it.
type argForm int

const (
	formConst  argForm = iota // an integer, or constants joined with |
	formTask                  // a task's name, or -NAME for the process group it leads
	formSet                   // a semaphore set's name
	formSembuf                // {NUM, OP, FLAGS}
	formList                  // [V ...], semctl's value list
	formFile                  // a pidfd's name
)

// arg is one argument of a call.
type arg struct {
	form argForm
	text string
}

// num is an integer argument.
func num(n int) arg { return arg{formConst, strconv.Itoa(n)} }

// constant is an integer or constant expression written out: "-1", "SIGCHLD",
// "WNOHANG|__WALL".
func constant(expr string) arg { return arg{formConst, expr} }

// named is a task given by name: a task, or the leader whose pid is a process group's id.
func named(name string) arg { return arg{formTask, name} }

// group is -NAME: the process group NAME's pid is the id of.
func group(name string) arg { return arg{formTask, "-" + name} }

// set is a semaphore set given by name.
func set(s semSet) arg { return arg{formSet, s.name} }

// file is a pidfd given by name.
func file(f *pfile) arg { return arg{formFile, f.name} }

// sembuf is one semaphore operation.
func sembuf(num, op int, flags string) arg {
	return arg{formSembuf, fmt.Sprintf("{%d, %d, %s}", num, op, flags)}
}

// values is semctl's value list.
func values(vals []int) arg {
	words := make([]string, len(vals))
	for i, v := range vals {
		words[i] = strconv.Itoa(v)
	}
	return arg{formList, "[" + strings.Join(words, " ") + "]"}
}

// accepts reports whether a position of kind k takes an argument written in form f, as the
// scenario parser decides.
func accepts(k scenario.ArgKind, f argForm) bool {
	switch k {
	case scenario.ArgPid:
		return f == formConst || f == formTask
	case scenario.ArgID:
		return f == formConst || f == formTask || f == formFile
	case scenario.ArgFD:
		return f == formFile
	case scenario.ArgSet:
		return f == formConst || f == formSet
	case scenario.ArgSembuf:
		return f == formSembuf
	case scenario.ArgSemArg:
		return f == formConst || f == formList
	case scenario.ArgSigset:
		return f == formList
	}
	return f == formConst
}

// callText writes the call name with args, "NAME(ARG, ...)", checked against the call table.
func callText(name string, args ...arg) string {
	spec, ok := scenario.LookupCall(name)
	if !ok {
		panic("scengen: the scenario language has no call " + name)
	}
	if n := len(args); !spec.Allows(n) {
		panic(fmt.Sprintf("scengen: %s takes %v arguments, not %d", name, spec.ArgCounts(), n))
	}
	texts := make([]string, len(args))
	for i, a := range args {
		if !accepts(spec.Kind(i), a.form) {
			panic(fmt.Sprintf("scengen: argument %d of %s must be %s, not %q", i+1, name, spec.Kind(i), a.text))
		}
		texts[i] = a.text
	}
	return name + "(" + strings.Join(texts, ", ") + ")"
}

// call writes t's foreground call name(args).
func (g *gen) call(t *task, name string, args ...arg) {
	g.emit("%s.%s", t.name, callText(name, args...))
}

// bind writes "bound = t.name(args)", a call whose result the name bound stands for.
func (g *gen) bind(bound string, t *task, name string, args ...arg) {
	g.emit("%s = %s.%s", bound, t.name, callText(name, args...))
}

// background issues t's call name(args), which may block, in the background; kind is what
// it waits for ("wait", "sem", "exec", "vfork").
func (g *gen) background(t *task, kind, name string, args ...arg) {
	g.bindBackground("", t, kind, name, args...)
}

// bindBackground is background with "bound = " before the call when bound is not empty.
func (g *gen) bindBackground(bound string, t *task, kind, name string, args ...arg) {
	if bound != "" {
		bound += " = "
	}
	g.emit("%s%s.%s &", bound, t.name, callText(name, args...))
	t.bg, t.poked = kind, false
}
