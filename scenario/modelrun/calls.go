package modelrun

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/kernel"
	"tasklist/scenario"
)

// call is one call being made on the model: the task making it, the name that task goes by,
// the call with its arguments, and its record, which a call that creates a task fills in.
type call struct {
	b     *Backend
	bg    *background
	t     *kernel.Task
	actor scenario.TaskRef
	c     scenario.Call
}

// arg is argument i as an int or pid_t parameter (a uid_t or gid_t too: the same 32 bits)
// holds it: the low 32 bits of the 64-bit register, sign-extended, as the kernel's system call
// entry casts it, so kill(4294967297, 0) is kill(1, 0). A task name is its pid as the caller
// sees it.
func (m call) arg(i int) int { return int(int32(m.c.Args[i].Pid(m.b, m.actor))) }

// bits is argument i as an int of option bits: the same 32 bits, as the model's option masks
// hold them (__WCLONE is bit 31).
func (m call) bits(i int) int { return int(uint32(m.c.Args[i].Int)) }

// word is argument i whole, as a long or a pointer parameter holds it.
func (m call) word(i int) int64 { return m.c.Args[i].Int }

// sigset is argument i, a list of signals, as a sigset_t.
func (m call) sigset(i int) kernel.SigSet {
	var set kernel.SigSet
	for _, sig := range m.c.Args[i].List {
		set |= kernel.SigSetOf(int(sig))
	}
	return set
}

// fd is argument i, a pidfd, as the number it is open at in the caller's table, or a number
// open nowhere when the caller's table does not hold it (EBADF). Any other argument is an int.
func (m call) fd(i int) int {
	v := m.c.Args[i]
	if v.Kind != scenario.ValueFile {
		return m.arg(i)
	}
	m.b.mu.Lock() // for files
	f := m.b.files[v.File]
	m.b.mu.Unlock()
	if fd, ok := m.t.FDOf(f); ok {
		return fd
	}
	return kernel.NoFD
}

// opened names the pidfd open at fd in the caller's table.
func (m call) opened(fd int) scenario.FileRef {
	m.b.mu.Lock() // for files
	defer m.b.mu.Unlock()
	m.b.files = append(m.b.files, m.t.Pidfd(fd))
	return scenario.FileRef(len(m.b.files) - 1)
}

// clone makes clone, clone3 or vfork with args: clone3 for clone3, clone(2) otherwise. The
// result carries the pidfd CLONE_PIDFD opened. A set_tid entry for a namespace above the
// scenario's init is refused (scenario.SetTIDBeyondInit).
func (m call) clone(args kernel.CloneArgs, clone3 bool) scenario.Result {
	if n := len(args.SetTID); n > 0 {
		levels := m.t.ChildNamespace().Level() - m.b.task(scenario.Init).Namespace().Level() + 1
		if args.Flags&unix.CLONE_NEWPID != 0 {
			levels++
		}
		if n > levels {
			return scenario.Result{Kind: scenario.ResultFatal, Err: scenario.SetTIDBeyondInit(n, levels)}
		}
	}
	var pidfd int // clone(2) writes it to parent_tid
	args.Pidfd = &pidfd
	res := m.b.created(m.bg, m.t, func(made func(*kernel.Task)) (*kernel.Task, error) {
		args.Created = made
		if clone3 {
			return m.t.Clone3(args)
		}
		return m.t.Clone(args)
	})
	if res.Kind == scenario.ResultNewTask && args.Flags&unix.CLONE_PIDFD != 0 {
		res.NewFile, res.HasFile = m.opened(pidfd), true
	}
	return res
}

// limit is a resource limit read or replaced.
func limit(lim kernel.RLimit, err error) scenario.Result {
	if err != nil {
		return errno(err)
	}
	return scenario.Result{Kind: scenario.ResultLimit, Soft: lim.Cur, Hard: lim.Max}
}

// handlers makes each call of the language on the model, keyed by the call table
// (scenario.Calls); TestHandlersCoverTheCallTable holds the two to each other.
var handlers = map[string]func(m call) scenario.Result{
	"clone": func(m call) scenario.Result {
		flags, sig, clone3 := scenario.CloneCall(m.c.Args)
		if !clone3 {
			sig &= 0xff
		}
		return m.clone(kernel.CloneArgs{Flags: flags, ExitSignal: int(sig)}, clone3)
	},
	"clone3": func(m call) scenario.Result {
		args := kernel.CloneArgs{Flags: uint64(m.word(0)), ExitSignal: int(m.word(1))}
		for i := 2; i < len(m.c.Args); i++ {
			args.SetTID = append(args.SetTID, int32(m.word(i))) // pid_t
		}
		return m.clone(args, true)
	},
	"close":      func(m call) scenario.Result { return zero(m.t.Close(m.fd(0))) },
	"execve":     func(m call) scenario.Result { return m.b.execve(m.t, m.actor) },
	"exit":       func(m call) scenario.Result { return done(m.t.Exit(m.arg(0))) },
	"exit_group": func(m call) scenario.Result { return done(m.t.ExitGroup(m.arg(0))) },
	"fork": func(m call) scenario.Result {
		return m.clone(kernel.CloneArgs{ExitSignal: int(unix.SIGCHLD)}, false)
	},
	"getpgid": func(m call) scenario.Result { return pid(m.t.Getpgid(m.arg(0))) },
	"getpgrp": func(m call) scenario.Result { return pid(m.t.Getpgrp(), nil) },
	"getpid":  func(m call) scenario.Result { return pid(m.t.Getpid(), nil) },
	"getppid": func(m call) scenario.Result { return pid(m.t.Getppid(), nil) },
	"getpriority": func(m call) scenario.Result {
		prio, err := m.t.Getpriority(m.arg(0), m.arg(1))
		if err != nil {
			return errno(err)
		}
		return scenario.Result{Kind: scenario.ResultInt, Int: int64(20 - prio)}
	},
	"getrlimit": func(m call) scenario.Result { return limit(m.t.Getrlimit(int(uint32(m.word(0))))) },
	"getsid":    func(m call) scenario.Result { return pid(m.t.Getsid(m.arg(0))) },
	"gettid":    func(m call) scenario.Result { return pid(m.t.Gettid(), nil) },
	"kill":      func(m call) scenario.Result { return zero(m.t.Kill(m.arg(0), m.arg(1))) },
	"pidfd_open": func(m call) scenario.Result {
		fd, err := m.t.PidfdOpen(m.arg(0), m.bits(1))
		if err != nil {
			return errno(err)
		}
		return scenario.Result{Kind: scenario.ResultNewFile, NewFile: m.opened(fd)}
	},
	"pidfd_send_signal": func(m call) scenario.Result {
		return zero(m.t.PidfdSendSignal(m.fd(0), m.arg(1), m.bits(2)))
	},
	"poll": func(m call) scenario.Result {
		readable, err := m.t.Poll(m.fd(0))
		if err != nil {
			return errno(err)
		}
		if readable {
			return scenario.Result{Kind: scenario.ResultInt, Int: 1}
		}
		return scenario.Result{Kind: scenario.ResultInt}
	},
	"prctl": func(m call) scenario.Result { return prctl(m.t, m.c.Args) },
	"prlimit": func(m call) scenario.Result {
		var lim *kernel.RLimit
		if len(m.c.Args) == 4 {
			lim = &kernel.RLimit{Cur: uint64(m.word(2)), Max: uint64(m.word(3))}
		}
		return limit(m.t.Prlimit(m.arg(0), int(uint32(m.word(1))), lim))
	},
	"ptrace": func(m call) scenario.Result {
		var target int
		var addr, data uint64
		if len(m.c.Args) > 1 {
			target = m.arg(1)
		}
		if len(m.c.Args) > 3 {
			addr, data = uint64(m.word(2)), uint64(m.word(3))
		}
		// The request is a long; the pid, a long too, is looked up as a pid_t.
		return zero(m.t.Ptrace(int(m.word(0)), target, addr, data))
	},
	"semctl":     func(m call) scenario.Result { return m.b.semctl(m.t, m.c.Args) },
	"semget":     func(m call) scenario.Result { return m.b.semget(m.t, m.c.Args) },
	"semop":      func(m call) scenario.Result { return m.b.semop(m.t, m.c.Args) },
	"semtimedop": func(m call) scenario.Result { return m.b.semtimedop(m.t, m.c.Args) },
	"setgid":     func(m call) scenario.Result { return zero(m.t.Setgid(m.arg(0))) },
	"setpgid":    func(m call) scenario.Result { return zero(m.t.Setpgid(m.arg(0), m.arg(1))) },
	"setpriority": func(m call) scenario.Result {
		return zero(m.t.Setpriority(m.arg(0), m.arg(1), m.arg(2)))
	},
	"setresgid": func(m call) scenario.Result { return zero(m.t.Setresgid(m.arg(0), m.arg(1), m.arg(2))) },
	"setresuid": func(m call) scenario.Result { return zero(m.t.Setresuid(m.arg(0), m.arg(1), m.arg(2))) },
	"setrlimit": func(m call) scenario.Result { return zero(setrlimit(m.t, m.c.Args)) },
	"setsid":    func(m call) scenario.Result { return pid(m.t.Setsid()) },
	"setuid":    func(m call) scenario.Result { return zero(m.t.Setuid(m.arg(0))) },
	"sigaction": func(m call) scenario.Result {
		_, err := m.t.Sigaction(m.arg(0), kernel.SigAction{Handler: int(m.word(1)), Flags: uint64(m.word(2))})
		return zero(err)
	},
	"signal": func(m call) scenario.Result {
		// The handler is a pointer, all 64 bits of it.
		_, err := m.t.Sigaction(m.arg(0), kernel.SigAction{Handler: int(m.word(1))})
		return zero(err)
	},
	"sigpending": func(m call) scenario.Result { return sigset(m.t.Sigpending()) },
	"sigprocmask": func(m call) scenario.Result {
		set := m.sigset(1)
		return sigset(m.t.Sigprocmask(m.arg(0), &set))
	},
	"sigsuspend": func(m call) scenario.Result { return zero(m.t.Sigsuspend(m.b.ctx, m.sigset(0))) },
	"sigtimedwait": func(m call) scenario.Result {
		// A negative timeout is the NULL timespec: no limit.
		timeout := time.Duration(-1)
		if d, timed := scenario.SemTimeout(m.word(1)); timed {
			timeout = d
		}
		sig, err := m.t.Sigtimedwait(m.b.ctx, m.sigset(0), timeout)
		if err != nil {
			return errno(err)
		}
		return scenario.Result{Kind: scenario.ResultSignal, Int: int64(sig)}
	},
	"tgkill":  func(m call) scenario.Result { return zero(m.t.Tgkill(m.arg(0), m.arg(1), m.arg(2))) },
	"tkill":   func(m call) scenario.Result { return zero(m.t.Tkill(m.arg(0), m.arg(1))) },
	"unshare": func(m call) scenario.Result { return zero(m.t.Unshare(uint64(m.word(0)))) },
	"vfork": func(m call) scenario.Result {
		return m.clone(kernel.CloneArgs{Flags: unix.CLONE_VFORK | unix.CLONE_VM, ExitSignal: int(unix.SIGCHLD)}, false)
	},
	"wait4": func(m call) scenario.Result {
		r, err := m.t.Wait4(m.b.ctx, m.arg(0), m.bits(1))
		if r.Code == kernel.CLDTrapped {
			r.Code = kernel.CLDStopped // wait4's status cannot tell them apart
		}
		return waited(r, err)
	},
	"waitid": func(m call) scenario.Result {
		r, err := m.t.Waitid(m.b.ctx, m.arg(0), m.fd(1), m.bits(2))
		return waited(r, err)
	},
}

// dispatch makes one call on the model.
func (b *Backend) dispatch(bg *background, t *kernel.Task, actor scenario.TaskRef, c scenario.Call) scenario.Result {
	h, ok := handlers[c.Name]
	if !ok {
		return errno(unix.ENOSYS)
	}
	return h(call{b: b, bg: bg, t: t, actor: actor, c: c})
}

// setrlimit is prlimit64 on the caller, whose resource is an unsigned int.
func setrlimit(t *kernel.Task, args []scenario.Value) error {
	res := int(uint32(args[0].Int))
	lim, err := t.Getrlimit(res)
	if err != nil {
		return err
	}
	lim.Cur = uint64(args[1].Int)
	if len(args) > 2 {
		lim.Max = uint64(args[2].Int)
	}
	return t.Setrlimit(res, lim)
}

// prctl's option is an int; its argument an unsigned long, all of which counts.
func prctl(t *kernel.Task, args []scenario.Value) scenario.Result {
	switch option := int32(args[0].Int); {
	case option == unix.PR_SET_CHILD_SUBREAPER && len(args) == 2:
		return zero(t.PrctlSetChildSubreaper(args[1].Int != 0))
	case option == unix.PR_GET_CHILD_SUBREAPER:
		v := int64(0)
		if t.PrctlGetChildSubreaper() {
			v = 1
		}
		return scenario.Result{Kind: scenario.ResultInt, Int: v}
	case option == unix.PR_SET_PDEATHSIG && len(args) == 2:
		return zero(t.PrctlSetPdeathsig(int(args[1].Int)))
	case option == unix.PR_GET_PDEATHSIG:
		return scenario.Result{Kind: scenario.ResultInt, Int: int64(t.PrctlGetPdeathsig())}
	}
	return errno(unix.EINVAL)
}

func errno(err error) scenario.Result {
	var e syscall.Errno
	if !errors.As(err, &e) {
		panic(fmt.Sprintf("modelrun: the model returned a non-errno error: %v", err))
	}
	return scenario.Result{Kind: scenario.ResultErrno, Errno: e}
}

func done(err error) scenario.Result {
	if err != nil {
		return errno(err)
	}
	return scenario.Result{Kind: scenario.ResultDone}
}

func zero(err error) scenario.Result {
	if err != nil {
		return errno(err)
	}
	return scenario.Result{Kind: scenario.ResultInt}
}

func sigset(set kernel.SigSet, err error) scenario.Result {
	if err != nil {
		return errno(err)
	}
	return scenario.Result{Kind: scenario.ResultSigset, Int: int64(set)}
}

func pid(nr int, err error) scenario.Result {
	if err != nil {
		return errno(err)
	}
	return scenario.Result{Kind: scenario.ResultPid, Pid: nr}
}

func waited(r kernel.WaitResult, err error) scenario.Result {
	switch {
	case err != nil:
		return errno(err)
	case r.Pid == 0:
		return scenario.Result{Kind: scenario.ResultInt}
	}
	res := scenario.Result{Kind: scenario.ResultWait, WaitPid: r.Pid}
	switch r.Code {
	case kernel.CLDExited:
		res.How, res.Code = scenario.Exited, r.Status.ExitStatus()
	case kernel.CLDKilled:
		res.How, res.Code = scenario.Killed, int(r.Status.Signal())
	case kernel.CLDDumped:
		res.How, res.Code = scenario.Dumped, int(r.Status.Signal())
	case kernel.CLDStopped:
		res.How, res.Code = scenario.Stopped, int(r.Status>>8)&0xffff
	case kernel.CLDTrapped:
		res.How, res.Code = scenario.Trapped, int(r.Status>>8)&0xffff
	case kernel.CLDContinued:
		res.How = scenario.Continued
	}
	return res
}
