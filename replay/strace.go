package replay

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Kind is what a line of strace's output records.
type Kind int

// The kinds of line.
const (
	KindCall       Kind = iota // a call with its result: NAME(ARGS) = RESULT
	KindUnfinished             // a call's entry: NAME(ARGS <unfinished ...>
	KindResumed                // its return: <... NAME resumed>ARGS) = RESULT
	KindSignal                 // --- SIGNAME {SIGINFO} ---
	KindStopped                // --- stopped by SIGNAME ---
	KindExited                 // +++ exited with N +++
	KindKilled                 // +++ killed by SIGNAME [(core dumped)] +++
	KindSuperseded             // +++ superseded by execve in pid N +++
)

// Event is one line of a trace.
type Event struct {
	Line int
	// Tid is the thread that the line is about, in strace's pid namespace; 0 when the line
	// has no pid prefix (a trace of one process without -f).
	Tid  int
	Kind Kind
	// Name is the call's name, or for a signal, stop or kill line the signal's name.
	Name string
	// Args is the text of the arguments on this line, without the parentheses that bound
	// them: all of them for a call, those before "<unfinished ...>" or after "resumed>".
	Args string
	// Result is a call's result, for KindCall and KindResumed.
	Result Result
	// Info is a signal line's siginfo, without its braces.
	Info string
	// Status is an exit code (KindExited), a signal number (KindKilled, KindSignal,
	// KindStopped), or the pid whose exec superseded the thread (KindSuperseded).
	Status int
	// Core marks a kill that dumped core.
	Core bool
	// PidChanged marks an execve entry that strace saw change its thread's pid
	// ("<pid changed to N ...>"): a thread that was not the leader exec'd.
	PidChanged bool
	// Text is the line as read.
	Text string
}

// Result is what a call returned, as strace prints it after "= ".
type Result struct {
	// Unknown marks "?": the call did not return (exit), or returned to a signal (Errno
	// ERESTARTSYS and its kin).
	Unknown bool
	// Value is the returned number (-1 for a failure).
	Value int64
	// StraceValue is a pid result translated into strace's pid namespace
	// ("N /* M in strace's PID NS */"), 0 when strace printed no translation.
	StraceValue int64
	// Errno is the error's name: ENOENT, or ERESTARTSYS for a call a signal interrupted.
	Errno string
}

// Restart reports whether the call was interrupted by a signal, to be restarted or to fail
// with EINTR once the signal is handled.
func (r Result) Restart() bool { return strings.HasPrefix(r.Errno, "ERESTART") }

// SyntaxError is a line that is not strace output.
type SyntaxError struct {
	File string
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// maxLine bounds one line of a trace; strace's -s 96 keeps real lines far shorter.
const maxLine = 1 << 20

// Parse reads a trace: an optional header of comment lines (Header) and strace's lines. A
// line that is not strace output is a *SyntaxError naming it as FILE:LINE.
func Parse(file string, r io.Reader) (Header, []Event, error) {
	var h Header
	var events []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	n := 0
	for sc.Scan() {
		n++
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		if strings.HasPrefix(text, "#") {
			if err := h.add(text); err != nil {
				return h, nil, &SyntaxError{file, n, err.Error()}
			}
			continue
		}
		ev, err := ParseLine(text)
		if err != nil {
			return h, nil, &SyntaxError{file, n, err.Error()}
		}
		ev.Line = n
		events = append(events, ev)
	}
	if err := sc.Err(); err != nil {
		if err == bufio.ErrTooLong {
			return h, nil, &SyntaxError{file, n + 1, fmt.Sprintf("line longer than %d bytes", maxLine)}
		}
		return h, nil, err
	}
	return h, events, nil
}

// ParseLine parses one line of strace's output.
func ParseLine(text string) (Event, error) {
	ev := Event{Text: text}
	rest, tid, err := cutPid(text)
	if err != nil {
		return ev, err
	}
	ev.Tid = tid
	rest = cutTime(rest)
	switch {
	case strings.HasPrefix(rest, "--- "):
		return ev, parseSignalLine(&ev, rest)
	case strings.HasPrefix(rest, "+++ "):
		return ev, parseEndLine(&ev, rest)
	case strings.HasPrefix(rest, "<... "):
		return ev, parseResumed(&ev, rest)
	}
	return ev, parseCall(&ev, rest)
}

// cutPid removes the line's pid prefix: "PID " as -f writes into one file, or "[pid PID] "
// as it writes to a terminal. A line without one is the traced process's own.
func cutPid(s string) (string, int, error) {
	if rest, ok := strings.CutPrefix(s, "[pid"); ok {
		rest = strings.TrimLeft(rest, " ")
		num, rest, ok := strings.Cut(rest, "]")
		if !ok {
			return "", 0, fmt.Errorf("unterminated [pid N] prefix")
		}
		tid, err := strconv.Atoi(num)
		if err != nil || tid <= 0 {
			return "", 0, fmt.Errorf("bad pid %q", num)
		}
		return strings.TrimLeft(rest, " "), tid, nil
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	// A number followed by a space is a pid, unless it is -ttt's time ("123.456 ").
	if i == 0 || i >= len(s) || s[i] != ' ' {
		return s, 0, nil
	}
	tid, err := strconv.Atoi(s[:i])
	if err != nil || tid <= 0 || tid > 1<<22 {
		return "", 0, fmt.Errorf("bad pid %q", s[:i])
	}
	return strings.TrimLeft(s[i:], " "), tid, nil
}

// cutTime removes a time stamp: -ttt's "SECONDS.MICROS", -t's "HH:MM:SS" or -tt's
// "HH:MM:SS.MICROS".
func cutTime(s string) string {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == ':') {
		i++
	}
	if i > 0 && i < len(s) && s[i] == ' ' {
		return strings.TrimLeft(s[i:], " ")
	}
	return s
}

func parseSignalLine(ev *Event, s string) error {
	body, ok := strings.CutSuffix(strings.TrimRight(s[len("--- "):], " "), "---")
	if !ok {
		return fmt.Errorf("signal line without its closing ---")
	}
	body = strings.TrimSpace(body)
	if name, ok := strings.CutPrefix(body, "stopped by "); ok {
		ev.Kind, ev.Name = KindStopped, strings.TrimSpace(name)
		return setSignal(ev)
	}
	name, info, _ := strings.Cut(body, " ")
	ev.Kind, ev.Name = KindSignal, name
	info = strings.TrimSpace(info)
	if info != "" {
		inner, ok := strings.CutPrefix(info, "{")
		if inner, ok = strings.CutSuffix(inner, "}"); !ok {
			return fmt.Errorf("signal %s: siginfo not in braces", name)
		}
		ev.Info = inner
	}
	return setSignal(ev)
}

// setSignal sets ev.Status to the number of the signal ev.Name names.
func setSignal(ev *Event) error {
	sig, ok := SignalNumber(ev.Name)
	if !ok {
		return fmt.Errorf("unknown signal %q", ev.Name)
	}
	ev.Status = sig
	return nil
}

func parseEndLine(ev *Event, s string) error {
	body, ok := strings.CutSuffix(strings.TrimRight(s[len("+++ "):], " "), "+++")
	if !ok {
		return fmt.Errorf("exit line without its closing +++")
	}
	body = strings.TrimSpace(body)
	switch {
	case strings.HasPrefix(body, "exited with "):
		code, err := strconv.Atoi(strings.TrimPrefix(body, "exited with "))
		if err != nil || code < 0 || code > 255 {
			return fmt.Errorf("bad exit code in %q", body)
		}
		ev.Kind, ev.Status = KindExited, code
		return nil
	case strings.HasPrefix(body, "killed by "):
		name := strings.TrimPrefix(body, "killed by ")
		name, ev.Core = strings.CutSuffix(name, " (core dumped)")
		ev.Kind, ev.Name = KindKilled, strings.TrimSpace(name)
		return setSignal(ev)
	case strings.HasPrefix(body, "superseded by execve in pid "):
		pid, err := strconv.Atoi(strings.TrimPrefix(body, "superseded by execve in pid "))
		if err != nil || pid <= 0 {
			return fmt.Errorf("bad pid in %q", body)
		}
		ev.Kind, ev.Status = KindSuperseded, pid
		return nil
	}
	return fmt.Errorf("unknown +++ line %q", body)
}

// parseResumed parses "<... NAME resumed>ARGS) = RESULT".
func parseResumed(ev *Event, s string) error {
	head, tail, ok := strings.Cut(s[len("<... "):], " resumed>")
	if !ok || !isCallName(head) {
		return fmt.Errorf("bad resumed line")
	}
	ev.Kind, ev.Name = KindResumed, head
	end := closingParen(tail)
	if end < 0 {
		if strings.Contains(tail, "<unfinished ...>") {
			// Resumed and cut short again by the task's death: it never returns.
			ev.Args, ev.Result = strings.TrimSpace(tail[:strings.Index(tail, "<unfinished ...>")]), Result{Unknown: true}
			return nil
		}
		return fmt.Errorf("%s resumed: no closing parenthesis", head)
	}
	ev.Args = tail[:end]
	var err error
	ev.Result, err = parseResult(tail[end+1:])
	return err
}

// parseCall parses "NAME(ARGS) = RESULT" and "NAME(ARGS <unfinished ...>".
func parseCall(ev *Event, s string) error {
	open := strings.IndexByte(s, '(')
	if open <= 0 || !isCallName(s[:open]) {
		return fmt.Errorf("not a line of strace's output")
	}
	ev.Name = s[:open]
	rest := s[open+1:]
	end := closingParen(rest)
	if end < 0 {
		args, ok := strings.CutSuffix(strings.TrimRight(rest, " "), "<unfinished ...>")
		if !ok {
			if i := strings.Index(rest, " <pid changed to "); i >= 0 {
				args, ok = rest[:i], true
				ev.PidChanged = true
			}
		}
		if !ok {
			return fmt.Errorf("%s: no closing parenthesis", ev.Name)
		}
		ev.Kind, ev.Args = KindUnfinished, strings.TrimRight(args, " ")
		return nil
	}
	ev.Kind, ev.Args = KindCall, rest[:end]
	var err error
	ev.Result, err = parseResult(rest[end+1:])
	return err
}

// isCallName reports whether s can be a system call's name as strace prints it: letters,
// digits and underscores ("syscall_0x1b6" for one it does not know, "???" for none).
func isCallName(s string) bool {
	if s == "???" {
		return true
	}
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// parseResult parses " = RESULT [ERRNO (TEXT)] [/* COMMENT */] [<DURATION>]".
func parseResult(s string) (Result, error) {
	var r Result
	s = strings.TrimLeft(s, " ")
	s, ok := strings.CutPrefix(s, "=")
	if !ok {
		return r, fmt.Errorf("no result after the arguments")
	}
	s = strings.TrimLeft(s, " ")
	if i := strings.LastIndex(s, " <"); i >= 0 && strings.HasSuffix(s, ">") {
		s = s[:i] // -T's time spent in the call
	}
	word, rest, _ := strings.Cut(s, " ")
	rest = strings.TrimSpace(rest)
	if word == "?" {
		r.Unknown = true
	} else {
		v, err := parseNumber(word)
		if err != nil {
			return r, fmt.Errorf("bad result %q", word)
		}
		r.Value = v
	}
	if strings.HasPrefix(rest, "/*") {
		comment, after, ok := strings.Cut(rest[2:], "*/")
		if !ok {
			return r, fmt.Errorf("unterminated comment in the result")
		}
		if v, ok := pidNSComment(comment); ok {
			r.StraceValue = v
		}
		rest = strings.TrimSpace(after)
	}
	if rest != "" && rest[0] == 'E' {
		name, _, _ := strings.Cut(rest, " ")
		r.Errno = name
	}
	if r.Value < 0 && r.Errno == "" {
		return r, fmt.Errorf("failed call without an errno")
	}
	return r, nil
}

// pidNSComment reads strace's translation of a pid into its own namespace, "M in strace's
// PID NS".
func pidNSComment(c string) (int64, bool) {
	num, rest, ok := strings.Cut(strings.TrimSpace(c), " ")
	if !ok || !strings.Contains(rest, "PID NS") {
		return 0, false
	}
	v, err := strconv.ParseInt(num, 10, 64)
	return v, err == nil
}

// parseNumber reads a decimal, hexadecimal (0x) or octal (leading 0) integer, which may be
// negative; an unsigned 64-bit value keeps its bits.
func parseNumber(s string) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	u, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, err
	}
	if neg {
		return -int64(u), nil
	}
	return int64(u), nil
}

// closingParen returns the index in s of the parenthesis that closes a call's arguments,
// skipping strings, comments and nested brackets; -1 if there is none.
func closingParen(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			j := skipString(s, i)
			if j < 0 {
				return -1
			}
			i = j
		case '/':
			if i+1 < len(s) && s[i+1] == '*' {
				j := strings.Index(s[i+2:], "*/")
				if j < 0 {
					return -1
				}
				i += j + 3
			}
		case '(', '[', '{':
			depth++
		case ']', '}':
			depth--
		case ')':
			if depth == 0 {
				return i
			}
			depth--
		}
	}
	return -1
}

// skipString returns the index of the quote that closes the string starting at s[i], -1 if
// it is not closed.
func skipString(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return -1
}
