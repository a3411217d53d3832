package check

import (
	"math/rand/v2"

	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
)

// actorState is what the builder knows of a worker's tasks while it draws
// its steps.
type actorState struct {
	refs    []ref
	session []int
	exited  []bool
	created int // tasks the worker cloned so far
}

// pick draws one of the worker's tasks that has not exited; ok is false
// when none is left.
func (a *actorState) pick(r *rand.Rand) (i int, ok bool) {
	var live []int
	for i, e := range a.exited {
		if !e {
			live = append(live, i)
		}
	}
	if len(live) == 0 {
		return 0, false
	}
	return live[r.IntN(len(live))], true
}

// randomSteps draws n steps for a worker owning tasks, whose semaphore
// calls helper makes.
func (b *builder) randomSteps(tasks []ref, helper ref, n int) []step {
	a := &actorState{}
	for _, t := range tasks {
		a.refs = append(a.refs, t)
		a.session = append(a.session, b.l.session[t])
		a.exited = append(a.exited, false)
	}
	var steps []step
	for len(steps) < n {
		i, ok := a.pick(b.r)
		if !ok {
			break
		}
		s := b.randomStep(a, i)
		if s.kind.semaphore() {
			s.actor = helper
		}
		steps = append(steps, s)
	}
	return steps
}

// weights of the random calls, by the case numbers of randomStep's switch.
var weights = []int{10, 4, 4, 2, 8, 4, 10, 2, 6, 8, 6, 8, 3, 2, 2, 1, 2}

// randomStep draws a call by the worker's task i, or a semaphore call.
func (b *builder) randomStep(a *actorState, i int) step {
	r := b.r
	s := step{actor: a.refs[i]}
	sess := a.session[i]
	groups := b.l.groups[max(sess, 0)]
	someGroup := func() ref { return groups[r.IntN(len(groups))] }
	someTarget := func() pidArg {
		if a.created > 0 && r.IntN(3) == 0 {
			return pidOf(child(r.IntN(a.created)))
		}
		procs := b.l.procs[r.IntN(len(b.l.procs))]
		return pidOf(procs[r.IntN(len(procs))])
	}
	ownChild := func() pidArg {
		if a.created == 0 {
			return lit(-1)
		}
		return pidOf(child(r.IntN(a.created)))
	}
	total := 0
	for _, w := range weights {
		total += w
	}
	pick := r.IntN(total)
	choice := 0
	for pick >= weights[choice] {
		pick -= weights[choice]
		choice++
	}
	switch choice {
	case 0, 1: // fork, or a thread
		s.kind, s.makesTask, s.arg = kClone, true, int(unix.SIGCHLD)
		if choice == 1 {
			s.flags, s.arg = threadFlags, 0
		} else if r.IntN(5) == 0 {
			s.flags = unix.CLONE_PARENT
		}
		a.refs = append(a.refs, child(a.created))
		a.session = append(a.session, sess)
		a.exited = append(a.exited, false)
		a.created++
	case 2, 3:
		s.kind, s.arg = kExit, r.IntN(4)
		if choice == 3 {
			s.kind = kExitGroup
		}
		a.exited[i] = true
	case 4:
		s.kind, s.opts = kWait4, unix.WNOHANG|b.someWaitOptions(false)
		s.pid = []pidArg{lit(-1), lit(0), ownChild(), groupOf(someGroup())}[r.IntN(4)]
	case 5:
		s.kind, s.opts = kWaitid, unix.WNOHANG|unix.WEXITED|b.someWaitOptions(true)
		switch s.arg = r.IntN(3); s.arg {
		case unix.P_PID:
			s.pid = ownChild()
		case unix.P_PGID:
			s.pid = []pidArg{lit(0), pidOf(someGroup())}[r.IntN(2)]
		default:
			s.pid = lit(0)
		}
	case 6:
		s.kind, s.pid, s.pgid = kSetpgid, lit(0), pidOf(someGroup())
		if r.IntN(3) == 0 {
			s.pid = ownChild()
		}
		if r.IntN(6) == 0 {
			s.pgid = lit(0)
		}
	case 7:
		s.kind = kSetsid
	case 8:
		s.kind = kKill
		s.arg = []int{0, int(unix.SIGCHLD), int(unix.SIGURG), int(unix.SIGWINCH), int(unix.SIGCONT)}[r.IntN(5)]
		switch r.IntN(5) {
		case 0, 1:
			s.pid = someTarget()
		case 2:
			s.pid = groupOf(someGroup())
		case 3:
			s.pid = lit(0)
		default:
			s.pid = lit(-1) // every process of the workers' user
		}
	case 9, 10:
		s.kind = kGetpriority
		if choice == 10 {
			s.kind, s.arg2 = kSetpriority, b.nextNice()
		}
		switch r.IntN(7) {
		case 0, 1, 2:
			s.arg, s.pid = unix.PRIO_PGRP, pidOf(someGroup())
		case 3:
			s.arg, s.pid = unix.PRIO_PGRP, lit(0)
		case 4, 5:
			s.arg, s.pid = unix.PRIO_PROCESS, someTarget()
		default:
			// The workers' user: who 0 is the caller's.
			s.arg, s.pid = unix.PRIO_USER, lit([]int{0, workerUID}[r.IntN(2)])
		}
	case 11, 12:
		s.kind, s.slot, s.timed = kSemop, r.IntN(len(b.s.keys)), choice == 12
		s.sops = b.someSemops(!s.timed)
	case 13:
		s.kind, s.slot, s.arg = kSemctl, r.IntN(len(b.s.keys)), sem.GETALL
	case 14:
		s.kind, s.slot, s.arg = kSemctl, r.IntN(len(b.s.keys)), sem.SETVAL
		s.arg2, s.arg3 = r.IntN(setSize), r.IntN(3)
	case 15:
		s.kind, s.slot, s.arg = kSemctl, r.IntN(len(b.s.keys)), unix.IPC_RMID
	default:
		s.kind, s.slot = kSemget, r.IntN(keyedSlots)
		s.arg, s.arg2, s.arg3 = b.s.keys[s.slot], setSize, unix.IPC_CREAT|0o600
	}
	return s
}

func (b *builder) someWaitOptions(waitid bool) int {
	opts := 0
	extra := []int{unix.WUNTRACED, unix.WCONTINUED, unix.WALL, unix.WCLONE, unix.WNOTHREAD}
	if waitid {
		extra = append(extra, unix.WNOWAIT)
	}
	for _, o := range extra {
		if b.r.IntN(5) == 0 {
			opts |= o
		}
	}
	return opts
}

// someSemops draws one or two operations of -1, 0 or +1.
func (b *builder) someSemops(nowait bool) []sem.Sembuf {
	ops := make([]sem.Sembuf, 1+b.r.IntN(2))
	for i := range ops {
		ops[i] = sem.Sembuf{Num: uint16(b.r.IntN(setSize)), Op: int16(b.r.IntN(3) - 1)}
		if nowait {
			ops[i].Flg = unix.IPC_NOWAIT
		}
	}
	return ops
}
