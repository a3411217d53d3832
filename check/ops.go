package check

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
	"tasklist/kernel"
)

// kind is a system call the checker makes, or the final observation.
type kind uint8

const (
	kClone kind = iota
	kExit
	kExitGroup
	kWait4
	kWaitid
	kSetpgid
	kSetsid
	kKill
	kGetpriority
	kSetpriority
	kTraceme
	kSetresuid // made by the setup only
	kObserve   // not a call: what the table holds after the burst
	// kCloneNice is not a call either: the moment a clone copies its
	// caller's nice value into the new task. Linux copies it in
	// dup_task_struct, before the child is linked (attach_pid), so a
	// setpriority may run between the two; the checker gives each clone
	// this second operation over the same interval.
	kCloneNice
	kSemget
	kSemop
	kSemctl
	// kSemAsleep is not a call: the moment a sleeper's semop was seen
	// asleep on its set's queue, over the interval from the semop's start
	// to the sighting. From then on the model knows the sleeper is queued:
	// the first change that lets it proceed completes it, a removal fails
	// it with EIDRM.
	kSemAsleep
)

var kindNames = [...]string{
	kClone: "clone", kExit: "exit", kExitGroup: "exit_group", kWait4: "wait4", kWaitid: "waitid",
	kSetpgid: "setpgid", kSetsid: "setsid", kKill: "kill", kGetpriority: "getpriority",
	kSetpriority: "setpriority", kTraceme: "ptrace", kSetresuid: "setresuid", kObserve: "observe",
	kCloneNice: "clone's copy of nice",
	kSemget:    "semget", kSemop: "semop", kSemctl: "semctl",
}

func (k kind) String() string { return kindNames[k] }

// semaphore reports whether k is a semaphore call: those commute with the
// task calls, so they are checked in partitions of their own.
func (k kind) semaphore() bool { return k >= kSemget }

// call is one operation of a history, with its arguments as the kernel
// got them: pids are root-namespace numbers, the kernel's own.
type call struct {
	kind   kind
	caller int // root pid of the calling task; 0 for the observation
	// pid is the pid argument: wait4's pid (negative: a group), waitid's
	// id, setpgid's pid, kill's pid (negative: a group), get/setpriority's
	// who (a uid for PRIO_USER).
	pid int
	// pgid is setpgid's pgid.
	pgid int
	// arg is clone's exit signal, exit's code, kill's signal, the
	// priority calls' which, waitid's idtype, setresuid's uid, semget's
	// key, semctl's command.
	arg int
	// arg2 is setpriority's nice, semget's nsems, semctl's semnum.
	arg2 int
	// arg3 is SETVAL's value and semget's flags.
	arg3  int
	opts  int    // wait options
	flags uint64 // clone flags
	id    int    // semaphore set id
	sops  []sem.Sembuf
	// timed: semtimedop with a short timeout; sleeps: the call may sleep
	// with no timeout (a sleeper's semop).
	timed, sleeps bool
	// seq pairs a clone with its kCloneNice, and a sleeping semop with
	// its kSemAsleep: the call's start time.
	seq int64
	// part is the partition of a task call (schedule.parts); pids lists
	// the tasks an observation reads.
	part int
	pids []int
}

// outcome is what a call returned.
type outcome struct {
	err    error // nil or a unix.Errno
	val    int   // clone's child, setsid's sid, getpriority's value, wait's pid, semget's id
	status int   // wait's status word
	code   int   // waitid's si_code
	vals   []int // GETALL
	obs    observation
	// hung marks a call that had not returned when the round ended.
	hung bool
	// child is the task a clone made, for the calls that name it later;
	// it is not part of the result.
	child *kernel.Task
}

// semTimeout is the timeout of a timed semop: long enough for a waker to
// come, short enough to keep rounds fast.
const semTimeout = 200 * time.Microsecond

// run makes c as t on the kernel.
func (c call) run(ctx context.Context, t *kernel.Task) outcome {
	var o outcome
	switch c.kind {
	case kClone:
		o.child, o.err = t.Clone(kernel.CloneArgs{Flags: c.flags, ExitSignal: c.arg})
		if o.child != nil {
			o.val = o.child.PIDIn(t.Kernel().RootNamespace())
		}
	case kExit:
		o.err = t.Exit(c.arg)
	case kExitGroup:
		o.err = t.ExitGroup(c.arg)
	case kWait4, kWaitid:
		var r kernel.WaitResult
		if c.kind == kWait4 {
			r, o.err = t.Wait4(ctx, c.pid, c.opts)
		} else {
			r, o.err = t.Waitid(ctx, c.arg, c.pid, c.opts)
		}
		o.val, o.status, o.code = r.Pid, int(r.Status), r.Code
	case kSetpgid:
		o.err = t.Setpgid(c.pid, c.pgid)
	case kSetsid:
		o.val, o.err = t.Setsid()
	case kKill:
		o.err = t.Kill(c.pid, c.arg)
	case kGetpriority:
		o.val, o.err = t.Getpriority(c.arg, c.pid)
	case kSetpriority:
		o.err = t.Setpriority(c.arg, c.pid, c.arg2)
	case kTraceme:
		o.err = t.Ptrace(unix.PTRACE_TRACEME, 0, 0, 0)
	case kSetresuid:
		o.err = t.Setresuid(c.arg, c.arg, c.arg)
	case kSemget:
		o.val, o.err = t.Semget(int32(c.arg), c.arg2, c.arg3)
	case kSemop:
		var timeout *unix.Timespec
		if c.timed {
			timeout = &unix.Timespec{Nsec: int64(semTimeout)}
		}
		o.err = t.Semtimedop(ctx, c.id, c.sops, timeout)
	case kSemctl:
		var arg sem.Semun
		switch c.arg {
		case sem.GETALL:
			arg.Array = make([]uint16, setSize)
		case sem.SETVAL:
			arg.Val = c.arg3
		}
		_, o.err = t.Semctl(c.id, c.arg2, c.arg, arg)
		if c.arg == sem.GETALL && o.err == nil {
			for _, v := range arg.Array {
				o.vals = append(o.vals, int(v))
			}
		}
	default:
		panic(fmt.Sprintf("check: cannot run %v", c.kind))
	}
	if errors.Is(o.err, kernel.ErrInitExit) {
		o.err = errInitExit
	}
	return o
}

// errInitExit stands for the kernel's and the model's refusal to end the
// root init, so that both compare equal.
var errInitExit = errors.New("attempted to kill init")

// String describes c as a call: "17: setpgid(0, 12)".
func (c call) String() string {
	var args string
	switch c.kind {
	case kClone:
		args = fmt.Sprintf("%s, %s", cloneFlagNames(c.flags), signalName(c.arg))
	case kExit, kExitGroup:
		args = fmt.Sprint(c.arg)
	case kWait4:
		args = fmt.Sprintf("%d, %s", c.pid, waitOptionNames(c.opts))
	case kWaitid:
		args = fmt.Sprintf("%s, %d, %s", [...]string{"P_ALL", "P_PID", "P_PGID"}[c.arg], c.pid, waitOptionNames(c.opts))
	case kSetpgid:
		args = fmt.Sprintf("%d, %d", c.pid, c.pgid)
	case kKill:
		args = fmt.Sprintf("%d, %s", c.pid, signalName(c.arg))
	case kSetresuid:
		args = fmt.Sprintf("%d, %d, %d", c.arg, c.arg, c.arg)
	case kTraceme:
		args = "PTRACE_TRACEME, 0, 0, 0"
	case kGetpriority:
		args = fmt.Sprintf("%s, %d", prioNames[c.arg], c.pid)
	case kSetpriority:
		args = fmt.Sprintf("%s, %d, %d", prioNames[c.arg], c.pid, c.arg2)
	case kSemget:
		key := fmt.Sprintf("%#x", c.arg)
		if c.arg == unix.IPC_PRIVATE {
			key = "IPC_PRIVATE"
		}
		args = fmt.Sprintf("%s, %d, %#o", key, c.arg2, c.arg3)
	case kSemop:
		args = fmt.Sprintf("%d, %s", c.id, semops(c.sops))
		switch {
		case c.timed:
			args += ", " + semTimeout.String()
		case c.sleeps:
			args += ", no timeout"
		}
	case kSemctl:
		switch c.arg {
		case sem.GETALL:
			args = fmt.Sprintf("%d, GETALL", c.id)
		case sem.SETVAL:
			args = fmt.Sprintf("%d, %d, SETVAL, %d", c.id, c.arg2, c.arg3)
		default:
			args = fmt.Sprintf("%d, IPC_RMID", c.id)
		}
	}
	switch c.kind {
	case kObserve:
		return fmt.Sprintf("observe tasks %v", c.pids)
	case kCloneNice:
		return fmt.Sprintf("%d: clone copies the caller's nice", c.caller)
	case kSemAsleep:
		return fmt.Sprintf("%d: asleep in semop(%d, %s)", c.caller, c.id, semops(c.sops))
	}
	name := c.kind.String()
	if c.kind == kSemop && c.timed {
		name = "semtimedop"
	}
	return fmt.Sprintf("%d: %s(%s)", c.caller, name, args)
}

// semops describes semop's operations: "{0 -1} {1 +1 NOWAIT}".
func semops(sops []sem.Sembuf) string {
	var ops []string
	for _, o := range sops {
		s := fmt.Sprintf("{%d %+d", o.Num, o.Op)
		if o.Flg&unix.IPC_NOWAIT != 0 {
			s += " NOWAIT"
		}
		ops = append(ops, s+"}")
	}
	return strings.Join(ops, " ")
}

// String describes o as a result.
func (o outcome) String() string {
	switch {
	case o.hung:
		return "(never returned)"
	case o.obs != nil:
		return o.obs.String()
	case o.err != nil:
		return errName(o.err)
	case o.vals != nil:
		return fmt.Sprint(o.vals)
	case o.status != 0 || o.code != 0:
		return fmt.Sprintf("pid %d status %#x code %d", o.val, o.status, o.code)
	}
	return fmt.Sprint(o.val)
}

func errName(err error) string {
	if e, ok := err.(unix.Errno); ok {
		if name := unix.ErrnoName(e); name != "" {
			return name
		}
	}
	return err.Error()
}

var prioNames = map[int]string{unix.PRIO_PROCESS: "PRIO_PROCESS", unix.PRIO_PGRP: "PRIO_PGRP", unix.PRIO_USER: "PRIO_USER"}

func signalName(sig int) string {
	if sig == 0 {
		return "0"
	}
	return unix.SignalName(unix.Signal(sig))
}

func cloneFlagNames(f uint64) string {
	switch f {
	case 0:
		return "0"
	case threadFlags:
		return "CLONE_THREAD|CLONE_SIGHAND|CLONE_VM"
	case unix.CLONE_PARENT:
		return "CLONE_PARENT"
	}
	return fmt.Sprintf("%#x", f)
}

func waitOptionNames(opts int) string {
	var names []string
	for _, o := range []struct {
		bit  int
		name string
	}{{unix.WNOHANG, "WNOHANG"}, {unix.WUNTRACED, "WUNTRACED"}, {unix.WEXITED, "WEXITED"},
		{unix.WCONTINUED, "WCONTINUED"}, {unix.WNOWAIT, "WNOWAIT"}, {unix.WNOTHREAD, "__WNOTHREAD"},
		{unix.WALL, "__WALL"}, {unix.WCLONE, "__WCLONE"}} {
		if opts&o.bit != 0 {
			names = append(names, o.name)
		}
	}
	return strings.Join(names, "|")
}

const threadFlags = unix.CLONE_THREAD | unix.CLONE_SIGHAND | unix.CLONE_VM
