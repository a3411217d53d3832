package kernel

import (
	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
	"tasklist/plan"
)

// csignal is CSIGNAL: the low byte of clone(2)'s flags is the exit signal.
const csignal = 0xff

// CloneArgs are clone's arguments.
type CloneArgs struct {
	// Flags are CLONE_* flags; bits in the low byte (CSIGNAL) are ignored.
	Flags uint64
	// ExitSignal is sent to the parent when the child exits (SIGCHLD for
	// fork; 0 for none). Only its low byte counts, as with clone(2).
	ExitSignal int
	// SetTID is clone3's set_tid: the pid the child is to have in its own
	// pid namespace, then in each namespace above, as far as it goes.
	// Clone, which is clone(2), has no set_tid and ignores it.
	SetTID []int32
	// Pidfd is where, with CLONE_PIDFD, the number of the child's pidfd
	// is written: clone3's pidfd, clone(2)'s parent_tid. A nil Pidfd
	// faults (EFAULT), as a null pointer would.
	Pidfd *int
	// Created, when not nil, is called with the child once it is
	// published and before the caller stops for its tracer or, with
	// CLONE_VFORK, waits for the child: what the caller's memory learns
	// through CLONE_PARENT_SETTID before the child runs, for a runner
	// that must name the child while its vfork parent is still waiting.
	Created func(child *Task)
}

// Fork is fork(2): Clone with SIGCHLD and no flags.
func (t *Task) Fork() (*Task, error) {
	return t.Clone(CloneArgs{ExitSignal: int(unix.SIGCHLD)})
}

// Vfork is vfork(2): Clone with CLONE_VFORK|CLONE_VM and SIGCHLD; the
// caller sleeps until the child execs or exits.
func (t *Task) Vfork() (*Task, error) {
	return t.Clone(CloneArgs{Flags: unix.CLONE_VFORK | unix.CLONE_VM, ExitSignal: int(unix.SIGCHLD)})
}

// Clone is clone(2): it creates a task (copy_process), a new process, or
// with CLONE_THREAD|CLONE_SIGHAND|CLONE_VM a thread of the caller's
// process. Only the low 32 bits of Flags count, as clone(2) passes them;
// with CLONE_PIDFD the pidfd is written where CLONE_PARENT_SETTID writes
// the child's tid, so the two together fail with EINVAL (kernel_clone).
// The new task is complete, and findable by pid, when Clone returns.
//
// Errors: EINVAL for inconsistent flags (A1–A4) or CLONE_NEWUSER, which is
// not modelled; EAGAIN when RLIMIT_NPROC, the thread limit or the pid
// range is exhausted (A7, A8, A11); EPERM for CLONE_NEWPID without
// CAP_SYS_ADMIN; ENOSPC past 32 nested pid namespaces; ENOMEM when the
// target pid namespace's init has died (A13); EMFILE when CLONE_PIDFD
// finds the caller's descriptor table full; EFAULT for CLONE_PIDFD without
// args.Pidfd; EINTR when the caller's process started exiting meanwhile.
func (t *Task) Clone(args CloneArgs) (*Task, error) {
	args.Flags = uint64(uint32(args.Flags))
	args.SetTID = nil
	if args.Flags&(unix.CLONE_PIDFD|unix.CLONE_PARENT_SETTID) == unix.CLONE_PIDFD|unix.CLONE_PARENT_SETTID {
		if !t.alive() {
			return nil, unix.ESRCH
		}
		return nil, unix.EINVAL
	}
	return t.clone(args)
}

// clone is kernel_clone, for clone(2) and clone3 alike.
func (t *Task) clone(args CloneArgs) (*Task, error) {
	if args.Flags&unix.CLONE_VFORK != 0 {
		// The caller sleeps until the child execs or exits, and a kill
		// meanwhile ends it only once the call has returned (call.go).
		if !t.enterCall() {
			return nil, unix.ESRCH
		}
		defer t.leaveCall()
	} else if !t.alive() {
		return nil, unix.ESRCH
	}
	flags := args.Flags &^ csignal
	if err := t.checkCloneFlags(flags); err != nil {
		return nil, err
	}
	k := t.k
	creds := t.creds.Load()
	child := &Task{k: k, sleepingOn: sleepSlot{k: k}, started: k.now()} // off every lock, as the release side
	child.creds.Store(creds)
	child.nice.Store(t.nice.Load())

	// RLIMIT_NPROC counts the child against its user first (A7), in the
	// shard of the process that creates it.
	u := t.user.Load()
	shard := uint8(t.tg.serial % userShards)
	child.userShard = shard
	if u.charge(shard, t.tg.rlimits.Load()[unix.RLIMIT_NPROC].Cur) &&
		!creds.HasCap(unix.CAP_SYS_RESOURCE) && !creds.HasCap(unix.CAP_SYS_ADMIN) {
		u.uncharge(shard)
		return nil, unix.EAGAIN
	}
	child.user.Store(u)
	// dup_task_struct copied the caller's flags before copy_process clears
	// its PF_NPROC_EXCEEDED, once past the limit check.
	child.flags.set(flagNprocExceeded, t.flags.swap(flagNprocExceeded, false))
	undo := func() { u.uncharge(shard) }
	if limit := k.cfg.ThreadLimit; limit > 0 {
		if k.nrThreads.Add(1) > int64(limit) {
			k.nrThreads.Add(-1)
			undo()
			return nil, unix.EAGAIN // A8
		}
		undo = func() {
			k.nrThreads.Add(-1)
			u.uncharge(shard)
		}
	}

	ns, ipcNS, err := t.copyNamespaces(flags, creds)
	if err != nil {
		undo()
		return nil, err
	}
	p, serial, err := allocPID(ns, child, args.SetTID)
	if err != nil {
		undo()
		return nil, err
	}
	var pidfd cloneFD
	if flags&(unix.CLONE_PIDFD|unix.CLONE_FILES) != 0 || t.files.Load() != nil {
		if err = pidfd.open(t, child, p, flags, args.Pidfd); err != nil {
			p.put()
			undo()
			return nil, err
		}
	}
	if flags&unix.CLONE_INTO_CGROUP != 0 {
		pidfd.undo(child) // cgroup_can_fork: no descriptor names a cgroup
		p.put()
		undo()
		return nil, unix.EBADF
	}
	child.pid.Store(p)
	child.serial = serial
	child.nsForChildren.Store(ns)
	child.ipcNS.Store(ipcNS)
	if flags&unix.CLONE_SYSVSEM != 0 {
		child.semUndo.Store(t.undoList().Share()) // copy_semundo
	}

	// The child joins its user's list before it is published, so that a
	// PRIO_USER walk never misses a running task; walks skip embryos. It
	// takes its creator's process's shard of the list.
	u.addMember(child)
	var vforkDone chan struct{}
	if flags&unix.CLONE_VFORK != 0 {
		// A variable of its own, so that only a vfork puts one on the
		// heap.
		done := make(chan struct{})
		child.vforkDone.Store(&done)
		vforkDone = done
	}
	event, option := cloneTraceEvent(flags, args.ExitSignal&csignal)
	var tracer *Task // the tracer the child inherits, if any
	if flags&unix.CLONE_THREAD != 0 {
		tracer, err = t.linkThread(child, flags, option)
	} else {
		tracer, err = t.linkProcess(child, t.newThreadGroup(child, ns, serial, flags), flags, args.ExitSignal&csignal, option)
	}
	if err != nil {
		if ul := child.semUndo.Load(); ul != nil {
			ul.Release(p) // the caller still shares it: nothing is applied
		}
		if flags&unix.CLONE_THREAD == 0 {
			child.tg.dropMM()
			child.tg.sighand.Load().users.Add(-1)
		}
		pidfd.undo(child)
		u.removeMember(child)
		p.put()
		undo()
		return nil, err
	}
	pidfd.install()
	if args.Created != nil {
		args.Created(child)
	}
	child.finishInheritedTrace(tracer)
	if flags&unix.CLONE_UNTRACED == 0 {
		t.raiseTraceEvent(event, option)
	}
	if vforkDone != nil {
		if t.waitVforkDone(vforkDone) {
			t.raiseTraceEvent(unix.PTRACE_EVENT_VFORK_DONE, unix.PTRACE_O_TRACEVFORKDONE)
		}
		t.leaveKernel()
	}
	return child, nil
}

// cloneFD is what clone does with descriptor tables: the child's table
// (copy_files) and, with CLONE_PIDFD, the pidfd made for the child in the
// caller's table, reserved before the child is linked and installed once
// it is.
type cloneFD struct {
	table *FDTable
	fd    int
	file  *Pidfd
}

// open gives child its table and, with CLONE_PIDFD, reserves the pidfd's
// number and writes it to *out (__pidfd_prepare and its put_user). The
// child's copy is made first: a private table never holds the pidfd of
// its own task. Errors: EMFILE, EFAULT.
func (c *cloneFD) open(t, child *Task, p *PID, flags uint64, out *int) error {
	child.files.Store(t.filesFor(flags))
	if flags&unix.CLONE_PIDFD == 0 {
		return nil
	}
	c.table, c.fd = t.ownFiles(), -1
	fd, err := c.table.reserve(t.tg.rlimits.Load()[unix.RLIMIT_NOFILE].Cur)
	if err == nil && out == nil {
		c.table.install(fd, nil)
		err = unix.EFAULT
	}
	if err != nil {
		child.dropFiles()
		return err
	}
	c.fd, c.file = fd, &Pidfd{pid: p}
	if flags&unix.CLONE_THREAD != 0 {
		c.file.flags = PidfdThread
	}
	*out = fd
	return nil
}

// install puts the reserved pidfd in place (fd_install).
func (c *cloneFD) install() {
	if c.file != nil {
		c.table.install(c.fd, c.file)
	}
}

// undo gives back what open took, for a clone that failed.
func (c *cloneFD) undo(child *Task) {
	if c.file != nil {
		c.table.install(c.fd, nil)
	}
	child.dropFiles()
}

// checkCloneFlags is copy_process's flag validation (A1–A4).
func (t *Task) checkCloneFlags(flags uint64) error {
	has := func(f uint64) bool { return flags&f == f }
	switch {
	case has(unix.CLONE_NEWNS | unix.CLONE_FS), has(unix.CLONE_NEWUSER | unix.CLONE_FS):
		return unix.EINVAL
	case has(unix.CLONE_THREAD) && !has(unix.CLONE_SIGHAND):
		return unix.EINVAL
	case has(unix.CLONE_SIGHAND) && !has(unix.CLONE_VM):
		return unix.EINVAL
	case has(unix.CLONE_PARENT) && t.tg.unkillable:
		return unix.EINVAL // A3: inits never get siblings
	case has(unix.CLONE_THREAD) && (flags&(unix.CLONE_NEWUSER|unix.CLONE_NEWPID) != 0 ||
		t.nsForChildren.Load() != t.tg.ns):
		return unix.EINVAL // A4
	case has(unix.CLONE_NEWUSER):
		return unix.EINVAL // user namespaces are not modelled
	}
	return nil
}

// newThreadGroup makes the process a new child task leads (copy_signal),
// not yet linked anywhere.
func (t *Task) newThreadGroup(child *Task, ns *PIDNamespace, serial uint64, flags uint64) *ThreadGroup {
	parent := t.tg
	tg := newLoneThreadGroup(t.k, child, serial, ns)
	if flags&unix.CLONE_SIGHAND != 0 {
		sh := parent.sighand.Load()
		sh.users.Add(1)
		tg.sighand.Store(sh)
	} else if flags&unix.CLONE_CLEAR_SIGHAND != 0 {
		tg.startOwnSighand(flushedHandlers(parent.sighand.Load().table.Load()))
	} else {
		tg.startOwnSighand(parent.sighand.Load().table.Load())
	}
	tg.rlimits.Store(parent.rlimits.Load())
	tg.mm.Store(parent.copyMM(flags))
	tg.hasChildSubreaper.Store(parent.hasChildSubreaper.Load() || parent.isChildSubreaper.Load())
	tg.execSeq.Store(parent.execSeq.Load())
	tg.nonDumpable.Store(parent.nonDumpable.Load())
	// is_child_reaper: whoever gets pid 1 of a namespace is its init.
	tg.unkillable = child.pid.Load().nrs[ns.level] == 1
	if tg.unkillable {
		ns.childReaper.Store(child)
	}
	return tg
}

// linkThread adds a new thread to the caller's process.
func (t *Task) linkThread(child *Task, flags, traceOption uint64) (tracer *Task, err error) {
	tg := t.tg
	child.tg = tg
	p := t.k.plan
	for {
		// A plan's table lock: copy_process links the thread under it.
		p.Lock(plan.CloneLink)
		// The process lock orders the link against exit_group and fatal
		// signals: a thread is either linked before the group exit (and
		// is killed with its siblings) or not at all.
		tg.mu.Lock()
		if resume := t.stopWaitLocked(); resume != nil {
			dying := t.dyingChanLocked()
			tg.mu.Unlock()
			p.Unlock(plan.CloneLink)
			sleepUntil(resume, dying)
			continue
		}
		tracer, err = t.linkThreadLocked(child, flags, traceOption)
		tg.mu.Unlock()
		p.Unlock(plan.CloneLink)
		return tracer, err
	}
}

// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) linkThreadLocked(child *Task, flags, traceOption uint64) (*Task, error) {
	tg := t.tg
	if tg.groupExiting || tg.execTask != nil || t.killPending {
		return nil, unix.EINTR // group_exec_task: no thread joins an exec
	}
	t.inheritMaskLocked(child)
	tracer := t.inheritTraceLocked(child, flags, traceOption)
	if !child.state.CompareAndSwap(taskEmbryo, taskRunning) {
		return nil, unix.ENOMEM // the namespace's init died meanwhile
	}
	tg.addThreadLocked(child)
	tg.liveThreads++
	return tracer, nil
}

// linkProcess makes the new process ctg a child of the caller (or, with
// CLONE_PARENT, of the caller's parent) and a member of the caller's
// process group, and publishes it.
func (t *Task) linkProcess(child *Task, ctg *ThreadGroup, flags uint64, exitSignal int, traceOption uint64) (*Task, error) {
	tg := t.tg
	p := t.k.plan
	for {
		// A plan's table lock: copy_process links the child under it.
		p.Lock(plan.CloneLink)
		pg := tg.pgrp.Load()
		parent := t
		if flags&unix.CLONE_PARENT != 0 {
			parent = tg.parent.Load()
		}
		// The group's lock makes joining it atomic against a walk over
		// the group (kill of a process group): the fork holds its shard
		// for reading, which the walks' writing excludes and other forks
		// and releases share (joinPgrpLocked). The parent's lock guards
		// its children list and orders the link against the parent's
		// reparenting. With CLONE_PARENT the caller's own lock, which
		// comes after its parent's, orders the link against the caller's
		// group exit.
		pg.mu.RLock(child.userShard)
		lockPair(parent.tg, tg)
		step := t.linkProcessLocked(child, ctg, parent, pg, flags, exitSignal, traceOption)
		unlockPair(parent.tg, tg)
		pg.mu.RUnlock(child.userShard)
		p.Unlock(plan.CloneLink)
		if !step.retry {
			return step.tracer, step.err
		}
		if step.resume != nil {
			sleepUntil(step.resume, step.dying)
		}
	}
}

// linkStep is what one try at linking a new process came to: the tracer
// it inherited, or an error, or a retry, after sleeping until resume or
// dying closes if resume is set.
type linkStep struct {
	tracer        *Task
	err           error
	retry         bool
	resume, dying <-chan struct{}
}

// linkProcessLocked is linkProcess's work under the locks: unless the
// caller's group or parent moved meanwhile (retry at once) or the caller
// must first be continued (retry once resumed), the child joins parent's
// children and group pg and is published.
//
// Preconditions: parent.tg.mu and t.tg.mu are held; pg's shard of
// child is held for reading; child is unpublished.
//
// +checklocks:parent.tg.mu
// +checklocks:t.tg.mu
func (t *Task) linkProcessLocked(child *Task, ctg *ThreadGroup, parent *Task, pg *ProcessGroup,
	flags uint64, exitSignal int, traceOption uint64) linkStep {
	tg, ptg := t.tg, parent.tg
	if tg.pgrp.Load() != pg || (parent != t && (tg.parent.Load() != parent || parent.flags.has(flagChildrenClosed))) {
		return linkStep{retry: true} // moved meanwhile: start over with the new owners
	}
	if tg.groupExiting || t.killPending {
		return linkStep{err: unix.EINTR}
	}
	// A process with a stop pending or in effect forks only once it is
	// continued: Linux restarts a fork that a group signal interrupts,
	// so the child either got the stop too or is created after the
	// continue.
	if resume := t.stopWaitLocked(); resume != nil {
		return linkStep{retry: true, resume: resume, dying: t.dyingChanLocked()}
	}
	// Everything a lockless lookup may read is set before the CAS
	// publishes the task (A15); the lists, which only holders of the
	// locks held here can read, may follow it.
	if parent == t {
		ctg.exitSignal = int32(exitSignal)
		ctg.parentExecSeq = tg.execSeq.Load()
	} else {
		ctg.exitSignal = tg.exitSignal
		ctg.parentExecSeq = tg.parentExecSeq
	}
	ptg.adoptLocked(ctg, parent)
	if ptg.hasChildSubreaper.Load() || ptg.isChildSubreaper.Load() {
		ctg.hasChildSubreaper.Store(true)
	}
	ctg.pgrp.Store(pg)
	t.inheritMaskLocked(child)
	tracer := t.inheritTraceLocked(child, flags, traceOption)
	if !child.state.CompareAndSwap(taskEmbryo, taskRunning) {
		parent.nrChildren.Add(-1) // undo adoptLocked: the child never existed
		return linkStep{err: unix.ENOMEM}
	}
	ptg.children.pushBack(ctg, siblingLinkOf)
	ptg.nrChildren[waitClass(ctg.exitSignal)]++
	pg.joinPgrpLocked(ctg)
	// Only after the CAS: a kill(-1) walk that this misses registered
	// after it, so the walk finds the child published.
	tg.noteForkLocked(ctg)
	return linkStep{tracer: tracer}
}

// newLoneThreadGroup makes a process whose only thread is leader, not yet
// reachable by anyone else.
func newLoneThreadGroup(k *Kernel, leader *Task, serial uint64, ns *PIDNamespace) *ThreadGroup {
	tg := &ThreadGroup{k: k, serial: serial, ns: ns, parentView: parentView{readyIdx: -1, jobIdx: -1}}
	tg.initLock()
	tg.leader.Store(leader)
	leader.tg = tg
	// Nobody else can reach tg yet; the lock only satisfies the
	// annotations of the fields it guards.
	tg.mu.Lock()
	tg.addThreadLocked(leader)
	tg.liveThreads = 1
	tg.mu.Unlock()
	return tg
}

// newInit creates the root namespace's init.
func (k *Kernel) newInit(limits rlimitTable) (*Task, error) {
	t := &Task{k: k, sleepingOn: sleepSlot{k: k}}
	t.creds.Store(rootCreds())
	p, serial, err := allocPID(k.rootNS, t, nil)
	if err != nil {
		return nil, err
	}
	t.pid.Store(p)
	t.serial = serial
	t.started = k.now()
	t.nsForChildren.Store(k.rootNS)
	t.ipcNS.Store(sem.NewNamespaceLocking(k.cfg.SemLimits, k.plan.SemLocking()))
	tg := newLoneThreadGroup(k, t, serial, k.rootNS)
	tg.unkillable = true
	tg.startOwnSighand(&sigTable{})
	tg.rlimits.Store(&limits)
	// Nobody else can reach init yet: the lock only satisfies the
	// annotations of the fields it guards.
	g := newProcessGroup(p, newSession(p))
	g.mu.Lock()
	g.members.join(tg, g.mu.epochLocked())
	g.mu.Unlock()
	tg.pgrp.Store(g)
	u := k.user(0)
	t.user.Store(u)
	u.addMember(t)
	k.rootNS.childReaper.Store(t)
	if k.cfg.ThreadLimit > 0 {
		k.nrThreads.Add(1)
	}
	t.state.advance(taskEmbryo, taskRunning)
	return t, nil
}
