package scenario

import (
	"fmt"
	"io"
	"iter"
	"strings"
)

// named is a name bound to a task or a set, in binding order.
type named struct {
	name string
	ref  int
}

// nameState is what a name stands for at run time. The zero nameState is unbound: a name whose
// creating statement failed, or did not run, is known to the parser but names nothing, and
// unbound says why.
type nameState struct {
	bound   bool
	kind    creates
	ref     int
	unbound string
}

// runner is the state of one run: the names bound so far and each actor's background call.
type runner struct {
	file    string
	b       Backend
	names   map[string]nameState
	tasks   []named
	sets    []named
	files   []named
	started map[string]bool // actor -> whether its background call reached the Backend
	// making holds the task names of background calls not yet joined, which stand for their
	// tasks as soon as the Backend has made them (Backend.Made), by name.
	making map[string]making
}

// making is a background call that binds a task's name.
type making struct {
	actor TaskRef
	st    *stmt
}

// Outcomes runs a parsed script on b, one statement at a time, and yields the outcome of each
// statement as soon as it is known (see [Outcome]); a background call yields nothing when it
// starts, its join yields its result. The sequence ends after an outcome whose Backend could
// not tell what the call did (ResultFatal), or when the consumer stops. It does not close b.
//
// Run prints the outcomes as they come; package diff gathers them into a slice (through
// ExecSource) to compare two runs.
func Outcomes(s *Script, b Backend) iter.Seq[Outcome] {
	return func(yield func(Outcome) bool) {
		r := &runner{
			file:    s.file,
			b:       b,
			names:   map[string]nameState{"init": {bound: true, kind: createsTask, ref: int(Init)}},
			tasks:   []named{{name: "init", ref: int(Init)}},
			started: map[string]bool{},
			making:  map[string]making{},
		}
		for _, st := range s.stmts {
			var o Outcome
			var ok bool
			if st.join {
				o, ok = r.join(st), true
			} else {
				o, ok = r.call(st)
			}
			if ok && (!yield(o) || o.Result.Kind == ResultFatal) {
				return
			}
		}
	}
}

// Run runs a parsed script on b and prints each outcome as it comes (Outcome.Print):
// "LINE: SOURCE = RESULT" for each executed statement on stdout, each failed expectation and
// each statement that could not run on stderr. It returns 0 when every expectation held and 1
// otherwise, or 2 when b could not tell what a call did: that is said as "FILE:LINE: why" on
// stderr, and the run stops there. It does not close b.
func Run(s *Script, b Backend, stdout, stderr io.Writer) int {
	p := printer{stdout: stdout, stderr: stderr}
	for o := range Outcomes(s, b) {
		p.print(o)
	}
	return p.status
}

// printer prints outcomes as they come and keeps the status of the run so far.
type printer struct {
	stdout, stderr io.Writer
	status         int
}

func (p *printer) print(o Outcome) {
	o.Print(p.stdout, p.stderr)
	p.status = max(p.status, o.Status())
}

// outcome starts the outcome of st.
func (r *runner) outcome(st *stmt) Outcome {
	return Outcome{File: r.file, Line: st.line, Source: st.source, Call: st.call}
}

// call runs a call statement. It has no outcome (ok false) when it started in the background.
func (r *runner) call(st *stmt) (o Outcome, ok bool) {
	o = r.outcome(st)
	r.bindMade()
	actor, skipped := r.task(st.actor, st.actorPos)
	var args []Value
	if skipped == nil {
		args, skipped = r.resolve(st.args)
	}
	if skipped != nil {
		if st.background {
			r.started[st.actor] = false
		}
		r.unbind(st, "did not run")
		o.Skipped = skipped
		return o, true
	}
	c := Call{Name: st.call, Args: args, Pos: st.callPos}
	if st.background {
		if err := r.b.Start(actor, c); err != nil {
			o.Result = Result{Kind: ResultFatal, Err: err}
			return o, true
		}
		r.started[st.actor] = true
		if st.bind != "" && st.creates == createsTask {
			r.names[st.bind] = nameState{unbound: fmt.Sprintf("its %s on line %d has made no task yet", st.call, st.line)}
			r.making[st.bind] = making{actor: actor, st: st}
		}
		return o, false
	}
	return r.finish(o, st, st, actor, r.b.Do(actor, c)), true
}

// bindMade binds the name of each task a background call has made by now.
func (r *runner) bindMade() {
	for name, m := range r.making {
		if ref, ok := r.b.Made(m.actor); ok {
			r.bindTask(name, ref, false)
			delete(r.making, name)
		}
	}
}

// bindTask binds name to the task ref; with printed, pid results name the task too. A task
// made in the background is named in results only from its join on, as in version 1, which
// had no other way to name it: its number is printed until then.
func (r *runner) bindTask(name string, ref TaskRef, printed bool) {
	r.names[name] = nameState{bound: true, kind: createsTask, ref: int(ref)}
	if printed {
		r.tasks = append(r.tasks, named{name: name, ref: int(ref)})
	}
}

func (r *runner) join(st *stmt) Outcome {
	o := r.outcome(st)
	r.bindMade()
	o.Call = st.issued.call
	started := r.started[st.actor]
	delete(r.started, st.actor)
	if !started {
		o.Skipped = r.errAt(st.actorPos, "join %s: the background call on line %d did not run", echo(st.actor), st.issued.line)
		r.unbind(st.issued, "did not run")
		return o
	}
	actor, _ := r.task(st.actor, st.actorPos) // it resolved when its call started
	return r.finish(o, st, st.issued, actor, r.b.Join(actor))
}

// finish completes o, the outcome of st, with what issued returned: st is issued itself or the
// join that waited for it. It binds what issued created, formats the result and checks the
// expectations of both.
func (r *runner) finish(o Outcome, st, issued *stmt, actor TaskRef, res Result) Outcome {
	o.Result = res
	if res.Kind == ResultFatal {
		return o
	}
	if issued.bind != "" {
		delete(r.making, issued.bind)
		switch ns := r.names[issued.bind]; {
		case ns.bound:
			// A task made in the background, named before its join.
			r.tasks = append(r.tasks, named{name: issued.bind, ref: ns.ref})
		case issued.creates == createsTask && res.Kind == ResultNewTask:
			r.bindTask(issued.bind, res.NewTask, true)
		case issued.creates == createsSet && res.Kind == ResultNewSet:
			r.names[issued.bind] = nameState{bound: true, kind: createsSet, ref: int(res.NewSet)}
			r.sets = append(r.sets, named{name: issued.bind, ref: int(res.NewSet)})
		case issued.creates == createsFile && res.Kind == ResultNewFile:
			r.bindFile(issued.bind, res.NewFile)
		default:
			r.unbindName(issued.bind, issued, "failed")
		}
	}
	if issued.bindFile != "" {
		if res.Kind == ResultNewTask && res.HasFile {
			r.bindFile(issued.bindFile, res.NewFile)
		} else {
			r.unbindName(issued.bindFile, issued, "failed")
		}
	}
	o.Text = r.format(actor, res)
	o.check(issued)
	if st != issued {
		o.check(st)
	}
	return o
}

// check records st's expectation, if it has one, as a mismatch when the text it printed does
// not meet it; white space does not count.
func (o *Outcome) check(st *stmt) {
	if st.expect != "" && collapse(st.expect) != collapse(o.Text) {
		o.Mismatches = append(o.Mismatches, Mismatch{Line: st.line, Expect: st.expect})
	}
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// errAt describes a statement that cannot run.
func (r *runner) errAt(pos Position, format string, args ...any) *Error {
	return &Error{File: pos.File, Line: pos.Line, Col: pos.Col, Msg: fmt.Sprintf(format, args...)}
}

func (r *runner) bindFile(name string, ref FileRef) {
	r.names[name] = nameState{bound: true, kind: createsFile, ref: int(ref)}
	r.files = append(r.files, named{name: name, ref: int(ref)})
}

// unbind records that the names st binds, if any, name nothing because st failed or did not
// run, so that every later use of them is refused with that reason.
func (r *runner) unbind(st *stmt, why string) {
	for _, name := range []string{st.bind, st.bindFile} {
		if name != "" {
			delete(r.making, name)
			r.unbindName(name, st, why)
		}
	}
}

func (r *runner) unbindName(name string, st *stmt, why string) {
	r.names[name] = nameState{unbound: fmt.Sprintf("its %s on line %d %s", st.call, st.line, why)}
}

// lookup finds what name stands for now. The parser has made sure that a statement binding it
// came first; a name that statement did not bind is refused with the reason.
func (r *runner) lookup(name string, pos Position) (nameState, *Error) {
	ns := r.names[name]
	if !ns.bound {
		return ns, r.errAt(pos, "%s names nothing: %s", echo(name), ns.unbound)
	}
	return ns, nil
}

func (r *runner) task(name string, pos Position) (TaskRef, *Error) {
	ns, err := r.lookup(name, pos)
	return TaskRef(ns.ref), err
}

// resolve turns parsed arguments into Values, names into the references they are bound to.
func (r *runner) resolve(args []arg) ([]Value, *Error) {
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
			ns, err := r.lookup(a.name, a.pos)
			if err != nil {
				return nil, err
			}
			switch ns.kind {
			case createsSet:
				vals[i] = Value{Kind: ValueSet, Set: SetRef(ns.ref)}
			case createsFile:
				vals[i] = Value{Kind: ValueFile, File: FileRef(ns.ref)}
			default:
				vals[i] = Value{Kind: ValueTask, Task: TaskRef(ns.ref), Neg: a.neg}
			}
		}
	}
	return vals, nil
}
