package replay

import (
	"strings"

	"golang.org/x/sys/unix"

	"tasklist/internal/abi"
	"tasklist/scenario"
)

// The lines that are no calls: signals, stops, ends and execs that superseded a thread.

// si_code values of signals sent by a process (include/uapi/asm-generic/siginfo.h).
const (
	siUser   = 0
	siKernel = 0x80
	siQueue  = -1
	siTkill  = -6
)

// sendsSignals lists the calls whose signal a traced task's signal line shows.
var sendsSignals = map[string]bool{"kill": true, "tgkill": true, "tkill": true,
	"rt_sigqueueinfo": true, "rt_tgsigqueueinfo": true, "pidfd_send_signal": true}

// signal replays a signal line. A signal that a replayed call sent (a kill, a child's exit)
// is the model's to deliver, and the line checks it; any other (a timer, the kernel, a
// sender outside the trace, a call the model did not make) is injected here, by init.
func (r *replayer) signal(ev *Event) {
	t := r.taskOf(ev.Tid)
	if !t.bound {
		return
	}
	info, _ := argStruct("{" + ev.Info + "}")
	code, _ := argInt(info["si_code"])
	pid, strace, _ := argPid(info["si_pid"])
	var sender *task
	if pid > 0 {
		sender = r.tasks.lookup(t.ns, pid, strace)
	}
	switch {
	case ev.Status == int(unix.SIGCHLD) && code >= abi.CLD_EXITED && code <= abi.CLD_CONTINUED && sender != nil && sender.bound:
		if code <= abi.CLD_DUMPED && !sender.outOfStep && !r.b.Task(sender.ref).Exited() {
			r.diverge(sender, ev.Line, "--- "+ev.Name+" ---", sender.name()+" has ended", sender.name()+" runs")
		}
		return
	case (code == siUser || code == siTkill || code == siQueue) && sender != nil && sender.sent[ev.Status] > 0:
		sender.sent[ev.Status]--
		return
	case code == siKernel && (ev.Status == int(unix.SIGHUP) || ev.Status == int(unix.SIGCONT) || ev.Status == int(unix.SIGKILL)):
		// An orphaned group's SIGHUP and SIGCONT, a pid namespace's SIGKILL: the
		// model sends them when the exit that causes them is replayed.
		return
	}
	r.inject(t, ev, code == siTkill)
}

// sent records the signal that c, a replayed kill, tgkill or pidfd_send_signal of t, sends.
func (r *replayer) sent(t *task, c *traceCall) {
	args := c.act.call.Args
	sig := int(args[len(args)-1].Int)
	group := c.name == "kill" && (args[0].Neg || args[0].Kind == scenario.ValueInt)
	if c.name == "pidfd_send_signal" {
		sig, group = int(args[1].Int), args[2].Int&unix.PIDFD_SIGNAL_PROCESS_GROUP != 0
	}
	if t.sent == nil {
		t.sent = map[int]int{}
	}
	if group {
		t.sent[sig] = 1 << 30 // a group, or every process
		return
	}
	t.sent[sig]++
}

// inject sends the signal of ev to t from init: to the thread for a thread-directed signal,
// else to its process.
func (r *replayer) inject(t *task, ev *Event, thread bool) {
	u := r.b.Task(t.ref)
	initNS := r.b.Task(scenario.Init).Namespace()
	tgid, tid := int64(u.TGIDIn(initNS)), int64(u.PIDIn(initNS))
	c := scenario.Call{Name: "kill", Args: ints(tgid, int64(ev.Status))}
	if thread {
		c = scenario.Call{Name: "tgkill", Args: ints(tgid, tid, int64(ev.Status))}
	}
	r.sum.injected++
	if res := r.b.Do(scenario.Init, c); res.Kind != scenario.ResultInt {
		r.diverge(t, ev.Line, "--- "+ev.Name+" --- (sent by init)", t.name()+" takes the signal", r.printResult(scenario.Init, res))
	}
}

// stopped checks that the model's task is stopped too.
func (r *replayer) stopped(ev *Event) {
	t := r.taskOf(ev.Tid)
	t.stopped = true
	if t.bound && !t.outOfStep && !r.b.Task(t.ref).Stopped() {
		r.diverge(t, ev.Line, "--- stopped by "+ev.Name+" ---", "stopped", "not stopped")
	}
}

// end checks a +++ line: the model's task has ended too, and a call it was in returned
// done. What status it ended with is checked where a wait reports it.
func (r *replayer) end(ev *Event) {
	t := r.tasks.byTid[ev.Tid]
	if t == nil || t.ended {
		t = r.taskOf(ev.Tid)
	}
	if c := t.call; c != nil {
		t.call = nil
		if model := r.join(t, c); model != nil {
			r.compare(t, c, "done", *model)
		}
	}
	if prev := t.interrupted; prev != nil {
		t.interrupted = nil
		if model := r.join(t, prev); model != nil {
			r.compare(t, prev, "done", *model)
		}
	}
	t.ended = true
	switch ev.Kind {
	case KindExited:
		t.endText = waitStatus{"exited", ev.Status}.String()
	case KindKilled:
		how := "killed"
		if ev.Core {
			how = "dumped"
		}
		t.endText = waitStatus{how, ev.Status}.String()
	}
	r.checkEnded(t, ev)
}

// checkEnded counts an end line and checks that the model's task has ended.
func (r *replayer) checkEnded(t *task, ev *Event) {
	r.sum.EndsChecked++
	switch {
	case !t.bound || t.outOfStep:
		return
	case r.b.Task(t.ref).Exited():
		r.sum.EndsAgree++
	default:
		r.diverge(t, ev.Line, strings.TrimSpace(ev.Text[strings.Index(ev.Text, "+++"):]), "ended", "runs")
	}
}

// superseded replays "+++ superseded by execve in pid N +++": thread N exec'd and took this
// tid; the leader that had it is gone.
func (r *replayer) superseded(ev *Event) {
	leader := r.taskOf(ev.Tid)
	thread := r.tasks.byTid[ev.Status]
	leader.ended = true
	r.checkEnded(leader, ev)
	if thread == nil {
		return
	}
	delete(r.tasks.byTid, ev.Status)
	thread.tid = ev.Tid
	thread.gen = leader.gen
	r.tasks.byTid[ev.Tid] = thread
}

// finish reaps, as init, what the model's init has left to reap, and checks the status each
// ended with against its +++ line: the traced root, and orphans the trace's reaper adopted.
func (r *replayer) finish() {
	for _, c := range r.calls {
		if c.counted && !c.settled {
			// In progress when the trace ends (strace was stopped, or a task it lost):
			// there is no result to compare.
			c.settled = true
			r.sum.outside("the trace ends before the call returns")
		}
	}
	opts := int64(unix.WEXITED | unix.WNOHANG | unix.WALL)
	for range len(r.tasks.all) + 1 {
		res := r.b.Do(scenario.Init, scenario.Call{Name: "waitid", Args: ints(unix.P_ALL, 0, opts)})
		if res.Kind != scenario.ResultWait {
			return
		}
		name := r.modelIdentity(scenario.Init, res.WaitPid)
		for _, t := range r.tasks.all {
			if t.bound && t.name() == name && t.ended && t.endText != "" && !t.outOfStep {
				if got := waitText(res); got != t.endText {
					r.sum.EndsAgree--
					r.diverge(t, 0, "+++ "+t.name()+" +++ (reaped by init)", t.endText, got)
				}
			}
		}
	}
}

// firstReads builds the starting state of a trace without a header from the root's first
// reads: its nice value, ids and limits.
func firstReads(events []Event, root int) Header {
	var h Header
	for i := range events {
		ev := &events[i]
		if ev.Tid != root || ev.Kind != KindCall || ev.Result.Value < 0 {
			continue
		}
		args := splitTop(ev.Args)
		switch ev.Name {
		case "getpriority":
			if h.Nice == nil && len(args) == 2 && stripComments(args[1]) == "0" {
				n := int(20 - ev.Result.Value)
				h.Nice = &n
			}
		case "getresuid", "getresgid":
			var ids [3]int
			for k := range min(3, len(args)) {
				elems, _ := argArray(args[k])
				if len(elems) == 1 {
					v, _ := argInt(elems[0])
					ids[k] = int(v)
				}
			}
			if ev.Name == "getresuid" && h.UIDs == nil {
				h.UIDs = &ids
			} else if ev.Name == "getresgid" && h.GIDs == nil {
				h.GIDs = &ids
			}
		case "getuid", "getgid":
			v := int(ev.Result.Value)
			ids := &[3]int{v, v, v}
			if ev.Name == "getuid" && h.UIDs == nil {
				h.UIDs = ids
			} else if ev.Name == "getgid" && h.GIDs == nil {
				h.GIDs = ids
			}
		case "prlimit64", "getrlimit":
			if ev.Name == "prlimit64" {
				if len(args) < 4 || stripComments(args[0]) != "0" || args[2] != "NULL" {
					continue
				}
				args = []string{args[1], args[3]}
			}
			res, err := argInt(args[0])
			fields, ok := argStruct(args[len(args)-1])
			cur, err1 := argInt(fields["rlim_cur"])
			max, err2 := argInt(fields["rlim_max"])
			if err != nil || !ok || err1 != nil || err2 != nil {
				continue
			}
			if h.Limits == nil {
				h.Limits = map[int][2]uint64{}
			}
			if _, seen := h.Limits[int(res)]; !seen {
				h.Limits[int(res)] = [2]uint64{uint64(cur), uint64(max)}
			}
		}
	}
	return h
}
