package replay

import (
	"strconv"

	"golang.org/x/sys/unix"

	"tasklist/internal/abi"
	"tasklist/scenario"
)

// The semaphore calls. A set is named by the id the trace's semget returned, bound to the
// model's set when the semget is replayed; glibc's semop is semtimedop with no timeout.

// ipc64 is the flag glibc adds to semctl's command for the 64-bit structures.
const ipc64 = 0x100

// setText prints a semget result: a set the trace named before by its id, else a new set.
func (r *replayer) setText(id int64) string {
	if _, ok := r.sets[id]; ok {
		return "set " + strconv.FormatInt(id, 10)
	}
	return "new set"
}

func semget(r *replayer, t *task, c *traceCall) action {
	args, ok := intArgs(c, 0, 1, 2)
	if !ok {
		return badArgs(c)
	}
	a := replayed(c, "semget", args, func(res Result) string { return r.setText(res.Value) })
	// Both sides are printed before the new set is bound, so that "new set" is what
	// both say of a set neither named before.
	var traceText, modelText string
	a.expect = expectErrno(c, func(Result) string { return traceText })
	a.model = func(scenario.Result) string { return modelText }
	a.after = func(res scenario.Result) {
		tr := c.result()
		if tr.Value >= 0 && !tr.Unknown {
			traceText = r.setText(tr.Value)
		}
		modelText = "new set"
		for id, ref := range r.sets {
			if ref == res.NewSet {
				modelText = "set " + strconv.FormatInt(id, 10)
			}
		}
		if _, known := r.sets[tr.Value]; res.Kind == scenario.ResultNewSet && tr.Value >= 0 && !tr.Unknown && !known {
			r.sets[tr.Value] = res.NewSet
		}
	}
	return a
}

// setArg resolves a semaphore id: a set the trace's semget made, or for a call that failed
// in the trace the bare number; a set from outside the trace is outside the replay.
func (r *replayer) setArg(c *traceCall) (scenario.Value, *action) {
	id, err := argInt(arg(c, 0))
	if err != nil {
		a := badArgs(c)
		return scenario.Value{}, &a
	}
	if ref, ok := r.sets[id]; ok {
		return scenario.Value{Kind: scenario.ValueSet, Set: ref}, nil
	}
	if c.result().Value < 0 {
		return scenario.Value{Kind: scenario.ValueInt, Int: id}, nil
	}
	a := outsideScope("a semaphore set made outside the trace")
	return scenario.Value{}, &a
}

// maxTimeout is the longest semtimedop timeout a replay waits for, in milliseconds.
const maxTimeout = 1000

// semop(ID, SOPS, NSOPS) and semtimedop(ID, SOPS, NSOPS, TIMEOUT): semtimedop with NULL is
// semop; a timeout is passed in milliseconds.
func semop(r *replayer, t *task, c *traceCall) action {
	set, bad := r.setArg(c)
	if bad != nil {
		return *bad
	}
	elems, ok := argArray(arg(c, 1))
	if !ok || len(elems) == 0 {
		return badArgs(c)
	}
	sops := scenario.Value{Kind: scenario.ValueSembufs}
	for _, e := range elems {
		f, ok := argStruct(e)
		num, err1 := argInt(f["sem_num"])
		op, err2 := argInt(f["sem_op"])
		flg, err3 := argInt(f["sem_flg"])
		if !ok || err1 != nil || err2 != nil || err3 != nil {
			return badArgs(c)
		}
		sops.Sembufs = append(sops.Sembufs, scenario.Sembuf{Num: num, Op: op, Flags: flg})
	}
	timeout := arg(c, 3)
	if c.name == "semop" || timeout == "NULL" {
		return replayed(c, "semop", []scenario.Value{set, sops}, number)
	}
	ts, ok := argStruct(timeout)
	sec, err1 := argInt(ts["tv_sec"])
	nsec, err2 := argInt(ts["tv_nsec"])
	if !ok || err1 != nil || err2 != nil {
		return badArgs(c)
	}
	// A timeout is waited for in real time, so a long one is cut to maxTimeout: the replay
	// makes the calls that could end it long before.
	ms := min(sec*1000+(nsec+999999)/1000000, maxTimeout)
	return replayed(c, "semtimedop", []scenario.Value{set, {Kind: scenario.ValueInt, Int: ms}, sops}, number)
}

// semctl(ID, NUM, CMD, ARG) for the commands the scenario language has.
func semctl(r *replayer, t *task, c *traceCall) action {
	set, bad := r.setArg(c)
	if bad != nil {
		return *bad
	}
	args, ok := intArgs(c, 1, 2)
	if !ok {
		return badArgs(c)
	}
	cmd := args[1].Int &^ ipc64
	args[1].Int = cmd
	call := append([]scenario.Value{set}, args...)
	switch cmd {
	case abi.GETVAL, abi.GETNCNT, abi.GETZCNT, unix.IPC_RMID, unix.IPC_STAT:
		return replayed(c, "semctl", call, number)
	case abi.GETPID:
		return replayed(c, "semctl", call, r.tracePid(t))
	case abi.SETVAL:
		v, ok := intArgs(c, 3)
		if !ok {
			return badArgs(c)
		}
		return replayed(c, "semctl", append(call, v...), number)
	case abi.SETALL:
		elems, ok := argArray(arg(c, 3))
		if !ok {
			return badArgs(c)
		}
		list := scenario.Value{Kind: scenario.ValueList}
		for _, e := range elems {
			v, err := argInt(e)
			if err != nil {
				return badArgs(c)
			}
			list.List = append(list.List, v)
		}
		return replayed(c, "semctl", append(call, list), number)
	case abi.GETALL:
		return replayed(c, "semctl", call, func(Result) string { return listText(arg(c, 3)) })
	}
	return unsupported("semctl command the replayer lacks")
}
