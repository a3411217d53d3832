package replay

import (
	"strconv"

	"tasklist/scenario"
)

// task is one traced thread: its tid in strace's pid namespace plus a generation, since a
// tid that is freed may be handed out again. It stands for the model task ref when bound.
type task struct {
	tid, gen int
	ref      scenario.TaskRef
	bound    bool
	// ns is the pid namespace the task lives in, children its pid_ns_for_children: another
	// once it has called unshare(CLONE_NEWPID).
	ns, children *pidns
	// outOfStep marks a task whose model twin did something else than the trace shows: its
	// later calls are made, to keep the tasks around it in step, but not compared.
	outOfStep bool
	// ended is set by its +++ line; endText is what that line says, as a wait would print it.
	ended   bool
	endText string
	// stopped is set by a "stopped by" line, until the task runs again.
	stopped bool
	// call is the call the task is in: between an unfinished line and its resumed line.
	call *traceCall
	// interrupted is a call that returned to a signal (ERESTARTSYS and its kin), until the
	// task restarts it or the handler's return says it failed with EINTR.
	interrupted *traceCall
	// sent counts, by signal, the signals the task's replayed calls sent that no signal
	// line has shown yet; a signal sent to a group or to every process counts for good.
	sent map[int]int
	// files are the pidfds of the task's descriptor table, by the trace's numbers
	// (rows_pidfd.go).
	files fdTable
}

// name identifies the task in messages: its tid, and for a reused tid the generation.
func (t *task) name() string {
	if t.gen <= 1 {
		return strconv.Itoa(t.tid)
	}
	return strconv.Itoa(t.tid) + "#" + strconv.Itoa(t.gen)
}

// pidns is a pid namespace of the trace. Pids in strace's own namespace name tasks by their
// tid; in another, by the numbers strace translated ("N /* M in strace's PID NS */") and the
// results of the clones that made its tasks.
type pidns struct {
	root bool
	nr   map[int64]*task
}

// outside is the identity of every process outside the trace: the root's real parent, group
// and session, and a reaper that adopted its orphans. The model's init stands for them all.
const outside = "init"

// learn records that t has number local in ns.
func (ns *pidns) learn(local int64, t *task) {
	if !ns.root && local > 0 && t != nil {
		ns.nr[local] = t
	}
}

// tasks is the table of traced tasks.
type tasks struct {
	all   []*task
	byTid map[int]*task
	root  *pidns
}

// lookup finds the task a pid names for a caller in ns: local is the number as the caller
// sees it, strace strace's translation of it (0 if none). It returns nil for a process
// outside the trace.
func (ts *tasks) lookup(ns *pidns, local, strace int64) *task {
	if strace > 0 {
		t := ts.byTid[int(strace)]
		ns.learn(local, t)
		return t
	}
	if ns.root {
		return ts.byTid[int(local)]
	}
	return ns.nr[local]
}

// identity names what a pid stands for in a result or an argument: a task, init for a
// process outside the trace, or the number itself for 0 and negative values.
func (ts *tasks) identity(ns *pidns, local, strace int64) string {
	if local <= 0 {
		return strconv.FormatInt(local, 10)
	}
	if t := ts.lookup(ns, local, strace); t != nil {
		return t.name()
	}
	return outside
}

// add makes a task for tid, the next generation if the tid was used before.
func (ts *tasks) add(tid int, ns *pidns) *task {
	t := &task{tid: tid, gen: 1, ns: ns, children: ns, files: fdTable{}}
	if old := ts.byTid[tid]; old != nil {
		t.gen = old.gen + 1
	}
	ts.byTid[tid] = t
	ts.all = append(ts.all, t)
	return t
}
