package replay

import (
	"fmt"
	"strconv"
	"strings"
)

// traceCall is one system call of the trace: one complete line, or an unfinished line and
// the resumed line that completes it, whose arguments are joined.
type traceCall struct {
	entry *Event
	// exit is the line with the result: entry itself, the resumed line, or nil for a call
	// that never returned (its task died in it, or the trace ends first).
	exit *Event
	name string
	args []string
	// act is what the replay does with it.
	act action
	// started marks a call made in the model in the background, to be joined.
	started bool
	// model is the model's result of a call that returned before the trace's did (a call a
	// signal interrupted, joined when its task's handler made a call of its own).
	model   *string
	preText string
	counted bool
	// settled marks a counted call once it is classified: compared, not compared, outside
	// or unsupported.
	settled bool
	// child is the task a creating call made, once its first line or its result is seen.
	child *task
}

// result is the trace's result of the call; a call that never returned is Unknown.
func (c *traceCall) result() Result {
	if c.exit == nil {
		return Result{Unknown: true}
	}
	return c.exit.Result
}

// text is the call as the trace wrote it, shortened for messages.
func (c *traceCall) text() string {
	s := c.name + "(" + strings.Join(c.args, ", ") + ")"
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// pairCalls joins each unfinished line with its resumed line: the next line of the same
// thread that resumes a call of the same name, following a thread whose exec gave it another
// tid ("+++ superseded by execve in pid N +++"). It returns the call each entry line starts,
// by event index; a resumed line that resumes nothing is an error at that line.
func pairCalls(events []Event) (map[int]*traceCall, error) {
	calls := make(map[int]*traceCall)
	open := map[int]*traceCall{} // tid -> its unfinished call
	for i := range events {
		ev := &events[i]
		if ev.Kind == KindCall || ev.Kind == KindUnfinished {
			if c := open[ev.Tid]; c != nil {
				return nil, &SyntaxError{Line: ev.Line, Msg: fmt.Sprintf("%s makes a call while its %s on line %d has not returned",
					tidText(ev.Tid), c.name, c.entry.Line)}
			}
		}
		switch ev.Kind {
		case KindCall:
			c := &traceCall{entry: ev, exit: ev, name: ev.Name}
			c.args = splitTop(ev.Args)
			calls[i] = c
		case KindUnfinished:
			c := &traceCall{entry: ev, name: ev.Name}
			calls[i] = c
			open[ev.Tid] = c
		case KindResumed:
			c := open[ev.Tid]
			if c == nil || c.name != ev.Name {
				return nil, &SyntaxError{Line: ev.Line, Msg: "<... " + ev.Name + " resumed> with no unfinished " + ev.Name + " call of " + tidText(ev.Tid)}
			}
			delete(open, ev.Tid)
			c.exit = ev
		case KindSuperseded:
			// The thread ev.Status exec'd and took this tid: its unfinished execve
			// resumes under this tid, and the old leader's own call never returns.
			delete(open, ev.Tid)
			if c := open[ev.Status]; c != nil {
				delete(open, ev.Status)
				open[ev.Tid] = c
			}
		case KindExited, KindKilled:
			delete(open, ev.Tid)
		}
	}
	for _, c := range calls {
		if c.exit != nil && c.exit != c.entry {
			c.args = splitTop(strings.TrimRight(c.entry.Args, " ") + c.exit.Args)
		} else if c.exit == nil {
			c.args = splitTop(c.entry.Args)
		}
	}
	return calls, nil
}

func tidText(tid int) string {
	if tid == 0 {
		return "the traced process"
	}
	return "tid " + strconv.Itoa(tid)
}
