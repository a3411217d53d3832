package kernel

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
)

// The library under misuse from Go: arguments a caller may get wrong.

// TestNilContextIsBackground: every blocking method treats a nil context
// as context.Background (as net/http treats a nil request context): it
// sleeps until what it waits for happens, and does not panic.
func TestNilContextIsBackground(t *testing.T) {
	var nilCtx context.Context // a caller that passes nil
	e := newEnv(t, Config{})
	id, err := e.init.Semget(unix.IPC_PRIVATE, 1, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	post := func() {
		if err := e.init.Semop(context.Background(), id, []sem.Sembuf{{Num: 0, Op: 1}}); err != nil {
			t.Fatalf("semop +1: %v", err)
		}
	}
	cases := []struct {
		name string
		call func(p, c *Task) error
		wake func(p, c *Task)
	}{
		{"Wait4", func(p, c *Task) error {
			r, err := p.Wait4(nilCtx, -1, 0)
			if err == nil && r.Pid != c.Getpid() {
				err = fmt.Errorf("reported pid %d, want %d", r.Pid, c.Getpid())
			}
			return err
		}, func(p, c *Task) { e.exit(c, 0) }},
		{"Waitid", func(p, c *Task) error {
			r, err := p.Waitid(nilCtx, unix.P_ALL, 0, unix.WEXITED)
			if err == nil && r.Pid != c.Getpid() {
				err = fmt.Errorf("reported pid %d, want %d", r.Pid, c.Getpid())
			}
			return err
		}, func(p, c *Task) { e.exit(c, 0) }},
		{"Semop", func(p, c *Task) error {
			return p.Semop(nilCtx, id, []sem.Sembuf{{Num: 0, Op: -1}})
		}, func(p, c *Task) { post() }},
		{"Semtimedop", func(p, c *Task) error {
			return p.Semtimedop(nilCtx, id, []sem.Sembuf{{Num: 0, Op: -1}}, &unix.Timespec{Sec: 3600})
		}, func(p, c *Task) { post() }},
		{"WaitRunnable", func(p, c *Task) error {
			p.WaitRunnable(nilCtx)
			if p.Stopped() {
				return fmt.Errorf("returned while stopped")
			}
			return nil
		}, func(p, c *Task) { e.kill(e.init, p, unix.SIGCONT) }},
	}
	for _, tc := range cases {
		p := e.fork(e.init)
		c := e.fork(p)
		if tc.name == "WaitRunnable" {
			e.kill(e.init, p, unix.SIGSTOP)
			e.k.Quiesce()
		}
		out := e.blocked(p, tc.name, func() (WaitResult, error) { return WaitResult{}, tc.call(p, c) })
		tc.wake(p, c)
		if o := e.result(out); o.err != nil {
			t.Fatalf("%s with a nil context: %v", tc.name, o.err) // a panicked call leaves its task armed
		}
		if !c.Exited() {
			e.exit(c, 0)
		}
		e.exitGroup(p, 0)
		e.reap(e.init, p.Getpid(), 0, p.Getpid(), exited(0))
		e.k.Quiesce()
		if c.Parent() == e.init { // reparented, not reaped by p
			e.reap(e.init, c.Getpid(), 0, c.Getpid(), exited(0))
		}
	}
	e.settle()
}

// TestConfigValidated_A11: New refuses a Config field out of Linux's range
// with an error that wraps EINVAL and names the field, instead of
// panicking or building a kernel that cannot work.
func TestConfigValidated_A11(t *testing.T) {
	cases := []struct {
		cfg   Config
		field string
	}{
		{Config{PIDMax: -1}, "PIDMax"},
		{Config{PIDMax: 300}, "PIDMax"},     // below RESERVED_PIDS + 1
		{Config{PIDMax: 1 << 23}, "PIDMax"}, // above PID_MAX_LIMIT
		{Config{ThreadLimit: -1}, "ThreadLimit"},
		{Config{RLimits: map[int]RLimit{unix.RLIMIT_NPROC: {Cur: 2, Max: 1}}}, "RLimits[6]"},
		{Config{RLimits: map[int]RLimit{nrLimits: {}}}, "RLimits[16]"},
		{Config{SemLimits: sem.Limits{SEMMSL: -1}}, "SEMMSL"},
		{Config{SemLimits: sem.Limits{SEMMNS: -5}}, "SEMMNS"},
		{Config{SemLimits: sem.Limits{SEMOPM: -1}}, "SEMOPM"},
		{Config{SemLimits: sem.Limits{SEMMNI: 32769}}, "SEMMNI"},
		{Config{SemLimits: sem.Limits{SEMVMX: 32768}}, "SEMVMX"},
		{Config{SemLimits: sem.Limits{SEMAEM: -1}}, "SEMAEM"},
	}
	for _, tc := range cases {
		k, err := func() (k *Kernel, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			return New(tc.cfg)
		}()
		if k != nil || !errors.Is(err, unix.EINVAL) || !strings.Contains(fmt.Sprint(err), tc.field) {
			t.Errorf("New(%+v) = %v, %v; want EINVAL naming %s", tc.cfg, k != nil, err, tc.field)
		}
	}
}

// TestSemLimitsDefaultFieldByField_H1: a SemLimits that sets some fields
// keeps Linux's defaults for the others (semget works), and the fields it
// sets take effect.
func TestSemLimitsDefaultFieldByField_H1(t *testing.T) {
	e := newEnv(t, Config{SemLimits: sem.Limits{SEMMSL: 4}})
	if got, want := e.init.IPCNamespace().Limits(), (sem.Limits{SEMMSL: 4}).WithDefaults(); got != want {
		t.Fatalf("limits %+v, want %+v", got, want)
	}
	if _, err := e.init.Semget(unix.IPC_PRIVATE, 4, 0o600); err != nil {
		t.Fatalf("semget of 4 with SEMMSL 4: %v", err)
	}
	if _, err := e.init.Semget(unix.IPC_PRIVATE, 5, 0o600); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("semget of 5 with SEMMSL 4: %v, want EINVAL", err)
	}
	// A new IPC namespace gets the same limits.
	p := e.fork(e.init)
	mustOK(t, p.Unshare(unix.CLONE_NEWIPC))
	if got := p.IPCNamespace().Limits().SEMMNI; got != 32000 {
		t.Fatalf("SEMMNI of a new IPC namespace = %d, want Linux's 32000", got)
	}
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// exitedCall is one syscall-shaped method called on a task that has
// exited.
type exitedCall struct {
	method string
	call   func(t *Task) error
}

// exitedCalls calls every syscall-shaped method of Task with arguments
// that would succeed, or block, for a live caller.
func exitedCalls(e *env, semID int) []exitedCall {
	ctx := func() context.Context {
		ctx, cancel := e.ctx()
		e.t.Cleanup(cancel)
		return ctx
	}
	two := func(_ any, err error) error { return err }
	initPid := e.init.Getpid()
	return []exitedCall{
		{"Fork", func(t *Task) error { return two(t.Fork()) }},
		{"Clone", func(t *Task) error { return two(t.Clone(CloneArgs{Flags: threadFlags})) }},
		{"Clone3", func(t *Task) error { return two(t.Clone3(CloneArgs{Flags: threadFlags})) }},
		{"Vfork", func(t *Task) error { return two(t.Vfork()) }},
		{"PidfdOpen", func(t *Task) error { return two(t.PidfdOpen(initPid, 0)) }},
		{"PidfdSendSignal", func(t *Task) error { return t.PidfdSendSignal(0, 0, 0) }},
		{"Close", func(t *Task) error { return t.Close(0) }},
		{"Poll", func(t *Task) error { return two(t.Poll(0)) }},
		{"Prlimit", func(t *Task) error { return two(t.Prlimit(initPid, unix.RLIMIT_NPROC, nil)) }},
		{"Execve", func(t *Task) error { return t.Execve() }},
		{"Exit", func(t *Task) error { return t.Exit(0) }},
		{"ExitGroup", func(t *Task) error { return t.ExitGroup(0) }},
		{"Wait4", func(t *Task) error { return two(t.Wait4(ctx(), -1, unix.WALL)) }},
		{"Waitid", func(t *Task) error { return two(t.Waitid(ctx(), unix.P_ALL, 0, unix.WEXITED|unix.WALL)) }},
		{"Kill", func(t *Task) error { return t.Kill(initPid, 0) }},
		{"Tgkill", func(t *Task) error { return t.Tgkill(initPid, initPid, 0) }},
		{"Sigaction", func(t *Task) error { return two(t.Sigaction(int(unix.SIGUSR1), SigAction{})) }},
		{"SigactionOf", func(t *Task) error { return two(t.SigactionOf(int(unix.SIGUSR1))) }},
		{"Setuid", func(t *Task) error { return t.Setuid(0) }},
		{"Setresuid", func(t *Task) error { return t.Setresuid(-1, -1, -1) }},
		{"Setgid", func(t *Task) error { return t.Setgid(0) }},
		{"Setresgid", func(t *Task) error { return t.Setresgid(-1, -1, -1) }},
		{"Getrlimit", func(t *Task) error { return two(t.Getrlimit(unix.RLIMIT_NPROC)) }},
		{"Setrlimit", func(t *Task) error { return t.Setrlimit(unix.RLIMIT_CORE, RLimit{}) }},
		{"Getpgid", func(t *Task) error { return two(t.Getpgid(0)) }},
		{"Getsid", func(t *Task) error { return two(t.Getsid(0)) }},
		{"Setsid", func(t *Task) error { return two(t.Setsid()) }},
		{"Setpgid", func(t *Task) error { return t.Setpgid(0, 0) }},
		{"Getpriority", func(t *Task) error { return two(t.Getpriority(unix.PRIO_PROCESS, 0)) }},
		{"Setpriority", func(t *Task) error { return t.Setpriority(unix.PRIO_PROCESS, 0, 0) }},
		{"PrctlSetChildSubreaper", func(t *Task) error { return t.PrctlSetChildSubreaper(true) }},
		{"PrctlSetPdeathsig", func(t *Task) error { return t.PrctlSetPdeathsig(0) }},
		{"Ptrace", func(t *Task) error { return t.Ptrace(unix.PTRACE_TRACEME, 0, 0, 0) }},
		{"Unshare", func(t *Task) error { return t.Unshare(unix.CLONE_NEWIPC) }},
		{"Semget", func(t *Task) error { return two(t.Semget(unix.IPC_PRIVATE, 1, 0o600)) }},
		{"Semop", func(t *Task) error { return t.Semop(ctx(), semID, []sem.Sembuf{{Num: 0, Op: -1}}) }},
		{"Semtimedop", func(t *Task) error {
			return t.Semtimedop(ctx(), semID, []sem.Sembuf{{Num: 0, Op: -1}}, &unix.Timespec{Sec: 1})
		}},
		{"Semctl", func(t *Task) error { return two(t.Semctl(semID, 0, sem.GETVAL, sem.Semun{})) }},
		{"Sigprocmask", func(t *Task) error {
			set := SigSetOf(int(unix.SIGUSR1))
			return two(t.Sigprocmask(unix.SIG_BLOCK, &set))
		}},
		{"Sigpending", func(t *Task) error { return two(t.Sigpending()) }},
		{"Sigsuspend", func(t *Task) error { return t.Sigsuspend(ctx(), 0) }},
		{"Sigtimedwait", func(t *Task) error { return two(t.Sigtimedwait(ctx(), SigSetOf(int(unix.SIGUSR1)), time.Second)) }},
		{"Tkill", func(t *Task) error { return t.Tkill(1, 0) }},
	}
}

// TestExitedTaskCallsFailESRCH: every method of Task with an error result
// is a system call of its task, and a task that has begun exiting makes
// none: each fails with ESRCH, before looking at its arguments, whether
// the task is held at PTRACE_EVENT_EXIT, a zombie, a zombie leader with a
// live thread, or reaped. Accessors without an error result (Getpid,
// Gettid, Getpgrp, Creds, …) keep answering with the task's last state.
func TestExitedTaskCallsFailESRCH(t *testing.T) {
	e := newEnv(t, Config{})
	semID, err := e.init.Semget(unix.IPC_PRIVATE, 1, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	calls := exitedCalls(e, semID)

	// The table covers every method with an error result.
	covered := map[string]bool{}
	for _, c := range calls {
		covered[c.method] = true
	}
	errType := reflect.TypeFor[error]()
	rt := reflect.TypeFor[*Task]()
	for i := range rt.NumMethod() {
		m := rt.Method(i)
		if n := m.Type.NumOut(); n > 0 && m.Type.Out(n-1) == errType && !covered[m.Name] {
			t.Errorf("method %s returns an error and is not in the table", m.Name)
		}
	}

	tracer := e.fork(e.init)
	held := e.fork(e.init)
	mustOK(t, tracer.Ptrace(unix.PTRACE_SEIZE, held.Getpid(), 0, unix.PTRACE_O_TRACEEXIT))
	e.exit(held, 3) // held at PTRACE_EVENT_EXIT: exiting, not yet a zombie
	zombie := e.fork(e.init)
	e.exit(zombie, 4)
	leader := e.fork(e.init)
	thread := e.thread(leader)
	e.exit(leader, 5) // a zombie leader while its thread lives
	reaped := e.fork(e.init)
	e.exit(reaped, 6)
	e.k.Quiesce()
	e.reap(e.init, reaped.Getpid(), 0, reaped.Getpid(), exited(6))

	for name, task := range map[string]*Task{"held at exit": held, "zombie": zombie,
		"zombie leader": leader, "reaped": reaped} {
		pid, tid, pgrp, creds := task.Getpid(), task.Gettid(), task.Getpgrp(), task.Creds()
		for _, c := range calls {
			if err := c.call(task); !errors.Is(err, unix.ESRCH) {
				t.Errorf("%s of a task %s = %v, want ESRCH", c.method, name, err)
			}
		}
		if task.Getpid() != pid || task.Gettid() != tid || task.Getpgrp() != pgrp || task.Creds() != creds {
			t.Errorf("accessors of a task %s changed across its failed calls", name)
		}
		if !task.Exited() {
			t.Errorf("task %s: Exited() = false", name)
		}
	}

	e.ptrace(tracer, unix.PTRACE_DETACH, held, 0)
	e.exit(thread, 0)
	e.exit(tracer, 0)
	e.k.Quiesce()
	for p, code := range map[*Task]int{held: 3, zombie: 4, leader: 0, tracer: 0} {
		e.reap(e.init, p.Getpid(), 0, p.Getpid(), exited(code))
	}
	e.settle()
}
