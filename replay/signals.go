package replay

import (
	"strings"
	"time"

	"tasklist/scenario"
)

// The rows of the calls that mask and wait for signals: rt_sigprocmask, rt_sigpending,
// rt_sigsuspend, rt_sigtimedwait.

// argSigset reads strace's signal set: [CHLD INT], ~[RTMIN RT_1] (every signal but those),
// or []; names are given without SIG. ok is false for anything else (NULL included).
func argSigset(s string) (set uint64, ok bool) {
	s = strings.TrimSpace(stripComments(s))
	complement := strings.HasPrefix(s, "~")
	inner, found := strings.CutPrefix(strings.TrimPrefix(s, "~"), "[")
	if !found {
		return 0, false
	}
	if inner, found = strings.CutSuffix(inner, "]"); !found {
		return 0, false
	}
	for name := range strings.FieldsSeq(inner) {
		sig, ok := SignalNumber(name) // a number, as -X verbose prints it beside the name
		if !ok {
			sig, ok = SignalNumber("SIG" + name)
		}
		if !ok {
			return 0, false
		}
		set |= 1 << (sig - 1)
	}
	if complement {
		set = ^set
	}
	return set, true
}

// sigsetValue is a set as the scenario language's argument: the list of its signals.
func sigsetValue(set uint64) scenario.Value {
	v := scenario.Value{Kind: scenario.ValueList, List: []int64{}}
	for sig := int64(1); sig <= 64; sig++ {
		if set&(1<<(sig-1)) != 0 {
			v.List = append(v.List, sig)
		}
	}
	return v
}

// sigsetText prints a set as the scenario language does.
func sigsetText(set uint64) string {
	var names []string
	for sig := 1; sig <= 64; sig++ {
		if set&(1<<(sig-1)) != 0 {
			names = append(names, signalName(sig))
		}
	}
	return "[" + strings.Join(names, " ") + "]"
}

// sigprocmask is rt_sigprocmask: with a new set, the scenario call, whose printed old mask is
// compared with the trace's when it was read; with none, a read of the model's mask.
func sigprocmask(r *replayer, t *task, c *traceCall) action {
	how, err := argInt(arg(c, 0))
	if err != nil {
		return badArgs(c)
	}
	set, hasSet := argSigset(arg(c, 1))
	old, hasOld := argSigset(arg(c, 2))
	if !hasSet && arg(c, 1) != "NULL" || !hasOld && arg(c, 2) != "NULL" {
		return badArgs(c)
	}
	oldText := func(Result) string {
		if hasOld {
			return sigsetText(old)
		}
		return "0"
	}
	if !hasSet {
		return action{kind: actQuery, expect: expectErrno(c, oldText), query: func() string {
			m, err := r.b.Task(t.ref).Sigprocmask(0, nil)
			switch {
			case err != nil:
				return errnoName(errnoOf(err))
			case !hasOld:
				return "0"
			}
			return sigsetText(uint64(m))
		}}
	}
	a := replayed(c, "sigprocmask", []scenario.Value{{Kind: scenario.ValueInt, Int: how}, sigsetValue(set)}, oldText)
	if !hasOld {
		a.model = func(res scenario.Result) string {
			if res.Kind == scenario.ResultSigset {
				return "0" // the trace did not read the old mask
			}
			return r.printResult(t.ref, res)
		}
	}
	return a
}

// sigpending is rt_sigpending, its set compared.
func sigpending(r *replayer, t *task, c *traceCall) action {
	return replayed(c, "sigpending", nil, func(Result) string {
		set, ok := argSigset(arg(c, 0))
		if !ok {
			return "unreadable set"
		}
		return sigsetText(set)
	})
}

// sigsuspend is rt_sigsuspend, which returns only to a signal.
func sigsuspend(r *replayer, t *task, c *traceCall) action {
	set, ok := argSigset(arg(c, 0))
	if !ok {
		return badArgs(c)
	}
	return replayed(c, "sigsuspend", []scenario.Value{sigsetValue(set)}, number)
}

// sigtimedwait is rt_sigtimedwait: the signal taken, by name, or the errno. A timeout is
// passed in milliseconds, as the scenario language takes it; none is -1.
func sigtimedwait(r *replayer, t *task, c *traceCall) action {
	set, ok := argSigset(arg(c, 0))
	if !ok {
		return badArgs(c)
	}
	ms := int64(-1)
	if ts, ok := argStruct(arg(c, 2)); ok {
		sec, err1 := argInt(ts["tv_sec"])
		nsec, err2 := argInt(ts["tv_nsec"])
		if err1 != nil || err2 != nil {
			return badArgs(c)
		}
		ms = (time.Duration(sec)*time.Second + time.Duration(nsec)).Milliseconds()
	} else if arg(c, 2) != "NULL" {
		return badArgs(c)
	}
	return replayed(c, "sigtimedwait", []scenario.Value{sigsetValue(set), {Kind: scenario.ValueInt, Int: ms}},
		func(res Result) string { return signalName(int(res.Value)) })
}
