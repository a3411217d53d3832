package kernel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
)

// The library under misuse from Go: arguments a caller may get wrong.

// blockingWithNil runs call, which must block in p, on a goroutine of its
// own; once p sleeps it runs wake and returns call's outcome. A panic in
// call is returned as an error.
func (e *lcEnv) blockingWithNil(p *Task, call func() error, wake func()) error {
	e.t.Helper()
	out := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				out <- fmt.Errorf("panic: %v", r)
			}
		}()
		out <- call()
	}()
	deadline := time.Now().Add(lcTimeout)
	for !p.Sleeping() {
		select {
		case err := <-out:
			return fmt.Errorf("returned %v before blocking", err)
		default:
		}
		if time.Now().After(deadline) {
			e.t.Fatal("the call never slept")
		}
		time.Sleep(100 * time.Microsecond)
	}
	wake()
	select {
	case err := <-out:
		return err
	case <-time.After(lcTimeout):
		e.t.Fatal("the call never returned")
		return nil
	}
}

// TestNilContextIsBackground: every blocking method treats a nil context
// as context.Background (as net/http treats a nil request context): it
// sleeps until what it waits for happens, and does not panic.
func TestNilContextIsBackground(t *testing.T) {
	var nilCtx context.Context // a caller that passes nil
	e := newLCEnv(t, Config{})
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
		if err := e.blockingWithNil(p, func() error { return tc.call(p, c) }, func() { tc.wake(p, c) }); err != nil {
			t.Fatalf("%s with a nil context: %v", tc.name, err) // a panicked call leaves its task armed
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
	e := newLCEnv(t, Config{SemLimits: sem.Limits{SEMMSL: 4}})
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
	if err := p.Unshare(unix.CLONE_NEWIPC); err != nil {
		t.Fatal(err)
	}
	if got := p.IPCNamespace().Limits().SEMMNI; got != 32000 {
		t.Fatalf("SEMMNI of a new IPC namespace = %d, want Linux's 32000", got)
	}
	e.exit(p, 0)
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), exited(0))
	e.settle()
}
