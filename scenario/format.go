package scenario

import (
	"fmt"
	"strconv"
	"strings"
)

// format spells a result the way the contract prints it; pid numbers become the names bound to
// the tasks the caller sees with those pids.
func (r *runner) format(caller TaskRef, res Result) string {
	switch res.Kind {
	case ResultDone:
		return "done"
	case ResultInt:
		return strconv.FormatInt(res.Int, 10)
	case ResultPid:
		return r.pidName(caller, res.Pid)
	case ResultNewTask:
		if res.HasFile {
			return r.pidName(caller, res.NewPid) + ", " + r.fileName(res.NewFile)
		}
		return r.pidName(caller, res.NewPid)
	case ResultNewFile:
		return r.fileName(res.NewFile)
	case ResultLimit:
		return limitText(res.Soft) + " " + limitText(res.Hard)
	case ResultWait:
		return r.formatWait(caller, res)
	case ResultList:
		vals := make([]string, len(res.List))
		for i, v := range res.List {
			vals[i] = strconv.FormatInt(v, 10)
		}
		return "[" + strings.Join(vals, " ") + "]"
	case ResultNewSet:
		for i := len(r.sets) - 1; i >= 0; i-- {
			if r.sets[i].ref == int(res.NewSet) {
				return r.sets[i].name
			}
		}
		return strconv.Itoa(res.SetID)
	case ResultErrno:
		return errnoName(res.Errno)
	case ResultSigset:
		return sigsetText(uint64(res.Int))
	case ResultSignal:
		return signalName(int(res.Int))
	}
	return fmt.Sprintf("invalid result kind %d", res.Kind)
}

// fileName names a pidfd by the name bound to it, or, for one no name was bound to, as
// "pidfd": its number depends on the runner's own descriptors.
func (r *runner) fileName(f FileRef) string {
	for _, n := range r.files {
		if n.ref == int(f) {
			return n.name
		}
	}
	return "pidfd"
}

// limitText spells one resource limit: RLIM_INFINITY, all ones, as "unlimited".
func limitText(v uint64) string {
	if v == ^uint64(0) {
		return "unlimited"
	}
	return strconv.FormatUint(v, 10)
}

func (r *runner) formatWait(caller TaskRef, res Result) string {
	who := r.pidName(caller, res.WaitPid)
	switch res.How {
	case Exited:
		return who + " exited " + strconv.Itoa(res.Code)
	case Killed:
		return who + " killed " + signalName(res.Code)
	case Dumped:
		return who + " dumped " + signalName(res.Code)
	case Stopped:
		return who + " stopped " + stopName(res.Code)
	case Trapped:
		return who + " trapped " + stopName(res.Code)
	case Continued:
		return who + " continued"
	}
	return fmt.Sprintf("%s invalid wait status %d", who, res.How)
}

// pidName names the task that caller sees with pid: the most recently bound name whose task has
// that pid there, so that a thread that took its leader's pid in execve wins over the leader.
func (r *runner) pidName(caller TaskRef, pid int) string {
	if pid > 0 {
		for i := len(r.tasks) - 1; i >= 0; i-- {
			if r.b.PidIn(caller, TaskRef(r.tasks[i].ref)) == pid {
				return r.tasks[i].name
			}
		}
	}
	return strconv.Itoa(pid)
}

// stopName spells a stop's code. A ptrace stop carries more than a signal: 0x80 for a
// syscall stop under PTRACE_O_TRACESYSGOOD and an event number above the low byte; they are
// written as the C expression that builds the code, e.g. SIGTRAP|PTRACE_EVENT_FORK<<8.
func stopName(code int) string {
	s := signalName(code & 0x7f)
	if code&0x80 != 0 {
		s += "|0x80"
	}
	if ev := code >> 8; ev != 0 {
		s += "|" + eventName(ev) + "<<8"
	}
	return s
}

func eventName(ev int) string {
	for name, v := range constants {
		if strings.HasPrefix(name, "PTRACE_EVENT_") && v == int64(ev) {
			return name
		}
	}
	return strconv.Itoa(ev)
}
