package replay

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"tasklist/internal/abi"
)

// The values of strace's argument text. With -X verbose strace prints every constant as its
// number with the name in a comment ("0x1200000 /* CLONE_CHILD_CLEARTID|... */|17 /* SIGCHLD
// */"); without it, as names. Both are read: the number where there is one, else the name.

// splitTop splits s at the commas outside strings, comments and brackets, and trims each
// part.
func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			if j := skipString(s, i); j >= 0 {
				i = j
			} else {
				i = len(s)
			}
		case '/':
			if i+1 < len(s) && s[i+1] == '*' {
				if j := strings.Index(s[i+2:], "*/"); j >= 0 {
					i += j + 3
				} else {
					i = len(s)
				}
			}
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if rest := strings.TrimSpace(s[min(start, len(s)):]); rest != "" || len(parts) > 0 {
		parts = append(parts, rest)
	}
	return parts
}

// stripComments removes the /* */ comments of s.
func stripComments(s string) string {
	for {
		i := strings.Index(s, "/*")
		if i < 0 {
			return strings.TrimSpace(s)
		}
		j := strings.Index(s[i+2:], "*/")
		if j < 0 {
			return strings.TrimSpace(s[:i])
		}
		s = s[:i] + s[i+2+j+2:]
	}
}

// argInt reads an integer argument: a number, a constant's name, NULL, or several joined by
// "|". Comments are ignored.
func argInt(s string) (int64, error) {
	s = stripComments(s)
	if s == "" {
		return 0, fmt.Errorf("empty value")
	}
	var v int64
	for part := range strings.SplitSeq(s, "|") {
		part = strings.TrimSpace(part)
		if n, err := parseNumber(part); err == nil {
			v |= n
			continue
		}
		if n, ok := constant(part); ok {
			v |= n
			continue
		}
		return 0, fmt.Errorf("not a number: %q", part)
	}
	return v, nil
}

// argPid reads a pid argument and strace's translation of it into its own namespace, if it
// printed one (0 otherwise).
func argPid(s string) (local, strace int64, err error) {
	local, err = argInt(s)
	if err != nil {
		return 0, 0, err
	}
	if i := strings.Index(s, "/*"); i >= 0 {
		if j := strings.Index(s[i+2:], "*/"); j >= 0 {
			strace, _ = pidNSComment(s[i+2 : i+2+j])
		}
	}
	return local, strace, nil
}

// argStruct reads a struct, {NAME=VALUE, ...}, into its fields by name. NULL is an empty
// struct with ok false, as is a bare address (a struct the call did not fill in).
func argStruct(s string) (fields map[string]string, ok bool) {
	s = strings.TrimSpace(s)
	inner, found := strings.CutPrefix(s, "{")
	if !found {
		return nil, false
	}
	inner, found = strings.CutSuffix(inner, "}")
	if !found {
		return nil, false
	}
	fields = map[string]string{}
	for _, f := range splitTop(inner) {
		if name, value, found := strings.Cut(f, "="); found {
			fields[strings.TrimSpace(name)] = strings.TrimSpace(value)
		}
	}
	return fields, true
}

// argArray reads an array, [A, B, ...], into its elements; ok is false for anything else.
func argArray(s string) (elems []string, ok bool) {
	s = strings.TrimSpace(s)
	inner, found := strings.CutPrefix(s, "[")
	if !found {
		return nil, false
	}
	if inner, found = strings.CutSuffix(inner, "]"); !found {
		return nil, false
	}
	return splitTop(inner), true
}

// named returns the value of a struct field or of a named argument ("flags=0x11"), looked up
// among args.
func named(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// constant returns the value of a constant strace may print by name.
func constant(name string) (int64, bool) {
	if name == "NULL" {
		return 0, true
	}
	if v, ok := constants[name]; ok {
		return v, true
	}
	if sig, ok := SignalNumber(name); ok && strings.HasPrefix(name, "SIG") {
		return int64(sig), true
	}
	return 0, false
}

var constants = map[string]int64{
	"CLONE_VM": unix.CLONE_VM, "CLONE_FS": unix.CLONE_FS, "CLONE_FILES": unix.CLONE_FILES,
	"CLONE_SIGHAND": unix.CLONE_SIGHAND, "CLONE_PIDFD": unix.CLONE_PIDFD,
	"CLONE_PTRACE": unix.CLONE_PTRACE, "CLONE_VFORK": unix.CLONE_VFORK,
	"CLONE_PARENT": unix.CLONE_PARENT, "CLONE_THREAD": unix.CLONE_THREAD,
	"CLONE_NEWNS": unix.CLONE_NEWNS, "CLONE_SYSVSEM": unix.CLONE_SYSVSEM,
	"CLONE_SETTLS": unix.CLONE_SETTLS, "CLONE_PARENT_SETTID": unix.CLONE_PARENT_SETTID,
	"CLONE_CHILD_CLEARTID": unix.CLONE_CHILD_CLEARTID, "CLONE_DETACHED": unix.CLONE_DETACHED,
	"CLONE_UNTRACED": unix.CLONE_UNTRACED, "CLONE_CHILD_SETTID": unix.CLONE_CHILD_SETTID,
	"CLONE_NEWCGROUP": unix.CLONE_NEWCGROUP, "CLONE_NEWUTS": unix.CLONE_NEWUTS,
	"CLONE_NEWIPC": unix.CLONE_NEWIPC, "CLONE_NEWUSER": unix.CLONE_NEWUSER,
	"CLONE_NEWPID": unix.CLONE_NEWPID, "CLONE_NEWNET": unix.CLONE_NEWNET, "CLONE_IO": unix.CLONE_IO,
	"CLONE_CLEAR_SIGHAND": unix.CLONE_CLEAR_SIGHAND, "CLONE_INTO_CGROUP": unix.CLONE_INTO_CGROUP,
	"CLONE_NEWTIME": unix.CLONE_NEWTIME,
	"WNOHANG":       unix.WNOHANG, "WUNTRACED": unix.WUNTRACED, "WSTOPPED": unix.WSTOPPED,
	"WEXITED": unix.WEXITED, "WCONTINUED": unix.WCONTINUED, "WNOWAIT": unix.WNOWAIT,
	"__WNOTHREAD": unix.WNOTHREAD, "__WALL": unix.WALL, "__WCLONE": unix.WCLONE,
	"P_ALL": unix.P_ALL, "P_PID": unix.P_PID, "P_PGID": unix.P_PGID, "P_PIDFD": unix.P_PIDFD,
	"PRIO_PROCESS": unix.PRIO_PROCESS, "PRIO_PGRP": unix.PRIO_PGRP, "PRIO_USER": unix.PRIO_USER,
	"SIG_DFL": abi.SIG_DFL, "SIG_IGN": abi.SIG_IGN,
	"SIG_BLOCK": unix.SIG_BLOCK, "SIG_UNBLOCK": unix.SIG_UNBLOCK, "SIG_SETMASK": unix.SIG_SETMASK,
	"RLIM_INFINITY": -1, "RLIM64_INFINITY": -1,
	"RLIMIT_CPU": unix.RLIMIT_CPU, "RLIMIT_FSIZE": unix.RLIMIT_FSIZE, "RLIMIT_DATA": unix.RLIMIT_DATA,
	"RLIMIT_STACK": unix.RLIMIT_STACK, "RLIMIT_CORE": unix.RLIMIT_CORE, "RLIMIT_RSS": unix.RLIMIT_RSS,
	"RLIMIT_NPROC": unix.RLIMIT_NPROC, "RLIMIT_NOFILE": unix.RLIMIT_NOFILE,
	"RLIMIT_MEMLOCK": unix.RLIMIT_MEMLOCK, "RLIMIT_AS": unix.RLIMIT_AS, "RLIMIT_LOCKS": unix.RLIMIT_LOCKS,
	"RLIMIT_SIGPENDING": unix.RLIMIT_SIGPENDING, "RLIMIT_MSGQUEUE": unix.RLIMIT_MSGQUEUE,
	"RLIMIT_NICE": unix.RLIMIT_NICE, "RLIMIT_RTPRIO": unix.RLIMIT_RTPRIO, "RLIMIT_RTTIME": unix.RLIMIT_RTTIME,
	"IPC_PRIVATE": unix.IPC_PRIVATE, "IPC_CREAT": unix.IPC_CREAT, "IPC_EXCL": unix.IPC_EXCL,
	"IPC_NOWAIT": unix.IPC_NOWAIT, "IPC_RMID": unix.IPC_RMID, "IPC_SET": unix.IPC_SET,
	"IPC_STAT": unix.IPC_STAT, "IPC_INFO": abi.IPC_INFO, "IPC_64": 0x100, "SEM_UNDO": abi.SEM_UNDO,
	"GETPID": abi.GETPID, "GETVAL": abi.GETVAL, "GETALL": abi.GETALL, "GETNCNT": abi.GETNCNT,
	"GETZCNT": abi.GETZCNT, "SETVAL": abi.SETVAL, "SETALL": abi.SETALL, "SEM_STAT": abi.SEM_STAT,
	"SEM_INFO": abi.SEM_INFO, "SEM_STAT_ANY": abi.SEM_STAT_ANY,
	"SA_NOCLDSTOP": abi.SA_NOCLDSTOP, "SA_NOCLDWAIT": abi.SA_NOCLDWAIT, "SA_SIGINFO": abi.SA_SIGINFO,
	"SA_RESTORER": 0x04000000, "SA_ONSTACK": 0x08000000, "SA_RESTART": 0x10000000,
	"SA_NODEFER": 0x40000000, "SA_RESETHAND": 0x80000000,
	"PR_SET_PDEATHSIG": unix.PR_SET_PDEATHSIG, "PR_GET_PDEATHSIG": unix.PR_GET_PDEATHSIG,
	"PR_SET_CHILD_SUBREAPER": unix.PR_SET_CHILD_SUBREAPER, "PR_GET_CHILD_SUBREAPER": unix.PR_GET_CHILD_SUBREAPER,
	"PTRACE_TRACEME": unix.PTRACE_TRACEME, "PTRACE_ATTACH": unix.PTRACE_ATTACH,
	"PTRACE_SEIZE": unix.PTRACE_SEIZE, "PTRACE_DETACH": unix.PTRACE_DETACH, "PTRACE_CONT": unix.PTRACE_CONT,
	"PTRACE_KILL": unix.PTRACE_KILL, "PTRACE_INTERRUPT": unix.PTRACE_INTERRUPT,
	"PTRACE_LISTEN": unix.PTRACE_LISTEN, "PTRACE_SETOPTIONS": unix.PTRACE_SETOPTIONS,
	"PTRACE_GETEVENTMSG": unix.PTRACE_GETEVENTMSG,
	"CLD_EXITED":         abi.CLD_EXITED, "CLD_KILLED": abi.CLD_KILLED, "CLD_DUMPED": abi.CLD_DUMPED,
	"CLD_TRAPPED": abi.CLD_TRAPPED, "CLD_STOPPED": abi.CLD_STOPPED, "CLD_CONTINUED": abi.CLD_CONTINUED,
	"SI_USER": 0, "SI_KERNEL": 0x80, "SI_QUEUE": -1, "SI_TIMER": -2, "SI_TKILL": -6,
	"PTRACE_EVENT_FORK": unix.PTRACE_EVENT_FORK, "PTRACE_EVENT_VFORK": unix.PTRACE_EVENT_VFORK,
	"PTRACE_EVENT_CLONE": unix.PTRACE_EVENT_CLONE, "PTRACE_EVENT_EXEC": unix.PTRACE_EVENT_EXEC,
	"PTRACE_EVENT_VFORK_DONE": unix.PTRACE_EVENT_VFORK_DONE, "PTRACE_EVENT_EXIT": unix.PTRACE_EVENT_EXIT,
	"PTRACE_EVENT_SECCOMP": unix.PTRACE_EVENT_SECCOMP, "PTRACE_EVENT_STOP": unix.PTRACE_EVENT_STOP,
}

// waitStatus is a wait status strace decoded, as the scenario's runners report one.
type waitStatus struct {
	how  string // "exited", "killed", "dumped", "stopped", "continued"
	code int    // exit code, or signal number with any ptrace event in bits 8-15
}

// argWaitStatus reads wait4's status argument, [{WIFEXITED(s) && WEXITSTATUS(s) == 0}]; ok
// is false for NULL or an address, where the call stored nothing strace could show.
func argWaitStatus(s string) (ws waitStatus, ok bool, err error) {
	elems, isArray := argArray(s)
	if !isArray || len(elems) != 1 {
		return ws, false, nil
	}
	e := stripComments(elems[0])
	e = strings.TrimSuffix(strings.TrimPrefix(e, "{"), "}")
	value := func(after string) (int64, error) {
		i := strings.Index(e, after)
		if i < 0 {
			return 0, fmt.Errorf("wait status %q: no %s", e, after)
		}
		word := strings.Fields(e[i+len(after):])
		if len(word) == 0 {
			return 0, fmt.Errorf("wait status %q: nothing after %s", e, after)
		}
		return argInt(word[0])
	}
	switch {
	case strings.HasPrefix(e, "WIFEXITED(s)"):
		v, err := value("WEXITSTATUS(s) ==")
		return waitStatus{"exited", int(v)}, true, err
	case strings.HasPrefix(e, "WIFSIGNALED(s)"):
		v, err := value("WTERMSIG(s) ==")
		how := "killed"
		if strings.Contains(e, "WCOREDUMP(s)") {
			how = "dumped"
		}
		return waitStatus{how, int(v)}, true, err
	case strings.HasPrefix(e, "WIFSTOPPED(s)"):
		v, err := value("WSTOPSIG(s) ==")
		if err != nil {
			return ws, false, err
		}
		code := int(v)
		if i := strings.Index(e, "PTRACE_EVENT_"); i >= 0 {
			name := strings.Fields(e[i:])[0]
			ev, found := constant(name)
			if !found {
				return ws, false, fmt.Errorf("wait status %q: unknown event %s", e, name)
			}
			code |= int(ev) << 8
		}
		return waitStatus{"stopped", code}, true, nil
	case strings.HasPrefix(e, "WIFCONTINUED(s)"):
		return waitStatus{"continued", 0}, true, nil
	}
	return ws, false, fmt.Errorf("unknown wait status %q", e)
}

func (ws waitStatus) String() string {
	switch ws.how {
	case "exited":
		return "exited " + strconv.Itoa(ws.code)
	case "continued":
		return "continued"
	}
	s := ws.how + " " + signalName(ws.code&0xff)
	if ev := ws.code >> 8; ev != 0 {
		s += "|" + eventName(ev) + "<<8"
	}
	return s
}

func eventName(ev int) string {
	for name, v := range constants {
		if strings.HasPrefix(name, "PTRACE_EVENT_") && int(v) == ev {
			return name
		}
	}
	return strconv.Itoa(ev)
}
