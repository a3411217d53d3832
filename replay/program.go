package replay

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"

	"tasklist/kernel"
	"tasklist/scenario"
)

// Program is a trace made ready to be replayed as a benchmark workload: every call its replay
// made on the model, each by the traced task that made it, with the calls of other tasks it
// must come after, and what the replay's model returned for it. CompileFile makes one; a
// Runner replays it, pass after pass, on tasks of its own.
type Program struct {
	file string
	// slots are the tasks that make calls: init, the model's own, at 0, then each traced
	// task the model created, in the order the replay first met them.
	slots []progSlot
	// ops are the calls and the reads in their place, in the order the replay made them.
	ops []progOp
	// calls counts the ops that are calls of the trace: what one pass replays.
	calls int
	// sets and files count the semaphore sets and the pidfds the replay named.
	sets, files int
}

// progSlot is one task of a Program.
type progSlot struct {
	// ops are its ops' indexes, in order.
	ops []int32
}

// opKind says what an op does.
type opKind uint8

const (
	// opCall makes a call that returns at once: a complete line, or one of init's calls.
	opCall opKind = iota
	// opStart makes a call that returns at a later line (an unfinished one).
	opStart
	// opJoin is where an opStart's call returns: its result is checked there.
	opJoin
	// opQuery reads the caller's state, in place of a call the scenario language lacks.
	opQuery
)

// progOp is one op of a Program.
type progOp struct {
	kind opKind
	// slot is the task making it, pos its place in the slot's ops.
	slot, pos int32
	// line is the trace line it replays, for messages.
	line int
	// call is what an opCall or an opStart makes.
	call *preparedCall
	// query is what an opQuery reads.
	query query
	// want is what the replay's model returned, or read.
	want expected
	// sleeps marks an opStart whose call slept on the replay's model until a later op
	// woke it: the ops after it need it asleep, not returned.
	sleeps bool
	// counted marks a call of the trace, as opposed to init's and the calls that give
	// the traced process its starting state.
	counted bool
	// deps are the ops of other slots that must be done first (an opStart that sleeps:
	// asleep or returned).
	deps []int32
	// wakes are the slots with ops that depend on this one.
	wakes []int32
}

// Calls returns the number of the trace's calls one pass makes on the model.
func (p *Program) Calls() int { return p.calls }

// Tasks returns the number of tasks a pass makes calls with, init included.
func (p *Program) Tasks() int { return len(p.slots) }

// CompileFile reads, parses and compiles the trace in path. Errors are the file's, or
// *SyntaxError for a trace that does not parse or cannot be made a workload.
func CompileFile(path string) (*Program, error) {
	h, events, err := parseFile(path)
	if err != nil {
		return nil, err
	}
	return Compile(path, h, events)
}

// parseFile reads and parses the trace in path.
func parseFile(path string) (Header, []Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, nil, err
	}
	defer f.Close()
	return Parse(path, f)
}

// Compile replays a parsed trace once on a fresh model, as Replay does, and keeps every call
// it made, each waiting for the calls the package documentation says (A trace as a
// workload). A trace no pass could replay to its end is refused: one with no calls, and one
// with a call the model blocks in for good where the trace's returned.
func Compile(file string, h Header, events []Event) (*Program, error) {
	if len(events) == 0 {
		return nil, &SyntaxError{File: file, Line: 1, Msg: "no calls to replay"}
	}
	rec := &recorder{prog: &Program{file: file}, slotOf: map[*kernel.Task]int32{},
		objOf: map[*kernel.ThreadGroup]int32{}, open: map[int32]int32{}, semObj: -1, fileObj: -1}
	if _, err := replay(file, h, events, Options{}, rec); err != nil {
		return nil, err
	}
	if rec.err != nil {
		return nil, rec.err
	}
	rec.order()
	return rec.prog, nil
}

// recorder builds a Program from the calls a replay makes.
type recorder struct {
	r    *replayer
	prog *Program
	// tasks holds each slot's task on the replay's model.
	tasks  []*kernel.Task
	slotOf map[*kernel.Task]int32
	// objects are what ops touch: a process each (objOf), the semaphores (semObj) and
	// the pidfds (fileObj), each -1 until a call uses one. born holds the op that made
	// each; objs and wide what each op touches: its objects, or every object there is.
	objOf           map[*kernel.ThreadGroup]int32
	semObj, fileObj int32
	born            []int32
	objs            [][]int32
	wide            []bool
	// open maps a slot to its opStart whose call has not returned.
	open map[int32]int32
	err  error
}

// taskState is what a snapshot keeps of a task: what changes when a call acts on it.
type taskState struct {
	exited, stopped bool
	parent, tracer  *kernel.Task
}

// attach binds the recorder to the replayer that tells it of its calls; slot 0 is init.
func (rc *recorder) attach(r *replayer) {
	rc.r = r
	rc.newSlot(r.b.Task(scenario.Init), -1)
}

// line is the trace line being replayed.
func (rc *recorder) line() int { return rc.r.events[rc.r.at].Line }

func (rc *recorder) fail(format string, args ...any) {
	if rc.err == nil {
		rc.err = &SyntaxError{File: rc.prog.file, Line: rc.line(), Msg: fmt.Sprintf(format, args...)}
	}
}

func (rc *recorder) snapshot() []taskState {
	s := make([]taskState, len(rc.tasks))
	for i, t := range rc.tasks {
		s[i] = taskState{exited: t.Exited(), stopped: t.Stopped(), parent: t.Parent(), tracer: t.Tracer()}
	}
	return s
}

// newSlot makes the slot of t, which the op creator created, and the object of its process.
func (rc *recorder) newSlot(t *kernel.Task, creator int32) int32 {
	s := int32(len(rc.tasks))
	rc.tasks = append(rc.tasks, t)
	rc.slotOf[t] = s
	rc.prog.slots = append(rc.prog.slots, progSlot{})
	if _, ok := rc.objOf[t.ThreadGroup()]; !ok {
		rc.objOf[t.ThreadGroup()] = rc.newObject(creator)
	}
	if creator >= 0 {
		rc.touch(creator, rc.object(t))
	}
	return s
}

func (rc *recorder) newObject(born int32) int32 {
	rc.born = append(rc.born, born)
	return int32(len(rc.born) - 1)
}

// slot returns the slot of the task ref names on the replay's model. A task first met here
// was made by a creating call still in progress (a vfork child, named before its parent's
// vfork returns): the one, of the calls in progress, whose caller is its parent or a thread
// of its process.
func (rc *recorder) slot(ref scenario.TaskRef) int32 {
	t := rc.r.b.Task(ref)
	if s, ok := rc.slotOf[t]; ok {
		return s
	}
	for _, s := range slices.Sorted(maps.Keys(rc.open)) {
		i := rc.open[s]
		c := rc.tasks[s]
		if rc.prog.ops[i].call.creates < 0 && creates(rc.prog.ops[i].call.name) &&
			(t.Parent() == c || t.ThreadGroup() == c.ThreadGroup() || t.Parent() == c.Parent()) {
			child := rc.newSlot(t, i)
			rc.prog.ops[i].call.creates = child
			return child
		}
	}
	rc.fail("no call in progress can have made the task this line names")
	return rc.newSlot(t, -1)
}

// object returns the object of t's process, -1 for a process with no slot (the model's own
// init above the trace's).
func (rc *recorder) object(t *kernel.Task) int32 {
	if t == nil {
		return -1
	}
	if o, ok := rc.objOf[t.ThreadGroup()]; ok {
		return o
	}
	return -1
}

func (rc *recorder) touch(i int32, objs ...int32) {
	for _, o := range objs {
		if o >= 0 && !slices.Contains(rc.objs[i], o) {
			rc.objs[i] = append(rc.objs[i], o)
		}
	}
}

// add appends an op of the slot actor names.
func (rc *recorder) add(kind opKind, actor scenario.TaskRef) int32 {
	s := rc.slot(actor)
	i := int32(len(rc.prog.ops))
	sl := &rc.prog.slots[s]
	rc.prog.ops = append(rc.prog.ops, progOp{kind: kind, slot: s, pos: int32(len(sl.ops)), line: rc.line()})
	sl.ops = append(sl.ops, i)
	rc.objs = append(rc.objs, nil)
	rc.wide = append(rc.wide, false)
	rc.touch(i, rc.object(rc.tasks[s]))
	return i
}

// addCall appends an op that makes c.
func (rc *recorder) addCall(kind opKind, actor scenario.TaskRef, c scenario.Call) int32 {
	i := rc.add(kind, actor)
	args := slices.Clone(c.Args)
	for k, v := range args {
		switch {
		case v.Kind == scenario.ValueTask:
			args[k].Task = scenario.TaskRef(rc.slot(v.Task))
		case v.Kind == scenario.ValueSet:
			rc.prog.sets = max(rc.prog.sets, int(v.Set)+1)
		case v.Kind == scenario.ValueFile:
			rc.prog.files = max(rc.prog.files, int(v.File)+1)
		case actor == scenario.Init && initPidArg(c, k) && v.Int > 0:
			// A signal init sends, or a wait for one task: the pid as a task.
			args[k] = scenario.Value{Kind: scenario.ValueTask, Task: scenario.TaskRef(rc.slotByPid(rc.tasks[0], int(v.Int)))}
		}
	}
	pc, err := prepare(scenario.Call{Name: c.Name, Args: args})
	if err != nil {
		rc.fail("%v", err)
		pc = &preparedCall{name: c.Name, creates: -1}
	}
	rc.prog.ops[i].call = pc
	rc.touchCall(i, pc)
	return i
}

// initPidArg reports whether argument k of init's call c is a pid: init kills and waits
// by number.
func initPidArg(c scenario.Call, k int) bool {
	switch c.Name {
	case "kill":
		return k == 0
	case "tgkill":
		return k < 2
	case "waitid":
		return k == 1 && len(c.Args) > 0 && c.Args[0].Int == unix.P_PID
	}
	return false
}

// slotByPid returns the slot of the task whose pid, seen from viewer, is nr.
func (rc *recorder) slotByPid(viewer *kernel.Task, nr int) int32 {
	for s := len(rc.tasks) - 1; s >= 0; s-- {
		if rc.tasks[s].PIDIn(viewer.Namespace()) == nr {
			return int32(s)
		}
	}
	rc.fail("init names pid %d, which no traced task has", nr)
	return 0
}

// did records a call made and returned at once.
func (rc *recorder) did(actor scenario.TaskRef, c scenario.Call, res scenario.Result, before []taskState) {
	i := rc.addCall(opCall, actor, c)
	rc.result(i, actor, res)
	rc.touchChanged(i, before)
}

// started records a call made at its entry line; sleeps says whether it sleeps there.
func (rc *recorder) started(actor scenario.TaskRef, c scenario.Call, sleeps bool, before []taskState) {
	i := rc.addCall(opStart, actor, c)
	op := &rc.prog.ops[i]
	op.sleeps, op.counted = sleeps, true
	rc.open[op.slot] = i
	rc.touchChanged(i, before)
}

// joined records where a started call returned: an op of its own, or, when nothing came
// between, the start made a call returned at once.
func (rc *recorder) joined(actor scenario.TaskRef, res scenario.Result, before []taskState) {
	s := rc.slot(actor)
	start, ok := rc.open[s]
	if !ok {
		rc.fail("a call returns that was not made")
		return
	}
	delete(rc.open, s)
	i := start
	if start == int32(len(rc.prog.ops)-1) {
		rc.prog.ops[i].kind = opCall
	} else {
		i = rc.add(opJoin, actor)
		rc.touch(i, rc.objs[start]...)
		rc.wide[i] = rc.wide[start]
	}
	rc.result(i, actor, res)
	rc.touchChanged(i, before)
}

// queried records a read in place of call c.
func (rc *recorder) queried(actor scenario.TaskRef, c *traceCall) {
	q, ok := queryOf(c)
	if !ok {
		rc.fail("%s: a read the workload cannot make", c.name)
		return
	}
	i := rc.add(opQuery, actor)
	op := &rc.prog.ops[i]
	op.query, op.counted = q, true
	op.want.read = q.read(rc.tasks[op.slot])
}

// result records what the replay's model returned for op i's call, the tasks and sets it
// names as slots and set refs, and binds the task a clone made to its slot.
func (rc *recorder) result(i int32, actor scenario.TaskRef, res scenario.Result) {
	op := &rc.prog.ops[i]
	want := expected{kind: res.Kind, errno: res.Errno, n: res.Int, who: whoNumber}
	viewer := rc.tasks[op.slot]
	switch res.Kind {
	case scenario.ResultPid:
		want.n, want.who = int64(res.Pid), rc.who(viewer, res.Pid)
	case scenario.ResultWait:
		want.n, want.who, want.how, want.code = int64(res.WaitPid), rc.who(viewer, res.WaitPid), res.How, res.Code
	case scenario.ResultNewTask:
		child := rc.r.b.Task(res.NewTask)
		start := i
		if op.kind == opJoin {
			start = rc.prog.slots[op.slot].ops[op.pos-1]
		}
		s, ok := rc.slotOf[child]
		if !ok {
			s = rc.newSlot(child, start)
		}
		rc.prog.ops[start].call.creates = s
		want.who = s
		if res.HasFile {
			want.file, want.hasFile = res.NewFile, true
			rc.prog.files = max(rc.prog.files, int(res.NewFile)+1)
			rc.touch(start, rc.pidfds())
		}
	case scenario.ResultNewFile:
		want.file = res.NewFile
		rc.prog.files = max(rc.prog.files, int(res.NewFile)+1)
	case scenario.ResultLimit:
		want.limit = kernel.RLimit{Cur: res.Soft, Max: res.Hard}
	case scenario.ResultNewSet:
		want.set = res.NewSet
		rc.prog.sets = max(rc.prog.sets, int(res.NewSet)+1)
	case scenario.ResultList:
		want.list = slices.Clone(res.List)
	case scenario.ResultFatal:
		rc.fail("the replay's model cannot tell what this call did: %v", res.Err)
	case scenario.ResultErrno:
		if res.Errno == unix.EDEADLK {
			rc.fail("the model blocks in this call for good, where the trace's returned: no pass of the trace could end")
		}
	}
	op.want = want
}

// who names the slot whose task has pid nr as viewer sees it, the newest if the pid was
// used again; whoNumber for a pid that names no task, whoUnknown for a task of no slot.
func (rc *recorder) who(viewer *kernel.Task, nr int) int32 {
	if nr <= 0 {
		return whoNumber
	}
	for s := len(rc.tasks) - 1; s >= 0; s-- {
		if rc.tasks[s].PIDIn(viewer.Namespace()) == nr {
			return int32(s)
		}
	}
	return whoUnknown
}

// touchCall records what op i's call touches by its name and arguments.
func (rc *recorder) touchCall(i int32, pc *preparedCall) {
	op := &rc.prog.ops[i]
	caller := rc.tasks[op.slot]
	for _, v := range pc.args {
		switch {
		case v.Kind == scenario.ValueTask && v.Neg:
			rc.wide[i] = true
		case v.Kind == scenario.ValueTask:
			rc.touch(i, rc.object(rc.tasks[v.Task]))
		}
	}
	switch pc.name {
	case "kill", "tgkill", "tkill":
		if pc.args[0].Kind == scenario.ValueInt {
			rc.wide[i] = true // kill(0), kill(-1): the caller's group, or everything
		}
	case "setpgid", "setsid", "ptrace", "pidfd_send_signal", "poll":
		rc.wide[i] = true // a group, or a pidfd's task
	case "getpriority", "setpriority":
		rc.wide[i] = pc.args[0].Int != unix.PRIO_PROCESS
	case "prctl":
		rc.wide[i] = pc.args[0].Int == unix.PR_SET_CHILD_SUBREAPER
	case "wait4", "waitid":
		if op.slot == 0 {
			rc.wide[i] = true // init's waits reap what is left at the end
		}
		for s, t := range rc.tasks {
			if p, tr := t.Parent(), t.Tracer(); p != nil && p.ThreadGroup() == caller.ThreadGroup() ||
				tr != nil && tr.ThreadGroup() == caller.ThreadGroup() {
				rc.touch(i, rc.object(rc.tasks[s]))
			}
		}
	case "execve":
		rc.touch(i, rc.object(caller.Parent()), rc.fileObj) // the vfork parent; the pidfds exec closes
	case "semget", "semop", "semtimedop", "semctl":
		if rc.semObj < 0 {
			rc.semObj = rc.newObject(-1)
		}
		rc.touch(i, rc.semObj)
	}
	if uses := slices.ContainsFunc(pc.args, func(v scenario.Value) bool { return v.Kind == scenario.ValueFile }); uses ||
		pc.name == "pidfd_open" || creates(pc.name) && rc.fileObj >= 0 {
		// A table of pidfds may be shared (CLONE_FILES) or copied.
		rc.touch(i, rc.pidfds())
	}
}

// pidfds returns the object of the pidfds, made on first use.
func (rc *recorder) pidfds() int32 {
	if rc.fileObj < 0 {
		rc.fileObj = rc.newObject(-1)
	}
	return rc.fileObj
}

// touchChanged records that op i touched every task whose state it changed, the parents
// before and after, the tracers, the children, and the semaphores an exit may undo.
func (rc *recorder) touchChanged(i int32, before []taskState) {
	after := rc.snapshot()
	for s, now := range after {
		if s < len(before) && before[s] == now {
			continue
		}
		t := rc.tasks[s]
		rc.touch(i, rc.object(t), rc.object(now.parent), rc.object(now.tracer))
		if s < len(before) {
			rc.touch(i, rc.object(before[s].parent), rc.object(before[s].tracer))
		}
		for _, u := range rc.tasks {
			if p := u.Parent(); p != nil && p.ThreadGroup() == t.ThreadGroup() {
				rc.touch(i, rc.object(u))
			}
		}
		if now.exited {
			rc.touch(i, rc.semObj, rc.fileObj)
		}
	}
}

// order fills in each op's dependencies: for every object an op touches, the last op of
// another slot before it that touched the object; for a wide op, every object made before
// it. Of several ops of one slot, the latest is enough.
func (rc *recorder) order() {
	ops := rc.prog.ops
	last := make([]int32, len(rc.born))
	for o := range last {
		last[o] = -1
	}
	for i := range ops {
		op := &ops[i]
		touched := rc.objs[i]
		if rc.wide[i] {
			touched = nil
			for o, born := range rc.born {
				if born < int32(i) {
					touched = append(touched, int32(o))
				}
			}
		}
		latest := map[int32]int32{} // slot -> its latest op among the last ones
		for _, o := range touched {
			if l := last[o]; l >= 0 && ops[l].slot != op.slot {
				if cur, ok := latest[ops[l].slot]; !ok || l > cur {
					latest[ops[l].slot] = l
				}
			}
			last[o] = int32(i)
		}
		for _, s := range slices.Sorted(maps.Keys(latest)) {
			d := latest[s]
			op.deps = append(op.deps, d)
			if !slices.Contains(ops[d].wakes, op.slot) {
				ops[d].wakes = append(ops[d].wakes, op.slot)
			}
		}
		if op.counted {
			rc.prog.calls++
		}
	}
}

// The values of expected.who besides a slot.
const (
	whoNumber  = -1 // a number that names no task: 0, or a negative one
	whoUnknown = -2 // a task of no slot
)

// expected is what the replay's model returned for an op, in a pass's terms: the tasks a
// result names as slots, the sets as the replay's refs.
type expected struct {
	kind  scenario.ResultKind
	errno syscall.Errno
	// n is an Int, a signal set or a signal; for a pid result, the pid where who is
	// whoNumber.
	n    int64
	who  int32
	how  scenario.WaitHow
	code int
	list []int64
	set  scenario.SetRef
	// file is the pidfd pidfd_open opened, or a clone with CLONE_PIDFD where hasFile.
	file    scenario.FileRef
	hasFile bool
	limit   kernel.RLimit
	// read is an opQuery's.
	read readValue
}
