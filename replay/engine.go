package replay

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"tasklist/plan"
	"tasklist/scenario"
	"tasklist/scenario/modelrun"
)

// actKind says what the replay does with a call.
type actKind int

const (
	// actReplay makes the call in the model and compares the results.
	actReplay actKind = iota
	// actQuery reads the model's state in place of a call the scenario language lacks but
	// the model answers (a disposition, a limit, an id), and compares.
	actQuery
	// actOutside counts a call outside the model's scope, by reason.
	actOutside
	// actUnsupported counts a call in scope that the model lacks, by reason.
	actUnsupported
)

// action is what the replay does with one call, decided by the call's row.
type action struct {
	kind   actKind
	reason string
	call   scenario.Call
	// query answers an actQuery; pre, for an actReplay, reads what the call will change
	// (an old action, an old limit), before it is made.
	query, pre func() string
	// expect prints the trace's result as the model's is printed; it runs once the call
	// has returned, when what the call created is bound.
	expect func() string
	// model prints the model's result (default: printResult); after runs once it is in,
	// to bind what the call created.
	model func(scenario.Result) string
	after func(scenario.Result)
}

func outsideScope(reason string) action { return action{kind: actOutside, reason: reason} }
func unsupported(reason string) action  { return action{kind: actUnsupported, reason: reason} }

// replayer replays one trace on a fresh model.
type replayer struct {
	file   string
	events []Event
	calls  map[int]*traceCall
	b      *backend
	tasks  tasks
	// sets maps a semaphore id of the trace to the model's set.
	sets map[int64]scenario.SetRef
	sum  *Summary
	opts Options
	// at is the index of the event being replayed.
	at int
}

// Options are the replay's settings.
type Options struct {
	// Plan is the lock plan the model runs under; nil is tasklist's own design.
	Plan *plan.Plan
	// Explain is how many lines of trace to show around each divergence, with the model's
	// view of the tasks involved; 0 shows none.
	Explain int
}

// Replay replays a parsed trace on a fresh model and compares every result.
func Replay(file string, h Header, events []Event, opts Options) (*Summary, error) {
	return replay(file, h, events, opts, nil)
}

// replay is Replay, with rec, when not nil, told of every call made on the model.
func replay(file string, h Header, events []Event, opts Options, rec *recorder) (*Summary, error) {
	calls, err := pairCalls(events)
	if err != nil {
		err.(*SyntaxError).File = file
		return nil, err
	}
	mb, err := modelrun.NewWithPlan(opts.Plan)
	if err != nil {
		return nil, err
	}
	defer mb.Close()
	b := &backend{Backend: mb, rec: rec}
	root := &pidns{root: true}
	r := &replayer{file: file, events: events, calls: calls, b: b, opts: opts,
		tasks: tasks{byTid: map[int]*task{}, root: root}, sets: map[int64]scenario.SetRef{},
		sum: newSummary(file)}
	if rec != nil {
		rec.attach(r)
	}
	if len(events) == 0 {
		return r.sum, nil
	}
	if err := r.start(h, events[0].Tid); err != nil {
		return nil, err
	}
	for r.at = range events {
		r.event(&events[r.at])
	}
	r.finish()
	return r.sum, nil
}

// start creates the traced root as a child of the model's init, with the starting state the
// header gives, or failing one, the trace's first reads.
func (r *replayer) start(h Header, tid int) error {
	res := r.b.Do(scenario.Init, scenario.Call{Name: "fork"})
	if res.Kind != scenario.ResultNewTask {
		return fmt.Errorf("the model's init cannot fork the traced process: %s", r.printResult(scenario.Init, res))
	}
	t := r.tasks.add(tid, r.tasks.root)
	t.ref, t.bound = res.NewTask, true
	if h.Nice == nil && h.UIDs == nil && h.Limits == nil {
		h = firstReads(r.events, tid)
	}
	var setup []scenario.Call
	for res := range 16 {
		if lim, ok := h.Limits[res]; ok {
			setup = append(setup, scenario.Call{Name: "setrlimit", Args: ints(int64(res), int64(lim[0]), int64(lim[1]))})
		}
	}
	if h.Nice != nil {
		setup = append(setup, scenario.Call{Name: "setpriority", Args: ints(unix.PRIO_PROCESS, 0, int64(*h.Nice))})
	}
	if h.GIDs != nil {
		setup = append(setup, scenario.Call{Name: "setresgid", Args: ints(int64(h.GIDs[0]), int64(h.GIDs[1]), int64(h.GIDs[2]))})
	}
	if h.UIDs != nil {
		setup = append(setup, scenario.Call{Name: "setresuid", Args: ints(int64(h.UIDs[0]), int64(h.UIDs[1]), int64(h.UIDs[2]))})
	}
	for _, c := range setup {
		if res := r.b.Do(t.ref, c); res.Kind == scenario.ResultErrno {
			return fmt.Errorf("the traced process's starting state: %s%v: %v", c.Name, c.Args, res.Errno)
		}
	}
	return nil
}

func ints(vs ...int64) []scenario.Value {
	args := make([]scenario.Value, len(vs))
	for i, v := range vs {
		args[i] = scenario.Value{Kind: scenario.ValueInt, Int: v}
	}
	return args
}

// event replays one line.
func (r *replayer) event(ev *Event) {
	switch ev.Kind {
	case KindCall, KindUnfinished:
		r.enter(r.calls[r.at])
	case KindResumed:
		if t := r.tasks.byTid[ev.Tid]; t != nil && t.call != nil {
			r.exit(t, t.call)
		}
	case KindSignal:
		r.signal(ev)
	case KindStopped:
		r.stopped(ev)
	case KindExited, KindKilled:
		r.end(ev)
	case KindSuperseded:
		r.superseded(ev)
	}
}

// taskOf returns the task a line is about, creating the task for a tid first seen: a child
// whose first line comes before its creator's clone returns.
func (r *replayer) taskOf(tid int) *task {
	if t := r.tasks.byTid[tid]; t != nil && !t.ended {
		return t
	}
	creator := r.pendingCreator(tid)
	if creator == nil {
		// A thread whose creation the trace does not show (strace attached to it): it
		// has no model twin.
		return r.tasks.add(tid, r.tasks.root)
	}
	return r.bindChild(creator, tid, 0)
}

// pendingCreator returns the task whose creating call in progress made tid: the one whose
// result, further on in the trace, is tid; failing that (a result strace did not translate
// from another pid namespace), the one that started last.
func (r *replayer) pendingCreator(tid int) *task {
	var last *task
	for _, t := range r.tasks.all {
		c := t.call
		if c == nil || !creates(c.name) || c.act.kind != actReplay || c.child != nil {
			continue
		}
		res := c.result()
		if res.StraceValue == int64(tid) || (res.StraceValue == 0 && t.ns.root && res.Value == int64(tid)) {
			return t
		}
		if last == nil || c.entry.Line > last.call.entry.Line {
			last = t
		}
	}
	return last
}

// enter replays a call's entry line.
func (r *replayer) enter(c *traceCall) {
	t := r.taskOf(c.entry.Tid)
	t.stopped = false
	if prev := t.interrupted; prev != nil {
		if r.resolveInterrupted(t, prev, c) {
			return
		}
	}
	r.sum.Calls++
	c.counted = true
	c.act = r.decide(t, c)
	if prev := t.interrupted; prev != nil && prev.started && c.act.kind != actOutside {
		// The model's call still waits where the trace's task runs a signal handler: the
		// model has no handler code to make this call in.
		c.act = unsupported("made in a signal handler while the model's interrupted call waits")
	}
	if r.aheadOfSignal(t, c) {
		c.act = outsideScope(signalRace)
	}
	switch {
	case c.act.kind == actOutside:
		r.sum.outside(c.act.reason)
		c.settled = true
		t.call = c
	case c.act.kind == actUnsupported:
		r.sum.unsupported(c.act.reason)
		c.settled = true
		t.call = c
	case !t.bound:
		r.sum.unsupported("made by a task the model did not create")
		c.act = unsupported("")
		c.settled = true
		t.call = c
	case c.act.kind == actQuery:
		got := c.act.query()
		r.b.queried(t.ref, c)
		t.call = c
		c.model = &got
	default:
		t.call = c
		if c.act.pre != nil {
			c.preText = c.act.pre()
		}
		r.makeCall(t, c)
	}
	if c.exit == c.entry {
		r.exit(t, c)
	}
}

// makeCall makes c in the model in the background.
func (r *replayer) makeCall(t *task, c *traceCall) {
	if err := r.b.Start(t.ref, c.act.call); err != nil {
		c.model = ptr(err.Error())
		return
	}
	c.started = true
	if sendsSignals[c.name] {
		r.sent(t, c)
	}
}

// exit replays the line with a call's result: it joins the model's call and compares.
func (r *replayer) exit(t *task, c *traceCall) {
	if c.result().Restart() {
		// Interrupted by a signal: what the task does next says whether it restarts the
		// call or sees EINTR.
		t.interrupted = c
		t.call = nil
		return
	}
	t.call = nil
	model := r.join(t, c)
	if model == nil {
		return
	}
	r.compare(t, c, c.act.expect(), *model)
}

// join returns the model's result of c, joining its background call; nil for a call not
// made in the model.
func (r *replayer) join(t *task, c *traceCall) *string {
	if c.model != nil || !c.started {
		return c.model
	}
	res := r.b.Join(t.ref)
	c.started = false
	if c.act.after != nil {
		c.act.after(res)
	}
	text := r.printResult(t.ref, res)
	if c.act.model != nil && res.Kind != scenario.ResultErrno {
		text = c.act.model(res)
	}
	if res.Kind == scenario.ResultErrno && res.Errno == unix.EDEADLK {
		text = "blocks"
	}
	if c.act.pre != nil {
		text = c.preText + "; " + text
	}
	c.model = &text
	return c.model
}

// compare records the comparison of a call's results.
func (r *replayer) compare(t *task, c *traceCall, want, got string) {
	if c.settled {
		return
	}
	c.settled = true
	if t.outOfStep {
		r.sum.NotCompared++
		return
	}
	r.sum.Compared++
	if want == got {
		r.sum.Agree++
		return
	}
	r.sum.Disagree++
	r.diverge(t, c.entry.Line, c.text(), want, got)
}

// diverge records a divergence and puts t out of step.
func (r *replayer) diverge(t *task, line int, what, want, got string) {
	d := Divergence{Line: line, Call: what, TraceResult: want, ModelResult: got}
	if r.opts.Explain > 0 {
		d.explanation = r.explain(t, line)
	}
	r.sum.Divergences = append(r.sum.Divergences, d)
	if t != nil {
		t.outOfStep = true
	}
}

// signalRace is why a call is not made: the model acted on a signal at once, at the kill,
// where the trace's task still ran until its signal line.
const signalRace = "made before its task took a signal the model acted on at the kill"

// aheadOfSignal reports whether c's task is stopped or dead on the model but not in the
// trace, which shows it take a signal further on: a kill's stop or death that the model
// completed as the kill was made, and the kernel when the task next ran.
func (r *replayer) aheadOfSignal(t *task, c *traceCall) bool {
	if !t.bound || (c.act.kind != actReplay && c.act.kind != actQuery) {
		return false
	}
	u := r.b.Task(t.ref)
	if !(u.Stopped() && !t.stopped) && !(u.Exited() && !t.ended) {
		return false
	}
	for i := r.at + 1; i < len(r.events); i++ {
		ev := &r.events[i]
		if ev.Tid != t.tid {
			continue
		}
		switch ev.Kind {
		case KindSignal, KindStopped, KindKilled:
			return true
		case KindExited, KindSuperseded:
			return false
		}
	}
	return false
}

// resolveInterrupted settles the call prev, which a signal interrupted, now that its task
// makes call c: c is prev restarted, or the handler's return says prev failed with EINTR, or
// c is a call the handler makes. It reports whether c is no call of its own (a restart).
func (r *replayer) resolveInterrupted(t *task, prev, c *traceCall) bool {
	restart := c.name == prev.name || c.name == "restart_syscall"
	switch {
	case restart:
		// The same call goes on, and the restart's lines complete it: its result is
		// compared with what the model's call returned, even if the model's call never
		// slept, as when the signal that interrupted it came from an exit or a kill the
		// model completed at once.
		t.interrupted = nil
		prev.exit = c.exit
		t.call = prev
		if c.exit == c.entry {
			r.exit(t, prev)
		}
		return true
	case c.name == "rt_sigreturn" && c.result().Errno == "EINTR":
		t.interrupted = nil
		if model := r.join(t, prev); model != nil {
			r.compare(t, prev, "EINTR", *model)
		}
	case c.name == "rt_sigreturn":
		// The handler returns and the call restarts.
	case prev.started && r.b.Returned(t.ref):
		// The handler's own call: the model's call returned already.
		r.join(t, prev)
	}
	return false
}

// decide returns what the replay does with c: its row's action, or for a task out of step
// its call made but not compared.
func (r *replayer) decide(t *task, c *traceCall) action {
	row, ok := rows[c.name]
	if !ok {
		return outsideScope("not a process-lifecycle call")
	}
	return row(r, t, c)
}

// printResult prints a model result in the trace's identities.
func (r *replayer) printResult(actor scenario.TaskRef, res scenario.Result) string {
	switch res.Kind {
	case scenario.ResultDone:
		return "done"
	case scenario.ResultInt:
		return strconv.FormatInt(res.Int, 10)
	case scenario.ResultPid:
		return r.modelIdentity(actor, res.Pid)
	case scenario.ResultNewTask:
		return r.modelIdentity(actor, res.NewPid)
	case scenario.ResultWait:
		return r.modelIdentity(actor, res.WaitPid) + " " + waitText(res)
	case scenario.ResultErrno:
		return errnoName(res.Errno)
	case scenario.ResultList:
		vals := make([]string, len(res.List))
		for i, v := range res.List {
			vals[i] = strconv.FormatInt(v, 10)
		}
		return "[" + strings.Join(vals, " ") + "]"
	case scenario.ResultSigset:
		return sigsetText(uint64(res.Int))
	case scenario.ResultSignal:
		return signalName(int(res.Int))
	case scenario.ResultNewFile:
		return "pidfd"
	case scenario.ResultLimit:
		return limitText(res.Soft) + " " + limitText(res.Hard)
	case scenario.ResultFatal:
		return "no result: " + res.Err.Error()
	}
	return fmt.Sprintf("%+v", res)
}

// modelIdentity names the task the model's pid stands for, as the caller sees it: the trace's
// task bound to it (the newest, if the pid was reused), init, or the bare number.
func (r *replayer) modelIdentity(actor scenario.TaskRef, pid int) string {
	if pid <= 0 {
		return strconv.Itoa(pid)
	}
	for i := len(r.tasks.all) - 1; i >= 0; i-- {
		if t := r.tasks.all[i]; t.bound && r.b.PidIn(actor, t.ref) == pid {
			return t.name()
		}
	}
	if r.b.PidIn(actor, scenario.Init) == pid {
		return outside
	}
	return "pid " + strconv.Itoa(pid) + " of no traced task"
}

func waitText(res scenario.Result) string {
	switch res.How {
	case scenario.Exited:
		return waitStatus{"exited", res.Code}.String()
	case scenario.Killed:
		return waitStatus{"killed", res.Code}.String()
	case scenario.Dumped:
		return waitStatus{"dumped", res.Code}.String()
	case scenario.Stopped:
		return waitStatus{"stopped", res.Code}.String()
	case scenario.Trapped:
		return waitStatus{"trapped", res.Code}.String()
	}
	return "continued"
}

func errnoName(e syscall.Errno) string {
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return "errno " + strconv.Itoa(int(e))
}

func ptr[T any](v T) *T { return &v }

// ReplayFile reads, parses and replays the trace in path.
func ReplayFile(path string, opts Options) (*Summary, error) {
	h, events, err := parseFile(path)
	if err != nil {
		return nil, err
	}
	return Replay(path, h, events, opts)
}
