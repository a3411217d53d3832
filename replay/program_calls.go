package replay

import (
	"fmt"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/internal/abi"
	"tasklist/ipc/sem"
	"tasklist/kernel"
	"tasklist/scenario"
)

// The calls of a Program, made on a pass's tasks. The scenario runner on the model
// (modelrun) resolves names through a backend that settles the whole model between calls; a
// pass runs beside other passes on one model, and its calls repeat thousands of times, so it
// makes them itself, from arguments converted once.

// preparedCall is a call of a Program with its arguments made ready when the trace is
// compiled: a task argument's Task is a slot; semaphore operations, signal sets and timeouts
// are as the model takes them.
type preparedCall struct {
	name    string
	args    []scenario.Value
	sops    []sem.Sembuf
	sigset  kernel.SigSet
	timeout time.Duration
	ts      unix.Timespec
	setTID  []int32
	limit   *kernel.RLimit
	// creates is the slot of the task a clone makes, -1 for none.
	creates int32
	do      func(x caller, pc *preparedCall) outcome
}

// prepare makes c ready to be made.
func prepare(c scenario.Call) (*preparedCall, error) {
	do, ok := makers[c.Name]
	if !ok {
		return nil, fmt.Errorf("%s: a call a workload does not make", c.Name)
	}
	pc := &preparedCall{name: c.Name, args: c.Args, creates: -1, do: do}
	sigset := func(v scenario.Value) kernel.SigSet {
		var set kernel.SigSet
		for _, sig := range v.List {
			set |= kernel.SigSetOf(int(sig))
		}
		return set
	}
	switch c.Name {
	case "semop":
		pc.sops = sembufs(c.Args[1])
	case "semtimedop":
		ms := c.Args[1].Int
		pc.ts = unix.Timespec{Sec: ms / 1000, Nsec: ms % 1000 * 1e6}
		pc.sops = sembufs(c.Args[2])
	case "sigprocmask":
		pc.sigset = sigset(c.Args[1])
	case "sigsuspend":
		pc.sigset = sigset(c.Args[0])
	case "sigtimedwait":
		pc.sigset = sigset(c.Args[0])
		pc.timeout = -1 // no limit, as a NULL timespec
		if d, timed := scenario.SemTimeout(c.Args[1].Int); timed {
			pc.timeout = d
		}
	case "clone3":
		for _, v := range c.Args[2:] {
			pc.setTID = append(pc.setTID, int32(v.Int)) // pid_t
		}
	case "prlimit":
		if len(c.Args) == 4 {
			pc.limit = &kernel.RLimit{Cur: uint64(c.Args[2].Int), Max: uint64(c.Args[3].Int)}
		}
	}
	return pc, nil
}

func sembufs(v scenario.Value) []sem.Sembuf {
	ops := make([]sem.Sembuf, len(v.Sembufs))
	for i, s := range v.Sembufs {
		ops[i] = sem.Sembuf{Num: uint16(s.Num), Op: int16(s.Op), Flg: int16(s.Flags)}
	}
	return ops
}

// word is argument i whole, as a long holds it; bits as an int of option bits; cint as a C
// int parameter.
func (pc *preparedCall) word(i int) int64 { return pc.args[i].Int }
func (pc *preparedCall) bits(i int) int   { return int(uint32(pc.args[i].Int)) }
func (pc *preparedCall) cint(i int) int   { return int(int32(pc.args[i].Int)) }

// caller is a call being made in a pass: the task making it.
type caller struct {
	run *Runner
	t   *kernel.Task
}

// pid is argument i as an int or pid_t parameter holds it: a task as the caller sees it
// (0 where it does not), negated for its group, or the number's low 32 bits.
func (x caller) pid(pc *preparedCall, i int) int {
	v := pc.args[i]
	if v.Kind != scenario.ValueTask {
		return pc.cint(i)
	}
	nr := 0
	if u := x.run.taskOf(int32(v.Task)); u != nil {
		nr = u.PIDIn(x.t.Namespace())
	}
	if v.Neg {
		return -nr
	}
	return nr
}

// fd is argument i, a pidfd, as the number it is open at in the caller's table, or a number
// open nowhere when the pass has not opened it or the caller's table does not hold it
// (EBADF). Any other argument is a pid.
func (x caller) fd(pc *preparedCall, i int) int {
	v := pc.args[i]
	if v.Kind != scenario.ValueFile {
		return x.pid(pc, i)
	}
	if f := x.run.files[v.File]; f != nil {
		if fd, ok := x.t.FDOf(f); ok {
			return fd
		}
	}
	return kernel.NoFD
}

// set is a semaphore argument: the id of a set the pass made, or the number.
func (x caller) set(pc *preparedCall, i int) int {
	if v := pc.args[i]; v.Kind == scenario.ValueSet {
		return x.run.sets[v.Set]
	}
	return pc.cint(i)
}

// clone makes clone, clone3, fork or vfork with args, clone3 for clone3. The child is bound
// to its slot as soon as it is made, so that it can make calls, and be named, while its vfork
// parent waits; the result carries the pidfd CLONE_PIDFD opened.
func (x caller) clone(pc *preparedCall, args kernel.CloneArgs, clone3 bool) outcome {
	var pidfd int // clone(2) writes it to parent_tid
	args.Pidfd = &pidfd
	if pc.creates >= 0 {
		args.Created = func(child *kernel.Task) { x.run.bind(pc.creates, child) }
	}
	clone := x.t.Clone
	if clone3 {
		clone = x.t.Clone3
	}
	child, err := clone(args)
	if err != nil {
		return errOutcome(err)
	}
	out := outcome{kind: scenario.ResultNewTask, task: child}
	if args.Flags&unix.CLONE_PIDFD != 0 {
		out.file = x.t.Pidfd(pidfd)
	}
	return out
}

// outcome is what a call returned in a pass.
type outcome struct {
	kind  scenario.ResultKind
	errno syscall.Errno
	// n is an Int, a pid, a signal set, a signal or a semaphore id.
	n    int64
	task *kernel.Task // a clone's new task
	// file is the pidfd pidfd_open or a clone with CLONE_PIDFD opened.
	file  *kernel.Pidfd
	limit kernel.RLimit
	how   scenario.WaitHow
	code  int
	list  []int64
}

func errOutcome(err error) outcome { return outcome{kind: scenario.ResultErrno, errno: errnoOf(err)} }

func intOutcome(n int64, err error) outcome {
	if err != nil {
		return errOutcome(err)
	}
	return outcome{kind: scenario.ResultInt, n: n}
}

func zeroOutcome(err error) outcome { return intOutcome(0, err) }

func pidOutcome(nr int, err error) outcome {
	if err != nil {
		return errOutcome(err)
	}
	return outcome{kind: scenario.ResultPid, n: int64(nr)}
}

func sigsetOutcome(set kernel.SigSet, err error) outcome {
	if err != nil {
		return errOutcome(err)
	}
	return outcome{kind: scenario.ResultSigset, n: int64(set)}
}

func limitOutcome(lim kernel.RLimit, err error) outcome {
	if err != nil {
		return errOutcome(err)
	}
	return outcome{kind: scenario.ResultLimit, limit: lim}
}

func doneOutcome(err error) outcome {
	if err != nil {
		return errOutcome(err)
	}
	return outcome{kind: scenario.ResultDone}
}

// waitHows maps a wait's si_code to what the scenario language prints.
var waitHows = map[int]scenario.WaitHow{kernel.CLDExited: scenario.Exited, kernel.CLDKilled: scenario.Killed,
	kernel.CLDDumped: scenario.Dumped, kernel.CLDStopped: scenario.Stopped, kernel.CLDTrapped: scenario.Trapped,
	kernel.CLDContinued: scenario.Continued}

func waitOutcome(r kernel.WaitResult, err error) outcome {
	if err != nil || r.Pid == 0 {
		return intOutcome(0, err)
	}
	how := waitHows[r.Code]
	code := int(r.Status>>8) & 0xffff // a stop's signal and ptrace event
	switch how {
	case scenario.Exited:
		code = r.Status.ExitStatus()
	case scenario.Killed, scenario.Dumped:
		code = int(r.Status.Signal())
	case scenario.Continued:
		code = 0
	}
	return outcome{kind: scenario.ResultWait, n: int64(r.Pid), how: how, code: code}
}

// makers make each call a Program holds, by the scenario language's name, as its arguments
// reach the kernel.
var makers = map[string]func(x caller, pc *preparedCall) outcome{
	"clone": func(x caller, pc *preparedCall) outcome {
		flags, sig, clone3 := scenario.CloneCall(pc.args)
		if !clone3 {
			sig &= 0xff
		}
		return x.clone(pc, kernel.CloneArgs{Flags: flags, ExitSignal: int(sig)}, clone3)
	},
	"clone3": func(x caller, pc *preparedCall) outcome {
		return x.clone(pc, kernel.CloneArgs{Flags: uint64(pc.word(0)), ExitSignal: int(pc.word(1)), SetTID: pc.setTID}, true)
	},
	"fork": func(x caller, pc *preparedCall) outcome {
		return x.clone(pc, kernel.CloneArgs{ExitSignal: int(unix.SIGCHLD)}, false)
	},
	"vfork": func(x caller, pc *preparedCall) outcome {
		return x.clone(pc, kernel.CloneArgs{Flags: unix.CLONE_VFORK | unix.CLONE_VM, ExitSignal: int(unix.SIGCHLD)}, false)
	},
	"pidfd_open": func(x caller, pc *preparedCall) outcome {
		fd, err := x.t.PidfdOpen(x.pid(pc, 0), pc.bits(1))
		if err != nil {
			return errOutcome(err)
		}
		return outcome{kind: scenario.ResultNewFile, file: x.t.Pidfd(fd)}
	},
	"pidfd_send_signal": func(x caller, pc *preparedCall) outcome {
		return zeroOutcome(x.t.PidfdSendSignal(x.fd(pc, 0), x.pid(pc, 1), pc.bits(2)))
	},
	"poll": func(x caller, pc *preparedCall) outcome {
		readable, err := x.t.Poll(x.fd(pc, 0))
		if readable {
			return intOutcome(1, err)
		}
		return intOutcome(0, err)
	},
	"close": func(x caller, pc *preparedCall) outcome { return zeroOutcome(x.t.Close(x.fd(pc, 0))) },
	"getrlimit": func(x caller, pc *preparedCall) outcome {
		return limitOutcome(x.t.Getrlimit(int(uint32(pc.word(0)))))
	},
	"prlimit": func(x caller, pc *preparedCall) outcome {
		return limitOutcome(x.t.Prlimit(x.pid(pc, 0), int(uint32(pc.word(1))), pc.limit))
	},
	"execve":     func(x caller, _ *preparedCall) outcome { return zeroOutcome(x.t.Execve()) },
	"exit":       func(x caller, pc *preparedCall) outcome { return doneOutcome(x.t.Exit(pc.cint(0))) },
	"exit_group": func(x caller, pc *preparedCall) outcome { return doneOutcome(x.t.ExitGroup(pc.cint(0))) },
	"getpgid":    func(x caller, pc *preparedCall) outcome { return pidOutcome(x.t.Getpgid(x.pid(pc, 0))) },
	"getsid":     func(x caller, pc *preparedCall) outcome { return pidOutcome(x.t.Getsid(x.pid(pc, 0))) },
	"getpgrp":    func(x caller, _ *preparedCall) outcome { return pidOutcome(x.t.Getpgrp(), nil) },
	"getpid":     func(x caller, _ *preparedCall) outcome { return pidOutcome(x.t.Getpid(), nil) },
	"getppid":    func(x caller, _ *preparedCall) outcome { return pidOutcome(x.t.Getppid(), nil) },
	"gettid":     func(x caller, _ *preparedCall) outcome { return pidOutcome(x.t.Gettid(), nil) },
	"setsid":     func(x caller, _ *preparedCall) outcome { return pidOutcome(x.t.Setsid()) },
	"getpriority": func(x caller, pc *preparedCall) outcome {
		prio, err := x.t.Getpriority(x.pid(pc, 0), x.pid(pc, 1))
		return intOutcome(int64(20-prio), err)
	},
	"setpriority": func(x caller, pc *preparedCall) outcome {
		return zeroOutcome(x.t.Setpriority(x.pid(pc, 0), x.pid(pc, 1), x.pid(pc, 2)))
	},
	"kill": func(x caller, pc *preparedCall) outcome { return zeroOutcome(x.t.Kill(x.pid(pc, 0), x.pid(pc, 1))) },
	"tkill": func(x caller, pc *preparedCall) outcome {
		return zeroOutcome(x.t.Tkill(x.pid(pc, 0), x.pid(pc, 1)))
	},
	"tgkill": func(x caller, pc *preparedCall) outcome {
		return zeroOutcome(x.t.Tgkill(x.pid(pc, 0), x.pid(pc, 1), x.pid(pc, 2)))
	},
	"setpgid": func(x caller, pc *preparedCall) outcome { return zeroOutcome(x.t.Setpgid(x.pid(pc, 0), x.pid(pc, 1))) },
	"setuid":  func(x caller, pc *preparedCall) outcome { return zeroOutcome(x.t.Setuid(pc.cint(0))) },
	"setgid":  func(x caller, pc *preparedCall) outcome { return zeroOutcome(x.t.Setgid(pc.cint(0))) },
	"setresuid": func(x caller, pc *preparedCall) outcome {
		return zeroOutcome(x.t.Setresuid(pc.cint(0), pc.cint(1), pc.cint(2)))
	},
	"setresgid": func(x caller, pc *preparedCall) outcome {
		return zeroOutcome(x.t.Setresgid(pc.cint(0), pc.cint(1), pc.cint(2)))
	},
	"setrlimit": func(x caller, pc *preparedCall) outcome {
		res := int(uint32(pc.word(0)))
		lim, err := x.t.Getrlimit(res)
		if err != nil {
			return errOutcome(err)
		}
		lim.Cur = uint64(pc.word(1))
		if len(pc.args) > 2 {
			lim.Max = uint64(pc.word(2))
		}
		return zeroOutcome(x.t.Setrlimit(res, lim))
	},
	"prctl": prctlCall,
	"ptrace": func(x caller, pc *preparedCall) outcome {
		var target int
		var addr, data uint64
		if len(pc.args) > 1 {
			target = x.pid(pc, 1)
		}
		if len(pc.args) > 3 {
			addr, data = uint64(pc.word(2)), uint64(pc.word(3))
		}
		return zeroOutcome(x.t.Ptrace(int(pc.word(0)), target, addr, data))
	},
	"unshare": func(x caller, pc *preparedCall) outcome { return zeroOutcome(x.t.Unshare(uint64(pc.word(0)))) },
	"sigaction": func(x caller, pc *preparedCall) outcome {
		_, err := x.t.Sigaction(pc.cint(0), kernel.SigAction{Handler: int(pc.word(1)), Flags: uint64(pc.word(2))})
		return zeroOutcome(err)
	},
	"sigprocmask": func(x caller, pc *preparedCall) outcome {
		set := pc.sigset
		return sigsetOutcome(x.t.Sigprocmask(pc.cint(0), &set))
	},
	"sigpending": func(x caller, _ *preparedCall) outcome { return sigsetOutcome(x.t.Sigpending()) },
	"sigsuspend": func(x caller, pc *preparedCall) outcome { return zeroOutcome(x.t.Sigsuspend(nil, pc.sigset)) },
	"sigtimedwait": func(x caller, pc *preparedCall) outcome {
		sig, err := x.t.Sigtimedwait(nil, pc.sigset, pc.timeout)
		if err != nil {
			return errOutcome(err)
		}
		return outcome{kind: scenario.ResultSignal, n: int64(sig)}
	},
	"wait4": func(x caller, pc *preparedCall) outcome {
		r, err := x.t.Wait4(nil, x.pid(pc, 0), pc.bits(1))
		if r.Code == kernel.CLDTrapped {
			r.Code = kernel.CLDStopped // wait4's status cannot tell them apart
		}
		return waitOutcome(r, err)
	},
	"waitid": func(x caller, pc *preparedCall) outcome {
		return waitOutcome(x.t.Waitid(nil, pc.cint(0), x.fd(pc, 1), pc.bits(2)))
	},
	"semget": func(x caller, pc *preparedCall) outcome {
		id, err := x.t.Semget(int32(pc.word(0)), pc.cint(1), pc.cint(2))
		if err != nil {
			return errOutcome(err)
		}
		return outcome{kind: scenario.ResultNewSet, n: int64(id)}
	},
	"semop": func(x caller, pc *preparedCall) outcome { return zeroOutcome(x.t.Semop(nil, x.set(pc, 0), pc.sops)) },
	"semtimedop": func(x caller, pc *preparedCall) outcome {
		return zeroOutcome(x.t.Semtimedop(nil, x.set(pc, 0), pc.sops, &pc.ts))
	},
	"semctl": semctlCall,
}

// prctlCall has the options of the process model: the subreaper and the parent-death signal.
func prctlCall(x caller, pc *preparedCall) outcome {
	switch option := int32(pc.word(0)); {
	case option == unix.PR_SET_CHILD_SUBREAPER && len(pc.args) == 2:
		return zeroOutcome(x.t.PrctlSetChildSubreaper(pc.word(1) != 0))
	case option == unix.PR_SET_PDEATHSIG && len(pc.args) == 2:
		return zeroOutcome(x.t.PrctlSetPdeathsig(int(pc.word(1))))
	case option == unix.PR_GET_CHILD_SUBREAPER:
		if x.t.PrctlGetChildSubreaper() {
			return intOutcome(1, nil)
		}
		return intOutcome(0, nil)
	case option == unix.PR_GET_PDEATHSIG:
		return intOutcome(int64(x.t.PrctlGetPdeathsig()), nil)
	}
	return errOutcome(unix.EINVAL)
}

// semctlCall makes semctl as the scenario runners do: GETALL learns the set's size from
// IPC_STAT first, IPC_SET changes the mode IPC_STAT read.
func semctlCall(x caller, pc *preparedCall) outcome {
	id, num, cmd := x.set(pc, 0), pc.cint(1), pc.cint(2)
	var ds sem.SemidDS
	switch cmd {
	case unix.IPC_STAT:
		return intOutcome(intErr(x.t.Semctl(id, num, cmd, sem.Semun{Buf: &ds})))
	case unix.IPC_SET, abi.GETALL:
		if _, err := x.t.Semctl(id, 0, unix.IPC_STAT, sem.Semun{Buf: &ds}); err != nil {
			return errOutcome(err)
		}
	}
	switch cmd {
	case unix.IPC_SET:
		if len(pc.args) > 3 {
			ds.Perm.Mode = uint16(pc.word(3))
		}
		return intOutcome(intErr(x.t.Semctl(id, num, cmd, sem.Semun{Buf: &ds})))
	case abi.GETALL:
		vals := make([]uint16, ds.Nsems)
		if _, err := x.t.Semctl(id, num, cmd, sem.Semun{Array: vals}); err != nil {
			return errOutcome(err)
		}
		out := outcome{kind: scenario.ResultList, list: make([]int64, len(vals))}
		for i, v := range vals {
			out.list[i] = int64(v)
		}
		return out
	case abi.SETALL:
		vals := make([]uint16, len(pc.args[3].List))
		for i, v := range pc.args[3].List {
			vals[i] = uint16(v)
		}
		return intOutcome(intErr(x.t.Semctl(id, num, cmd, sem.Semun{Array: vals})))
	case abi.GETPID:
		return pidOutcome(x.t.Semctl(id, num, cmd, sem.Semun{}))
	}
	val := 0
	if len(pc.args) > 3 {
		val = pc.cint(3)
	}
	return intOutcome(intErr(x.t.Semctl(id, num, cmd, sem.Semun{Val: val})))
}

func intErr(n int, err error) (int64, error) { return int64(n), err }

// unchanged reports whether pc, having returned got, changed nothing, so that it may be made
// again: a read, a wait that reaped nothing, a kill that failed or sent no signal.
func (pc *preparedCall) unchanged(got outcome) bool {
	switch pc.name {
	case "getpid", "gettid", "getppid", "getpgrp", "getpgid", "getsid", "getpriority", "sigpending", "poll", "getrlimit":
		return true
	case "prlimit":
		return pc.limit == nil || got.kind == scenario.ResultErrno
	case "wait4":
		return pc.bits(1)&unix.WNOHANG != 0 && got.kind != scenario.ResultWait
	case "waitid":
		return pc.bits(2)&unix.WNOHANG != 0 && (got.kind != scenario.ResultWait || pc.bits(2)&unix.WNOWAIT != 0)
	case "kill", "tkill", "tgkill":
		return got.kind == scenario.ResultErrno || pc.args[len(pc.args)-1].Int == 0
	case "pidfd_send_signal":
		return got.kind == scenario.ResultErrno || pc.args[1].Int == 0
	case "semctl":
		return slices.Contains([]int{abi.GETVAL, abi.GETALL, abi.GETNCNT, abi.GETZCNT, abi.GETPID, unix.IPC_STAT}, pc.cint(2))
	}
	return false
}

// query is a read of the caller's state in place of a call the scenario language lacks: its
// ids, a signal's action, its signal mask, a resource limit, a prctl option.
type query struct {
	kind queryKind
	arg  int
}

type queryKind uint8

const (
	queryIDs queryKind = iota
	querySigaction
	queryMask
	queryLimit
	queryPdeathsig
	querySubreaper
)

// readValue is what a query read.
type readValue struct {
	v     [6]uint64
	errno syscall.Errno
}

// queryOf returns the read that answers c.
func queryOf(c *traceCall) (query, bool) {
	argAt := func(i int) (int, bool) {
		v, err := argInt(arg(c, i))
		return int(v), err == nil
	}
	switch c.name {
	case "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid":
		return query{kind: queryIDs}, true
	case "rt_sigaction":
		sig, ok := argAt(0)
		return query{kind: querySigaction, arg: sig}, ok
	case "rt_sigprocmask":
		return query{kind: queryMask}, true
	case "getrlimit", "setrlimit":
		res, ok := argAt(0)
		return query{kind: queryLimit, arg: res}, ok
	case "prlimit64":
		res, ok := argAt(1)
		return query{kind: queryLimit, arg: res}, ok
	case "prctl":
		switch option, _ := argAt(0); option {
		case unix.PR_GET_PDEATHSIG:
			return query{kind: queryPdeathsig}, true
		case unix.PR_GET_CHILD_SUBREAPER:
			return query{kind: querySubreaper}, true
		}
	}
	return query{}, false
}

// read makes the query on t.
func (q query) read(t *kernel.Task) readValue {
	var r readValue
	switch q.kind {
	case queryIDs:
		c := t.Creds()
		r.v = [6]uint64{uint64(c.UID), uint64(c.EUID), uint64(c.SUID), uint64(c.GID), uint64(c.EGID), uint64(c.SGID)}
	case querySigaction:
		a, err := t.SigactionOf(q.arg)
		r.v[0], r.v[1], r.errno = uint64(a.Handler), a.Flags, errnoIf(err)
	case queryMask:
		m, err := t.Sigprocmask(0, nil)
		r.v[0], r.errno = uint64(m), errnoIf(err)
	case queryLimit:
		l, err := t.Getrlimit(q.arg)
		r.v[0], r.v[1], r.errno = l.Cur, l.Max, errnoIf(err)
	case queryPdeathsig:
		r.v[0] = uint64(t.PrctlGetPdeathsig())
	case querySubreaper:
		if t.PrctlGetChildSubreaper() {
			r.v[0] = 1
		}
	}
	return r
}

func errnoIf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	return errnoOf(err)
}
