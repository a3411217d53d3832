package replay

import (
	"errors"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"tasklist/internal/abi"
	"tasklist/scenario"
)

// The calls that create tasks, wait for them, and read or set limits.

// creates reports whether a call of that name makes a task.
func creates(name string) bool {
	switch name {
	case "fork", "vfork", "clone", "clone3":
		return true
	}
	return false
}

func vfork(r *replayer, t *task, c *traceCall) action { return r.create(t, c, "vfork", nil) }

// clone's flags argument holds the exit signal in its low byte.
func clone(r *replayer, t *task, c *traceCall) action {
	text, ok := named(c.args, "flags")
	if !ok {
		return badArgs(c)
	}
	flags, err := argInt(text)
	if err != nil {
		return badArgs(c)
	}
	return r.create(t, c, "clone", ints(flags&^0xff, flags&0xff))
}

// clone3 takes its flags, exit signal and set_tid; a set_tid entry for a pid namespace above
// the trace's root's, which the model's runner refuses, and CLONE_INTO_CGROUP, whose cgroup
// the model has not, are outside the replay.
func clone3(r *replayer, t *task, c *traceCall) action {
	args, ok := argStruct(arg(c, 0))
	if !ok {
		return badArgs(c)
	}
	flags, err1 := argInt(args["flags"])
	sig := int64(0)
	var err2 error
	if s, ok := args["exit_signal"]; ok {
		sig, err2 = argInt(s)
	}
	if err1 != nil || err2 != nil {
		return badArgs(c)
	}
	if flags&unix.CLONE_INTO_CGROUP != 0 {
		return outsideScope("clone3 into a cgroup")
	}
	vals := ints(flags, sig)
	if set, ok := args["set_tid"]; ok && set != "NULL" {
		tids, ok := argArray(set)
		if !ok {
			return badArgs(c)
		}
		for _, e := range tids {
			tid, err := argInt(e)
			if err != nil {
				return badArgs(c)
			}
			vals = append(vals, ints(tid)...)
		}
		if t.bound && len(tids) > r.childLevels(t, uint64(flags)) {
			return outsideScope("clone3 with a set_tid entry for a pid namespace above the trace's")
		}
	}
	return r.create(t, c, "clone3", vals)
}

// childLevels is how many pid namespace levels a child t makes with flags has, from its own
// up to the traced root's.
func (r *replayer) childLevels(t *task, flags uint64) int {
	levels := r.b.Task(t.ref).ChildNamespace().Level() - r.b.Task(scenario.Init).Namespace().Level() + 1
	if flags&unix.CLONE_NEWPID != 0 {
		levels++
	}
	return levels
}

// create is the action of a call that makes a task, the scenario call name with args: on the
// model its new task is bound to the trace's, named by the call's result or by its first
// line if that comes first, and a pidfd CLONE_PIDFD opened is bound to the number the trace
// shows for it.
func (r *replayer) create(t *task, c *traceCall, name string, args []scenario.Value) action {
	a := replayed(c, name, args, r.tracePid(t))
	a.after = func(res scenario.Result) {
		// The child's table, if it is a copy, was made before the pidfd.
		defer opened(t, clonedPidfd(c), res)
		tr := c.result()
		if tr.Unknown || tr.Value <= 0 {
			return
		}
		child := c.child
		if child == nil {
			tid := tr.Value
			if tr.StraceValue > 0 {
				tid = tr.StraceValue
			} else if !t.ns.root {
				return // a number in another namespace that strace did not translate
			}
			child = r.newChild(t, c, int(tid))
		}
		t.ns.learn(tr.Value, child)
		if !child.bound && res.Kind == scenario.ResultNewTask {
			child.ref, child.bound = res.NewTask, true
		}
	}
	return a
}

// bindChild makes the task tid, whose first line comes before its creator's clone returns,
// and binds it to the task the model's clone has made so far.
func (r *replayer) bindChild(creator *task, tid int, _ int64) *task {
	c := creator.call
	child := r.newChild(creator, c, tid)
	if c.started {
		if ref, ok := r.b.Made(creator.ref); ok {
			child.ref, child.bound = ref, true
		}
	}
	return child
}

// newChild adds the task that c, a creating call of t, made: a thread in t's namespace,
// or a process in t's namespace for children, a new one with CLONE_NEWPID; with a copy of
// t's table of pidfds, or t's own with CLONE_FILES.
func (r *replayer) newChild(t *task, c *traceCall, tid int) *task {
	ns := t.children
	var flags uint64
	if args := c.act.call.Args; len(args) > 0 {
		flags = uint64(args[0].Int)
	}
	switch {
	case flags&unix.CLONE_THREAD != 0:
		ns = t.ns
	case flags&unix.CLONE_NEWPID != 0:
		ns = &pidns{nr: map[int64]*task{}}
	}
	child := r.tasks.add(tid, ns)
	child.files = tableFor(t, flags)
	c.child = child
	return child
}

// wait4(PID, STATUS, OPTIONS, RUSAGE): the status compared where strace decoded it.
func wait4(r *replayer, t *task, c *traceCall) action {
	pid, bad := r.pidArgs(t, c, 0)
	if bad != nil {
		return *bad
	}
	opts, ok := intArgs(c, 2)
	if !ok {
		return badArgs(c)
	}
	ws, decoded, err := argWaitStatus(arg(c, 1))
	if err != nil {
		return badArgs(c)
	}
	idtype, id := int64(unix.P_PID), pid[0].Int
	switch {
	case pid[0].Kind == scenario.ValueTask && pid[0].Neg:
		idtype, id = unix.P_PGID, int64(r.b.PidIn(t.ref, pid[0].Task))
	case pid[0].Kind == scenario.ValueTask:
		id = int64(r.b.PidIn(t.ref, pid[0].Task))
	case id == -1:
		idtype, id = unix.P_ALL, 0
	case id == 0:
		idtype = unix.P_PGID
	}
	if why := r.waitRace(t, c, idtype, id, opts[0].Int); why != "" {
		return outsideScope(why)
	}
	a := replayed(c, "wait4", append(pid, opts...), func(res Result) string {
		who := r.tasks.identity(t.ns, res.Value, res.StraceValue)
		if res.Value == 0 || !decoded {
			return who
		}
		return who + " " + ws.String()
	})
	if !decoded {
		// NULL or an address strace did not read: only the pid is compared.
		a.model = func(res scenario.Result) string {
			if res.Kind == scenario.ResultWait {
				return r.modelIdentity(t.ref, res.WaitPid)
			}
			return r.printResult(t.ref, res)
		}
	}
	return a
}

// waitid(IDTYPE, ID, INFOP, OPTIONS, RUSAGE): the siginfo compared as a wait status.
func waitid(r *replayer, t *task, c *traceCall) action {
	idtype, err := argInt(arg(c, 0))
	if err != nil {
		return badArgs(c)
	}
	var id []scenario.Value
	switch idtype {
	case unix.P_ALL:
		id = ints(0)
	case unix.P_PIDFD:
		f, bad := r.fileArg(t, c, 1)
		if bad != nil {
			return *bad
		}
		id = []scenario.Value{f}
	default:
		var bad *action
		if id, bad = r.pidArgs(t, c, 1); bad != nil {
			return *bad
		}
	}
	opts, ok := intArgs(c, 3)
	if !ok {
		return badArgs(c)
	}
	probeID := id[0].Int
	switch id[0].Kind {
	case scenario.ValueTask:
		probeID = int64(r.b.PidIn(t.ref, id[0].Task))
	case scenario.ValueFile:
		fd, _ := r.b.Task(t.ref).FDOf(r.b.File(id[0].File))
		probeID = int64(fd)
	}
	if why := r.waitRace(t, c, idtype, probeID, opts[0].Int); why != "" {
		return outsideScope(why)
	}
	return replayed(c, "waitid", append(append(ints(idtype), id...), opts...), func(Result) string {
		info, ok := argStruct(arg(c, 2))
		if !ok {
			return "unreadable siginfo"
		}
		pid, strace, _ := argPid(info["si_pid"])
		if len(info) == 0 || pid == 0 {
			return "0"
		}
		code, _ := argInt(info["si_code"])
		status, _ := argInt(info["si_status"])
		how := map[int64]string{abi.CLD_EXITED: "exited", abi.CLD_KILLED: "killed", abi.CLD_DUMPED: "dumped",
			abi.CLD_STOPPED: "stopped", abi.CLD_TRAPPED: "trapped", abi.CLD_CONTINUED: "continued"}[code]
		return r.tasks.identity(t.ns, pid, strace) + " " + waitStatus{how, int(status)}.String()
	})
}

// raceReason is why a wait is not made: the trace's task had not yet acted on its exit or
// stop where the model, which completes both at once, has.
const raceReason = "a WNOHANG wait that ran before its child's exit or stop completed"

// waitRace reports why a WNOHANG wait that found nothing in the trace is not made: the
// model would report a child whose +++ or stopped line comes later in the trace (an exit
// or a signal in progress, which the model completed when the call was made). It asks
// the model with WNOWAIT, which changes nothing.
func (r *replayer) waitRace(t *task, c *traceCall, idtype, id, opts int64) string {
	res := c.result()
	if opts&unix.WNOHANG == 0 || res.Value != 0 || res.Unknown || !t.bound {
		return ""
	}
	probe := unix.WEXITED | unix.WNOWAIT | unix.WNOHANG | int(opts)&(unix.WSTOPPED|unix.WCONTINUED|unix.WALL|unix.WCLONE|unix.WNOTHREAD)
	got, err := r.b.Task(t.ref).Waitid(nil, int(idtype), int(id), probe)
	if err != nil || got.Pid == 0 {
		return ""
	}
	for _, u := range r.tasks.all {
		if !u.bound || r.b.Task(u.ref) != got.Task {
			continue
		}
		switch got.Code {
		case abi.CLD_EXITED, abi.CLD_KILLED, abi.CLD_DUMPED:
			if !u.ended {
				return raceReason
			}
		case abi.CLD_STOPPED, abi.CLD_TRAPPED:
			if !u.stopped {
				return raceReason
			}
		}
	}
	return ""
}

// rlimit replays getrlimit, setrlimit and prlimit64 on the caller: a read as a read of the
// model's limit, a change as setrlimit with the old limit read first. prlimit64 of another
// task is prlimit (otherTask).
func rlimit(r *replayer, t *task, c *traceCall) action {
	args := c.args
	if c.name == "prlimit64" {
		pid, strace, err := argPid(arg(c, 0))
		if err != nil {
			return badArgs(c)
		}
		if pid != 0 && r.tasks.lookup(t.ns, pid, strace) != t {
			return r.otherLimit(t, c)
		}
		args = args[min(1, len(args)):]
	}
	res, err := argInt(arg(&traceCall{args: args}, 0))
	if err != nil {
		return badArgs(c)
	}
	newLim, oldLim := "NULL", "NULL"
	switch c.name {
	case "getrlimit":
		oldLim = arg(&traceCall{args: args}, 1)
	case "setrlimit":
		newLim = arg(&traceCall{args: args}, 1)
	default:
		newLim, oldLim = arg(&traceCall{args: args}, 1), arg(&traceCall{args: args}, 2)
	}
	read := func() string {
		lim, err := r.b.Task(t.ref).Getrlimit(int(res))
		if err != nil {
			return errnoName(errnoOf(err))
		}
		return limitText(lim.Cur) + " " + limitText(lim.Max)
	}
	oldText := "unreadable limit"
	if fields, ok := argStruct(oldLim); ok {
		cur, err1 := argInt(fields["rlim_cur"])
		max, err2 := argInt(fields["rlim_max"])
		if err1 == nil && err2 == nil {
			oldText = limitText(uint64(cur)) + " " + limitText(uint64(max))
		}
	}
	failed := c.result().Value < 0
	if newLim == "NULL" {
		return action{kind: actQuery, query: read, expect: expectErrno(c, func(Result) string { return oldText })}
	}
	fields, ok := argStruct(newLim)
	if !ok {
		return badArgs(c)
	}
	cur, err1 := argInt(fields["rlim_cur"])
	max, err2 := argInt(fields["rlim_max"])
	if err1 != nil || err2 != nil {
		return badArgs(c)
	}
	a := replayed(c, "setrlimit", ints(res, cur, max), number)
	if oldLim != "NULL" && !failed {
		a.pre = read
		a.expect = func() string { return oldText + "; 0" }
	}
	return a
}

// otherLimit replays prlimit64(PID, RESOURCE, NEW, OLD) of another task as prlimit, which
// returns the old limits: compared with OLD, or, when the trace did not ask for them, not
// printed.
func (r *replayer) otherLimit(t *task, c *traceCall) action {
	vals, bad := r.pidArgs(t, c, 0)
	if bad != nil {
		return *bad
	}
	res, ok := intArgs(c, 1)
	if !ok {
		return badArgs(c)
	}
	vals = append(vals, res...)
	if newLim := arg(c, 2); newLim != "NULL" {
		soft, hard, ok := limitFields(newLim)
		if !ok {
			return badArgs(c)
		}
		vals = append(vals, ints(soft, hard)...)
	}
	oldLim := arg(c, 3)
	if oldLim == "NULL" {
		a := replayed(c, "prlimit", vals, number)
		a.model = func(scenario.Result) string { return "0" }
		return a
	}
	return replayed(c, "prlimit", vals, func(Result) string {
		if soft, hard, ok := limitFields(oldLim); ok {
			return limitText(uint64(soft)) + " " + limitText(uint64(hard))
		}
		return "unreadable limit"
	})
}

// limitFields reads a struct rlimit as strace prints it.
func limitFields(s string) (soft, hard int64, ok bool) {
	fields, ok := argStruct(s)
	if !ok {
		return 0, 0, false
	}
	soft, err1 := argInt(fields["rlim_cur"])
	hard, err2 := argInt(fields["rlim_max"])
	return soft, hard, err1 == nil && err2 == nil
}

// errnoOf returns the errno err carries, EINVAL for an error that is none.
func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return unix.EINVAL
}

// listText prints a GETALL array as the model's result is printed.
func listText(s string) string {
	elems, ok := argArray(s)
	if !ok {
		return "unreadable values"
	}
	vals := make([]string, len(elems))
	for i, e := range elems {
		v, _ := argInt(e)
		vals[i] = strconv.FormatInt(v, 10)
	}
	return "[" + strings.Join(vals, " ") + "]"
}
