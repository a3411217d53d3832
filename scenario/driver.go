package scenario

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// named is a name bound to a task or a set, in binding order.
type named struct {
	name string
	ref  int
}

// nameState is what a name stands for at run time. A name whose creating call failed, or
// was skipped, is known to the parser but names nothing; failedLine says which line that was.
type nameState struct {
	set        bool
	ref        int
	failedLine int
	call       string
}

// runner is the state of one run: the names bound so far and each actor's background call.
type runner struct {
	file           string
	b              Backend
	stdout, stderr io.Writer
	names          map[string]nameState
	tasks, sets    []named
	started        map[string]bool // actor -> whether its background call reached the Backend
	status         int
}

// Run runs a parsed script on b, one statement at a time, printing "LINE: SOURCE = RESULT" for
// each executed statement on stdout and each failed expectation on stderr. It returns 0 when
// every expectation held and 1 otherwise. It does not close b.
func Run(s *Script, b Backend, stdout, stderr io.Writer) int {
	r := &runner{
		file:    s.file,
		b:       b,
		stdout:  stdout,
		stderr:  stderr,
		names:   map[string]nameState{"init": {ref: int(Init)}},
		tasks:   []named{{name: "init", ref: int(Init)}},
		started: map[string]bool{},
	}
	for _, st := range s.stmts {
		if st.join {
			r.join(st)
		} else {
			r.call(st)
		}
	}
	return r.status
}

func (r *runner) call(st *stmt) {
	actor, ok := r.task(st.actor, st.actorPos)
	var args []Value
	if ok {
		args, ok = r.resolve(st.args)
	}
	if !ok {
		if st.background {
			r.started[st.actor] = false
		}
		r.bindNothing(st)
		return
	}
	c := Call{Name: st.call, Args: args, Pos: st.callPos}
	if st.background {
		r.b.Start(actor, c)
		r.started[st.actor] = true
		return
	}
	r.finish(st, st, actor, r.b.Do(actor, c))
}

func (r *runner) join(st *stmt) {
	started := r.started[st.actor]
	delete(r.started, st.actor)
	if !started {
		r.fail(st.actorPos, "join %s: the background call on line %d did not run", st.actor, st.issued.line)
		r.bindNothing(st.issued)
		return
	}
	actor, _ := r.task(st.actor, st.actorPos) // it resolved when its call started
	r.finish(st, st.issued, actor, r.b.Join(actor))
}

// finish binds what issued created, prints the line of st, which is issued itself or the join
// that waited for it, and checks the expectations of both.
func (r *runner) finish(st, issued *stmt, actor TaskRef, res Result) {
	if issued.bind != "" {
		switch {
		case issued.creates == createsTask && res.Kind == ResultNewTask:
			r.names[issued.bind] = nameState{ref: int(res.NewTask)}
			r.tasks = append(r.tasks, named{name: issued.bind, ref: int(res.NewTask)})
		case issued.creates == createsSet && res.Kind == ResultNewSet:
			r.names[issued.bind] = nameState{set: true, ref: int(res.NewSet)}
			r.sets = append(r.sets, named{name: issued.bind, ref: int(res.NewSet)})
		default:
			r.bindNothing(issued)
		}
	}
	got := r.format(actor, res)
	fmt.Fprintf(r.stdout, "%d: %s = %s\n", st.line, st.source, got)
	r.check(issued, got)
	if st != issued {
		r.check(st, got)
	}
}

// bindNothing records that the name st binds, if any, names nothing: st did not run, so the
// name must not stand for whatever its zero value would (init).
func (r *runner) bindNothing(st *stmt) {
	if st.bind != "" {
		r.names[st.bind] = nameState{failedLine: st.line, call: st.call}
	}
}

// check compares a printed result with the statement's expectation, if it has one.
func (r *runner) check(st *stmt, got string) {
	if st.expect != "" && collapse(st.expect) != collapse(got) {
		fmt.Fprintf(r.stderr, "%s:%d: expected %s, got %s\n", r.file, st.line, st.expect, got)
		r.status = 1
	}
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// fail reports a statement that cannot run and skips it.
func (r *runner) fail(pos Position, format string, args ...any) {
	fmt.Fprintf(r.stderr, "%s:%d:%d: %s\n", pos.File, pos.Line, pos.Col, fmt.Sprintf(format, args...))
	r.status = 1
}

// lookup finds what name stands for now; the parser has made sure it was bound.
func (r *runner) lookup(name string, pos Position) (nameState, bool) {
	ns := r.names[name]
	if ns.failedLine != 0 {
		r.fail(pos, "%s names nothing: its %s on line %d failed", name, ns.call, ns.failedLine)
		return ns, false
	}
	return ns, true
}

func (r *runner) task(name string, pos Position) (TaskRef, bool) {
	ns, ok := r.lookup(name, pos)
	return TaskRef(ns.ref), ok
}

// resolve turns parsed arguments into Values, names into the references they are bound to.
func (r *runner) resolve(args []arg) ([]Value, bool) {
	vals := make([]Value, len(args))
	for i, a := range args {
		switch a.form {
		case formInt:
			vals[i] = Value{Kind: ValueInt, Int: a.val}
		case formSembufs:
			vals[i] = Value{Kind: ValueSembufs, Sembufs: a.sembufs}
		case formList:
			vals[i] = Value{Kind: ValueList, List: a.list}
		case formName:
			ns, ok := r.lookup(a.name, a.pos)
			if !ok {
				return nil, false
			}
			if ns.set {
				vals[i] = Value{Kind: ValueSet, Set: SetRef(ns.ref)}
			} else {
				vals[i] = Value{Kind: ValueTask, Task: TaskRef(ns.ref), Neg: a.neg}
			}
		}
	}
	return vals, true
}

// RunFile parses the scenario at path, makes a Backend with newBackend, runs the scenario on it
// and closes it. It returns the exit status of the contract: 0 when every expectation held, 1
// when one failed, 2 when the file cannot be read or parsed or the Backend cannot be made or
// closed, each said in one line on stderr.
func RunFile(path string, newBackend func() (Backend, error), stdout, stderr io.Writer) int {
	src, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	s, err := Parse(path, src)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	b, err := newBackend()
	if err != nil {
		fmt.Fprintf(stderr, "%s: cannot run: %v\n", path, err)
		return 2
	}
	status := Run(s, b, stdout, stderr)
	if err := b.Close(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", path, err)
		return 2
	}
	return status
}
