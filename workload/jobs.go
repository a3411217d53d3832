package workload

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
	"tasklist/kernel"
)

// all lists the workloads; docs/workloads.md defines them.
var all = []*Workload{
	{Name: "threadspawn", Seed: "004, Linux 6.15 free_pid", Unit: OpsPerSec, PerOp: 1,
		Summary: "will-it-scale threadspawn1: each worker process, all of one user, spawns a thread that exits at once, and joins it",
		setup:   processes(sameUser, false, spawnThread)},
	{Name: "threadspawn-users", Seed: "004", Unit: OpsPerSec, PerOp: 1,
		Summary:  "threadspawn with every worker process a user of its own",
		HostNote: "distinct users need root on the host; unprivileged it runs as one user",
		setup:    processes(distinctUser, false, spawnThread)},
	{Name: "threadspawn-threads", Seed: "004", Unit: OpsPerSec, PerOp: 1,
		Summary: "threadspawn with the workers threads of one process (one per kernel in the private control)",
		setup:   setupThreadWorkers},
	{Name: "pthread-create", Seed: "001", Unit: MicrosPerCall, PerOp: pthreadBatch,
		Summary: "libMicro pthread_create -B 8: time 8 thread creations whose threads stay alive, then end and join them untimed",
		setup:   processes(sameUser, false, createThreads)},
	{Name: "fork-exit", Seed: "000", Unit: JobsPerMin, PerOp: 1,
		Summary: "AIM7 fork_test: fork a child that exits at once, wait for it, and wait again for ECHILD",
		setup:   processes(root, false, forkExit)},
	{Name: "fork-exec", Seed: "000", Unit: JobsPerMin, PerOp: 1,
		Summary: "AIM7 exec_test: the child execs, forks, execs and reaps a grandchild, and exits; two waits",
		setup:   processes(root, false, forkExec)},
	{Name: "get", Seed: "002", Unit: BogoOpsPerSec, PerOp: 1,
		Summary:  "stress-ng get: getpid, getppid, getpgid, getsid, getpriority of each kind, gettid, among a population of other tasks",
		HostNote: "the population's several users and groups need root on the host; unprivileged it is one user's",
		setup:    setupGet},
	{Name: "setprio", Seed: "002", Unit: OpsPerSec, PerOp: 1,
		Summary:  "setpriority(PRIO_PROCESS) of the caller with alternating values; every fourth call PRIO_PGRP on its own group",
		HostNote: "lowering a nice value needs privilege: unprivileged, the host sets the same value every time",
		setup:    processes(root, true, setPriority)},
	{Name: "semop-multi", Seed: "003", Unit: OpsPerSec, PerOp: 2,
		Summary: "semop-multi: one set with a semaphore per worker; each worker +1 then -1 on its own semaphore",
		setup:   semopSetup(false)},
	{Name: "semop-shared", Seed: "003", Unit: OpsPerSec, PerOp: 2,
		Summary: "semop-multi with every worker on the same semaphore of the set",
		setup:   semopSetup(true)},
	{Name: "sem-shm", Seed: "003", Unit: JobsPerMin, PerOp: 1,
		Summary: "AIM7 shared_memory: create a set of one semaphore, 100 × {-1, +1, -1, +1}, remove it",
		setup:   processes(root, false, semShm)},
	mixWorkload,
}

// spawnThread is threadspawn's iteration: the thread reaps itself, and
// Exit returns once it is released, which stands for the join.
func spawnThread(t *kernel.Task) Op {
	return func() (time.Duration, error) {
		th, err := t.Clone(kernel.CloneArgs{Flags: threadFlags})
		if err != nil {
			return 0, err
		}
		return 0, th.Exit(0)
	}
}

// setupThreadWorkers makes one process per kernel, of one user, whose
// threads are the workers.
func setupThreadWorkers(e *Env) (*Instance, error) {
	inst := &Instance{Ops: make([]Op, len(e.Kernels))}
	for _, g := range kernelGroups(e) {
		leader, err := newWorker(g.k, workerUID, false)
		if err != nil {
			return nil, err
		}
		for i, w := range g.workers {
			t := leader
			if i > 0 {
				if t, err = leader.Clone(kernel.CloneArgs{Flags: threadFlags}); err != nil {
					return nil, err
				}
			}
			inst.workers = append(inst.workers, t)
			inst.Ops[w] = spawnThread(t)
		}
	}
	return inst, nil
}

// pthreadBatch is libMicro's -B: thread creations timed together.
const pthreadBatch = 8

// createThreads is pthread-create's iteration.
func createThreads(t *kernel.Task) Op {
	var threads [pthreadBatch]*kernel.Task
	return func() (time.Duration, error) {
		start := time.Now()
		for i := range threads {
			th, err := t.Clone(kernel.CloneArgs{Flags: threadFlags})
			if err != nil {
				return 0, err
			}
			threads[i] = th
		}
		timed := time.Since(start)
		for i, th := range threads {
			if err := th.Exit(0); err != nil {
				return 0, err
			}
			threads[i] = nil
		}
		return timed, nil
	}
}

// forkExit is AIM7 fork_test's iteration.
func forkExit(t *kernel.Task) Op {
	return func() (time.Duration, error) {
		c, err := t.Fork()
		if err != nil {
			return 0, err
		}
		if err := c.Exit(0); err != nil {
			return 0, err
		}
		return 0, reapOnly(t, c)
	}
}

// reapOnly waits for c, which must be t's only child, then checks that
// t has no child left (ECHILD), as AIM7's jobs wait until wait fails.
func reapOnly(t, c *kernel.Task) error {
	ctx := context.Background()
	r, err := t.Wait4(ctx, -1, 0)
	if err != nil {
		return err
	}
	if r.Task != c {
		return fmt.Errorf("reaped pid %d, want %d", r.Pid, c.Getpid())
	}
	if _, err := t.Wait4(ctx, -1, 0); !errors.Is(err, unix.ECHILD) {
		return fmt.Errorf("second wait: %v, want ECHILD", err)
	}
	return nil
}

// forkExec is AIM7 exec_test's iteration: the model's execve is its
// de_thread and credential steps; there is no image to load.
func forkExec(t *kernel.Task) Op {
	return func() (time.Duration, error) {
		c, err := t.Fork()
		if err != nil {
			return 0, err
		}
		if err := c.Execve(); err != nil {
			return 0, err
		}
		g, err := c.Fork()
		if err != nil {
			return 0, err
		}
		if err := g.Execve(); err != nil {
			return 0, err
		}
		if err := g.Exit(0); err != nil {
			return 0, err
		}
		if err := reapOnly(c, g); err != nil {
			return 0, err
		}
		if err := c.Exit(0); err != nil {
			return 0, err
		}
		return 0, reapOnly(t, c)
	}
}

// setupGet fills each kernel with the population, then makes the
// workers: processes of one user in init's group, as stress-ng's are
// children of one process in the shell's group.
func setupGet(e *Env) (*Instance, error) {
	for _, g := range kernelGroups(e) {
		if err := populate(g.k, e.Population); err != nil {
			return nil, err
		}
	}
	return perWorker(e, sameUser, false, getCalls)
}

// The population's shape: its tasks belong to populationUsers users and
// populationGroups process groups.
const (
	populationUsers  = 4
	populationGroups = 8
)

// populate adds n live processes to k (DefaultPopulation for 0, none for
// a negative n), spread over populationGroups groups led by children of
// init, each group one user's of populationUsers.
func populate(k *kernel.Kernel, n int) error {
	switch {
	case n == 0:
		n = DefaultPopulation
	case n < 0:
		return nil
	}
	for g := range populationGroups {
		size := n / populationGroups
		if g < n%populationGroups {
			size++
		}
		if size == 0 {
			continue
		}
		leader, err := newWorker(k, populationUID+g%populationUsers, true)
		if err != nil {
			return err
		}
		for range size - 1 {
			if _, err := leader.Fork(); err != nil {
				return err
			}
		}
	}
	return nil
}

// getCalls is stress-ng get's loop, one bogo op.
func getCalls(t *kernel.Task) Op {
	return func() (time.Duration, error) {
		t.Getpid()
		t.Getppid()
		if _, err := t.Getpgid(0); err != nil {
			return 0, err
		}
		if _, err := t.Getsid(0); err != nil {
			return 0, err
		}
		for _, which := range []int{unix.PRIO_PROCESS, unix.PRIO_PGRP, unix.PRIO_USER} {
			if _, err := t.Getpriority(which, 0); err != nil {
				return 0, err
			}
		}
		t.Gettid()
		return 0, nil
	}
}

// setPriority alternates the caller's nice value between 0 and 1; every
// fourth call sets its whole process group's.
func setPriority(t *kernel.Task) Op {
	var i int
	return func() (time.Duration, error) {
		which := unix.PRIO_PROCESS
		if i%4 == 3 {
			which = unix.PRIO_PGRP
		}
		nice := i & 1
		i++
		return 0, t.Setpriority(which, 0, nice)
	}
}

// semopState is one worker's semop arguments, padded so that no two
// workers' buffers share a cache line.
type semopState struct {
	_        [64]byte
	up, down [1]sem.Sembuf
	_        [64]byte
}

// semopSetup is setupSemop's setup for shared or not.
func semopSetup(shared bool) func(*Env) (*Instance, error) {
	return func(e *Env) (*Instance, error) { return setupSemop(e, shared) }
}

// setupSemop makes one set per kernel with a semaphore for each of its
// workers, all at 200, and has each worker move its own semaphore (or,
// shared, all of them the first).
func setupSemop(e *Env, shared bool) (*Instance, error) {
	inst := &Instance{Ops: make([]Op, len(e.Kernels))}
	for _, g := range kernelGroups(e) {
		owner, err := newWorker(g.k, -1, false)
		if err != nil {
			return nil, err
		}
		id, err := owner.Semget(unix.IPC_PRIVATE, len(g.workers), 0o600)
		if err != nil {
			return nil, err
		}
		vals := make([]uint16, len(g.workers))
		for i := range vals {
			vals[i] = 200
		}
		if _, err := owner.Semctl(id, 0, sem.SETALL, sem.Semun{Array: vals}); err != nil {
			return nil, err
		}
		for i, w := range g.workers {
			t, err := newWorker(g.k, -1, false)
			if err != nil {
				return nil, err
			}
			num := uint16(i)
			if shared {
				num = 0
			}
			st := &semopState{}
			st.up[0] = sem.Sembuf{Num: num, Op: 1}
			st.down[0] = sem.Sembuf{Num: num, Op: -1}
			inst.workers = append(inst.workers, t)
			inst.Ops[w] = func() (time.Duration, error) {
				ctx := context.Background()
				if err := t.Semop(ctx, id, st.up[:]); err != nil {
					return 0, err
				}
				return 0, t.Semop(ctx, id, st.down[:])
			}
		}
	}
	return inst, nil
}

// semShmRounds is how many {-1, +1, -1, +1} rounds one sem-shm job does.
const semShmRounds = 100

// semShm is AIM7 shared_memory's job on a set of the worker's own.
func semShm(t *kernel.Task) Op {
	round := [4][1]sem.Sembuf{{{Op: -1}}, {{Op: 1}}, {{Op: -1}}, {{Op: 1}}}
	return func() (time.Duration, error) {
		ctx := context.Background()
		id, err := t.Semget(unix.IPC_PRIVATE, 1, 0o600)
		if err != nil {
			return 0, err
		}
		if _, err := t.Semctl(id, 0, sem.SETVAL, sem.Semun{Val: 1}); err != nil {
			return 0, err
		}
		for range semShmRounds {
			for i := range round {
				if err := t.Semop(ctx, id, round[i][:]); err != nil {
					return 0, err
				}
			}
		}
		_, err = t.Semctl(id, 0, unix.IPC_RMID, sem.Semun{})
		return 0, err
	}
}
