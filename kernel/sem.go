package kernel

import (
	"context"

	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
)

// The SysV semaphore calls of a task: its IPC namespace's registry, its
// process's pid as the last operator, its credentials for ipcperms, and
// its undo list (created on first use, shared with CLONE_SYSVSEM, applied
// when the last sharer exits).

// NrSeenBy implements sem.PID: the number of p in the namespace of viewer
// (pid_vnr for the caller of semctl GETPID).
func (p *PID) NrSeenBy(viewer sem.PID) int {
	v, ok := viewer.(*PID)
	if !ok {
		return 0
	}
	return p.nrIn(v.ns)
}

// semCaller describes t to the semaphore code.
func (t *Task) semCaller(withUndo bool) sem.Caller {
	c := t.creds.Load()
	caller := sem.Caller{
		PID:     t.tg.leader.Load().pid.Load(),
		Creds:   sem.Creds{EUID: c.EUID, EGID: c.EGID, CapEffective: c.CapEffective},
		Sleeper: taskSleeper{t},
	}
	if withUndo {
		caller.Undo = t.undoList()
	}
	return caller
}

// undoList returns the task's undo list, creating it on first use
// (get_undo_list). Only the task itself creates it.
func (t *Task) undoList() *sem.UndoList {
	if ul := t.semUndo.Load(); ul != nil {
		return ul
	}
	t.semUndo.CompareAndSwap(nil, sem.NewUndoList())
	return t.semUndo.Load()
}

// exitSem detaches the task from its undo list (exit_sem); the last
// sharer applies the adjustments.
func (t *Task) exitSem() {
	if ul := t.semUndo.Swap(nil); ul != nil {
		ul.Release(t.tg.leader.Load().pid.Load())
	}
}

// IPCNamespace returns the task's IPC namespace's semaphore registry.
func (t *Task) IPCNamespace() *sem.Namespace { return t.ipcNS.Load() }

// Semget is semget(2) in the task's IPC namespace.
func (t *Task) Semget(key int32, nsems, flags int) (int, error) {
	if !t.alive() {
		return 0, unix.ESRCH
	}
	return t.ipcNS.Load().Semget(t.semCaller(false), key, nsems, flags)
}

// Semop is semop(2). A blocked call ends with EINTR when ctx (nil:
// context.Background) is done, the task is killed, or a handled or stop signal interrupts it (ipc/sem.c
// returns -EINTR, which is never restarted, even with SA_RESTART).
func (t *Task) Semop(ctx context.Context, id int, ops []sem.Sembuf) error {
	return t.Semtimedop(ctx, id, ops, nil)
}

// Semtimedop is semtimedop(2); a nil timeout waits without limit, and ctx
// is as for Semop.
//
// A kill ends the task once the call has returned (call.go): a sleeper
// whose operation a waker completed returns 0 even when killed (ipc/sem.c
// reads queue.status before it looks for a signal), and its exit_sem then
// applies an undo list that holds the operation's adjustment.
func (t *Task) Semtimedop(ctx context.Context, id int, ops []sem.Sembuf, timeout *unix.Timespec) error {
	ctx = orBackground(ctx)
	if !t.enterCall() {
		return unix.ESRCH
	}
	defer t.leaveCall()
	withUndo := false
	for _, op := range ops {
		withUndo = withUndo || op.Flg&sem.SEM_UNDO != 0
	}
	err := t.ipcNS.Load().Semtimedop(ctx, t.semCaller(withUndo), id, ops, timeout)
	// The process lock guards the interrupt state the call takes; the
	// sleeper has left its queue by now.
	t.tg.mu.Lock()
	sig := t.disarmLocked()
	t.tg.mu.Unlock()
	if sig != 0 && sig != int(unix.SIGKILL) {
		// A stop the signal began holds the call until the process is
		// continued (get_signal runs before the return to user space).
		t.WaitRunnable(ctx)
	}
	return err
}

// Semctl is semctl(2).
func (t *Task) Semctl(id, semnum, cmd int, arg sem.Semun) (int, error) {
	if !t.alive() {
		return 0, unix.ESRCH
	}
	return t.ipcNS.Load().Semctl(t.semCaller(false), id, semnum, cmd, arg)
}

// taskSleeper lets a blocking semaphore call report that its task sleeps,
// for Task.Sleeping, and be interrupted when the task is killed or sent a
// handled or stop signal (signal_wake_up of an interruptible sleep in
// ipc/sem.c's do_semtimedop).
type taskSleeper struct{ t *Task }

func (s taskSleeper) Sleeping(pending func() bool) <-chan struct{} {
	t := s.t
	// The channels are made and the sleep armed under the process lock,
	// which orders them against a concurrent kill or signal.
	t.tg.mu.Lock()
	dying, intr := t.dyingChanLocked(), t.armLocked()
	t.tg.mu.Unlock()
	t.sleepingOn.Store(&sleep{pending: pending, dying: dying, intr: intr})
	// intr is closed by SIGKILL too (markKilledLocked, armLocked).
	return intr
}

func (s taskSleeper) Awake() { s.t.sleepingOn.Store(nil) }
