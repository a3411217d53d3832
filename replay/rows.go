package replay

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"tasklist/internal/abi"
	"tasklist/scenario"
)

// row decides what the replay does with one call of the trace: the scenario call it makes
// on the model and the trace's result printed as the model's will be, a read of the model's
// state, or a reason it is outside the model's scope or unsupported.
type row func(r *replayer, t *task, c *traceCall) action

// rows maps each system call the replayer knows to its row. A call the model gains is one
// row changed: from unsupported to the scenario call it became.
var rows map[string]row

func init() {
	rows = map[string]row{
		"fork":              func(r *replayer, t *task, c *traceCall) action { return r.create(t, c, "fork", nil) },
		"vfork":             vfork,
		"clone":             clone,
		"clone3":            clone3,
		"execve":            execve,
		"execveat":          execve,
		"exit":              exit,
		"exit_group":        exit,
		"wait4":             wait4,
		"waitid":            waitid,
		"kill":              kill,
		"tgkill":            kill,
		"getpid":            pidResult,
		"gettid":            pidResult,
		"getppid":           pidResult,
		"getpgrp":           pidResult,
		"setsid":            pidResult,
		"getpgid":           pidResult,
		"getsid":            pidResult,
		"setpgid":           zeroResult,
		"getpriority":       getpriority,
		"setpriority":       zeroResult,
		"getuid":            idQuery,
		"geteuid":           idQuery,
		"getgid":            idQuery,
		"getegid":           idQuery,
		"getresuid":         idQuery,
		"getresgid":         idQuery,
		"setuid":            zeroResult,
		"setgid":            zeroResult,
		"setresuid":         zeroResult,
		"setresgid":         zeroResult,
		"getrlimit":         rlimit,
		"setrlimit":         rlimit,
		"prlimit64":         rlimit,
		"rt_sigaction":      sigaction,
		"prctl":             prctl,
		"ptrace":            ptrace,
		"unshare":           zeroResult,
		"semget":            semget,
		"semop":             semop,
		"semtimedop":        semop,
		"semctl":            semctl,
		"pidfd_open":        pidfdOpen,
		"pidfd_send_signal": pidfdSendSignal,
		"rt_sigprocmask":    sigprocmask,
		"rt_sigpending":     sigpending,
		"rt_sigsuspend":     sigsuspend,
		"rt_sigtimedwait":   sigtimedwait,
		"tkill":             kill,
		"rt_sigreturn": func(*replayer, *task, *traceCall) action {
			return outsideScope("rt_sigreturn: its result is the interrupted call's")
		},
		"restart_syscall": func(*replayer, *task, *traceCall) action {
			return outsideScope("restart_syscall of a call outside the model")
		},
	}
	// Calls in scope that the model does not have yet: each is counted by name.
	for _, name := range []string{"setreuid", "setregid", "rt_sigqueueinfo",
		"rt_tgsigqueueinfo", "pidfd_getfd"} {
		rows[name] = func(*replayer, *task, *traceCall) action { return unsupported(name) }
	}
}

// fixed is an expectation known when the call is entered.
func fixed(s string) func() string { return func() string { return s } }

// expectErrno prints a failed call's errno, or what ok prints of a successful result.
func expectErrno(c *traceCall, ok func(Result) string) func() string {
	return func() string {
		res := c.result()
		switch {
		case res.Unknown:
			return "done"
		case res.Value < 0:
			return res.Errno
		}
		return ok(res)
	}
}

func number(res Result) string { return strconv.FormatInt(res.Value, 10) }

// replayed is the action that makes call name with args and expects what ok prints.
func replayed(c *traceCall, name string, args []scenario.Value, ok func(Result) string) action {
	return action{call: scenario.Call{Name: name, Args: args}, expect: expectErrno(c, ok)}
}

// arg returns argument i, or "" if the call has fewer.
func arg(c *traceCall, i int) string {
	if i < len(c.args) {
		return c.args[i]
	}
	return ""
}

// intArgs reads arguments i... as integers; ok is false when one is not a number.
func intArgs(c *traceCall, idx ...int) ([]scenario.Value, bool) {
	vals := make([]scenario.Value, len(idx))
	for k, i := range idx {
		v, err := argInt(arg(c, i))
		if err != nil {
			return nil, false
		}
		vals[k] = scenario.Value{Kind: scenario.ValueInt, Int: v}
	}
	return vals, true
}

// badArgs is the action for a line whose arguments the replayer cannot read.
func badArgs(c *traceCall) action {
	return outsideScope(c.name + ": arguments the replayer cannot read")
}

// pidArg resolves a pid argument of t's call: a traced task, the task's group (-PGID),
// or 0, -1 and the like as numbers. It reports why not for a process outside the trace or a
// task with no model twin.
func (r *replayer) pidArg(t *task, s string) (scenario.Value, string) {
	local, strace, err := argPid(s)
	if err != nil {
		return scenario.Value{}, "bad"
	}
	neg := local < -1
	if local >= -1 && local <= 0 {
		return scenario.Value{Kind: scenario.ValueInt, Int: local}, ""
	}
	if neg {
		local = -local
	}
	u := r.tasks.lookup(t.ns, local, strace)
	switch {
	case u == nil:
		return scenario.Value{}, "names a process outside the trace"
	case !u.bound:
		return scenario.Value{}, "names a task the model did not create"
	}
	return scenario.Value{Kind: scenario.ValueTask, Task: u.ref, Neg: neg}, ""
}

// pidArgs resolves the arguments i... of c as pids, or returns the action that counts why
// it cannot.
func (r *replayer) pidArgs(t *task, c *traceCall, idx ...int) ([]scenario.Value, *action) {
	vals := make([]scenario.Value, len(idx))
	for k, i := range idx {
		v, why := r.pidArg(t, arg(c, i))
		switch why {
		case "":
			vals[k] = v
		case "bad":
			a := badArgs(c)
			return nil, &a
		default:
			a := outsideScope(why)
			return nil, &a
		}
	}
	return vals, nil
}

// tracePid prints a pid result of t's call as a task identity.
func (r *replayer) tracePid(t *task) func(Result) string {
	return func(res Result) string { return r.tasks.identity(t.ns, res.Value, res.StraceValue) }
}

// pidResult is a call that returns a pid and takes pids, if any: getpid, getpgid, setsid...
func pidResult(r *replayer, t *task, c *traceCall) action {
	idx := make([]int, len(c.args))
	for i := range idx {
		idx[i] = i
	}
	args, bad := r.pidArgs(t, c, idx...)
	if bad != nil {
		return *bad
	}
	return replayed(c, c.name, args, r.tracePid(t))
}

// zeroResult is a call that returns 0 and takes pids, priorities, ids or flags.
func zeroResult(r *replayer, t *task, c *traceCall) action {
	var args []scenario.Value
	var bad *action
	switch c.name {
	case "setpgid":
		args, bad = r.pidArgs(t, c, 0, 1)
	case "setpriority":
		args, bad = r.priorityArgs(t, c, 3)
	default: // setuid, setgid, setresuid, setresgid, unshare: integers
		idx := make([]int, len(c.args))
		for i := range idx {
			idx[i] = i
		}
		var ok bool
		if args, ok = intArgs(c, idx...); !ok {
			return badArgs(c)
		}
		if strings.HasPrefix(c.name, "set") {
			for i := range args {
				args[i].Int = int64(int32(args[i].Int)) // -1, printed as 4294967295 by some
			}
		}
	}
	if bad != nil {
		return *bad
	}
	a := replayed(c, c.name, args, number)
	if c.name == "unshare" && len(args) > 0 && args[0].Int&unix.CLONE_NEWPID != 0 && c.result().Value == 0 {
		// The task's next children start a pid namespace of their own.
		t.children = &pidns{nr: map[int64]*task{}}
	}
	return a
}

// priorityArgs reads which, who and (for setpriority) the nice value: who is a pid for
// PRIO_PROCESS and PRIO_PGRP, a uid for PRIO_USER.
func (r *replayer) priorityArgs(t *task, c *traceCall, n int) ([]scenario.Value, *action) {
	ints, ok := intArgs(c, 0)
	if !ok || len(c.args) < n {
		a := badArgs(c)
		return nil, &a
	}
	if ints[0].Int == unix.PRIO_USER {
		rest, ok := intArgs(c, 1)
		if !ok {
			a := badArgs(c)
			return nil, &a
		}
		ints = append(ints, rest...)
	} else {
		who, bad := r.pidArgs(t, c, 1)
		if bad != nil {
			return nil, bad
		}
		ints = append(ints, who...)
	}
	if n == 3 {
		nice, ok := intArgs(c, 2)
		if !ok {
			a := badArgs(c)
			return nil, &a
		}
		ints = append(ints, nice...)
	}
	return ints, nil
}

// getpriority's raw result is 20 - nice; the model's runner prints the nice value.
func getpriority(r *replayer, t *task, c *traceCall) action {
	args, bad := r.priorityArgs(t, c, 2)
	if bad != nil {
		return *bad
	}
	return replayed(c, "getpriority", args, func(res Result) string { return strconv.FormatInt(20-res.Value, 10) })
}

func exit(r *replayer, t *task, c *traceCall) action {
	args, ok := intArgs(c, 0)
	if !ok {
		return badArgs(c)
	}
	return replayed(c, c.name, args, number)
}

// execve fails on the file system (ENOENT, EACCES, ENOEXEC...) before anything the model has
// is touched; the failures the model has are the process's own.
func execve(r *replayer, t *task, c *traceCall) action {
	res := c.result()
	if res.Value < 0 && res.Errno != "EAGAIN" && res.Errno != "EINTR" {
		return outsideScope("execve failed on the file system")
	}
	// A thread that execs takes its leader's tid, and strace prints whatever was left in
	// the register for it: any success is 0. Its table is its own then, with no pidfd.
	a := replayed(c, "execve", nil, func(Result) string { return "0" })
	a.after = func(res scenario.Result) {
		if res.Kind == scenario.ResultInt {
			t.files = fdTable{}
		}
	}
	return a
}

func kill(r *replayer, t *task, c *traceCall) action {
	n := len(c.args) - 1
	if n < 1 {
		return badArgs(c)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	args, bad := r.pidArgs(t, c, idx...)
	if bad != nil {
		return *bad
	}
	sig, ok := intArgs(c, n)
	if !ok {
		return badArgs(c)
	}
	return replayed(c, c.name, append(args, sig...), number)
}

// idQuery reads the caller's ids, which the scenario language has no call for.
func idQuery(r *replayer, t *task, c *traceCall) action {
	expect := expectErrno(c, number)
	if c.name == "getresuid" || c.name == "getresgid" {
		expect = expectErrno(c, func(Result) string {
			ids := make([]string, 0, 3)
			for i := range 3 {
				elems, ok := argArray(arg(c, i))
				if !ok || len(elems) != 1 {
					return "unreadable ids"
				}
				v, _ := argInt(elems[0])
				ids = append(ids, strconv.FormatInt(v, 10))
			}
			return strings.Join(ids, " ")
		})
	}
	return action{kind: actQuery, expect: expect, query: func() string {
		creds := r.b.Task(t.ref).Creds()
		switch c.name {
		case "getuid":
			return strconv.Itoa(int(creds.UID))
		case "geteuid":
			return strconv.Itoa(int(creds.EUID))
		case "getgid":
			return strconv.Itoa(int(creds.GID))
		case "getegid":
			return strconv.Itoa(int(creds.EGID))
		case "getresuid":
			return fmt.Sprintf("%d %d %d", creds.UID, creds.EUID, creds.SUID)
		}
		return fmt.Sprintf("%d %d %d", creds.GID, creds.EGID, creds.SGID)
	}}
}

// prctl has the options of the process model: the parent-death signal and the subreaper.
func prctl(r *replayer, t *task, c *traceCall) action {
	option, err := argInt(arg(c, 0))
	if err != nil {
		return badArgs(c)
	}
	switch option {
	case unix.PR_SET_PDEATHSIG, unix.PR_SET_CHILD_SUBREAPER:
		args, ok := intArgs(c, 0, 1)
		if !ok {
			return badArgs(c)
		}
		return replayed(c, "prctl", args, number)
	case unix.PR_GET_PDEATHSIG, unix.PR_GET_CHILD_SUBREAPER:
		// The value is stored through the pointer argument: [SIG].
		return action{kind: actQuery, expect: expectErrno(c, func(Result) string {
			elems, ok := argArray(arg(c, 1))
			if !ok || len(elems) != 1 {
				return "unreadable value"
			}
			v, _ := argInt(elems[0])
			return strconv.FormatInt(v, 10)
		}), query: func() string {
			u := r.b.Task(t.ref)
			if option == unix.PR_GET_PDEATHSIG {
				return strconv.Itoa(u.PrctlGetPdeathsig())
			}
			if u.PrctlGetChildSubreaper() {
				return "1"
			}
			return "0"
		}}
	}
	return outsideScope("prctl: an option outside the process model")
}

// ptrace has the requests the model acts on.
func ptrace(r *replayer, t *task, c *traceCall) action {
	req, err := argInt(arg(c, 0))
	if err != nil {
		return badArgs(c)
	}
	switch req {
	case unix.PTRACE_TRACEME:
		return replayed(c, "ptrace", ints(req), number)
	case unix.PTRACE_ATTACH, unix.PTRACE_SEIZE, unix.PTRACE_DETACH, unix.PTRACE_CONT,
		unix.PTRACE_KILL, unix.PTRACE_INTERRUPT, unix.PTRACE_LISTEN, unix.PTRACE_SETOPTIONS:
		pid, bad := r.pidArgs(t, c, 1)
		if bad != nil {
			return *bad
		}
		rest, ok := intArgs(c, 2, 3)
		if !ok {
			return badArgs(c)
		}
		return replayed(c, "ptrace", append(append(ints(req), pid...), rest...), number)
	}
	return unsupported("ptrace request the model lacks")
}

// sigaction replays rt_sigaction: a new action as sigaction (the handler's address as
// HANDLER), the old one compared by kind and flags, a query as a read of the disposition.
func sigaction(r *replayer, t *task, c *traceCall) action {
	sig, err := argInt(arg(c, 0))
	if err != nil {
		return badArgs(c)
	}
	act, hasAct := argStruct(arg(c, 1))
	old, hasOld := argStruct(arg(c, 2))
	failed := c.result().Value < 0
	oldText := "unreadable action"
	if hasOld && !failed {
		oldText = actionText(old)
	}
	readOld := func() string {
		a, err := r.b.Task(t.ref).SigactionOf(int(sig))
		if err != nil {
			return errnoName(errnoOf(err))
		}
		return actionText(map[string]string{"sa_handler": strconv.Itoa(a.Handler),
			"sa_flags": "0x" + strconv.FormatUint(a.Flags, 16)})
	}
	if !hasAct {
		if arg(c, 1) != "NULL" {
			return badArgs(c)
		}
		return action{kind: actQuery, expect: expectErrno(c, func(Result) string {
			if !hasOld {
				return "0"
			}
			return oldText
		}), query: func() string {
			text := readOld()
			if !hasOld && !strings.HasPrefix(text, "E") {
				return "0"
			}
			return text
		}}
	}
	handler, err1 := argInt(act["sa_handler"])
	flags, err2 := argInt(act["sa_flags"])
	if err1 != nil || err2 != nil {
		return badArgs(c)
	}
	if handler != abi.SIG_DFL && handler != abi.SIG_IGN {
		handler = scenario.Handler
	}
	a := replayed(c, "sigaction", ints(sig, handler, flags), number)
	if hasOld && !failed {
		a.pre = readOld
		a.expect = func() string { return oldText + "; 0" }
	}
	return a
}

// actionText prints a signal action by what the model keeps of it: its kind and flags.
func actionText(fields map[string]string) string {
	h, _ := argInt(fields["sa_handler"])
	f, _ := argInt(fields["sa_flags"])
	kind := "HANDLER"
	switch h {
	case abi.SIG_DFL:
		kind = "SIG_DFL"
	case abi.SIG_IGN:
		kind = "SIG_IGN"
	}
	return fmt.Sprintf("%s flags %#x", kind, uint64(f)&0xffffffff)
}
