package kernel

import (
	"golang.org/x/sys/unix"

	"tasklist/plan"
)

// Execve is the part of execve(2) the process model sees (fs/exec.c
// begin_new_exec): de_thread kills every other thread of the caller's
// process and, when the caller is not the leader, gives it the leader's
// pid and releases the old leader; the process's exec counter
// (self_exec_id) moves on, so its children's exit signals become SIGCHLD
// (B7); signal handlers return to SIG_DFL, SIG_IGN aside, with no flags
// (flush_signal_handlers), in a table of the process's own
// (unshare_sighand); the process's exit signal becomes SIGCHLD, whichever
// thread execs, so a child cloned with another exit signal is waited for
// without __WCLONE from then on; and the process is marked as exec'd,
// which setpgid by its parent refuses with EACCES (E1). The saved and filesystem ids
// become the effective ones, and the process is dumpable again if its
// real and effective ids agree. The caller's descriptor table is
// unshared and its close-on-exec descriptors closed, which leaves no pidfd.
//
// Once de_thread has started no thread may join the process (Linux's
// group_exec_task and the SIGKILL each sibling gets): a sibling's clone
// fails with EINTR, and a sibling's exit_group ends only that sibling.
//
// Errors: ESRCH if the caller has exited; EAGAIN when a set*uid left the
// caller over its RLIMIT_NPROC and its user still is, when its process is
// already exiting or another thread's exec is under way; EINTR when the
// caller is killed meanwhile (its exit is then under way).
func (t *Task) Execve() error {
	// de_thread sleeps until the other threads are gone; a kill
	// meanwhile ends the caller once the call has returned (call.go).
	if !t.enterCall() {
		return unix.ESRCH
	}
	defer t.leaveCall()
	if err := t.checkNprocAtExec(); err != nil {
		return err
	}
	tg := t.tg
	var victims []*Task
	for {
		// The process lock orders the start of de_thread against clone
		// of a thread, group exits and fatal signals.
		tg.mu.Lock()
		if t.state.Load() != taskRunning {
			tg.mu.Unlock()
			return unix.ESRCH
		}
		if resume := t.stopWaitLocked(); resume != nil {
			dying := t.dyingChanLocked()
			tg.mu.Unlock()
			sleepUntil(resume, dying)
			continue
		}
		if tg.groupExiting || tg.execTask != nil || t.killPending {
			tg.mu.Unlock()
			return unix.EAGAIN
		}
		tg.execTask, tg.execRequeued = t, 0
		t.jobctl.set(jobctlInKernel) // until the exec returns
		// zap_other_threads: the siblings exit with status 0, as
		// do_group_exit makes them while group_exec_task is set.
		for th := tg.threads.head; th != nil; th = th.threadLink.next {
			if th != t && th.state.Load() == taskRunning {
				victims = append(victims, th)
			}
		}
		for _, th := range victims {
			th.assertProcessLocked() // +checklocksforce: th is a thread of tg
			th.beginExitLocked(0, true)
		}
		tg.releaseHeldExitsLocked(t)
		tg.mu.Unlock()
		break
	}
	// Exits the siblings' start (their children's parent-death signals)
	// run once the exec is done.
	var q exitQueue
	defer q.run(t.k)
	t.k.finishExits(victims, &q)
	old, err := t.deThread(&q)
	if err != nil {
		return err
	}
	t.tg.resetExitSignal()
	if old != nil {
		// release_task(leader), after the locks, in a table section of
		// its own under a plan.
		t.k.plan.Lock(plan.Release)
		old.untrace()
		old.endRelease()
	}
	t.releaseVforkParent() // exec_mm_release
	t.tg.dropMM()          // exec_mmap: a private address space
	t.dropFiles()          // unshare_files, and every pidfd is close-on-exec
	t.takeRequeuedSignals(&q)
	t.execTrap()
	t.leaveKernel()
	return nil
}

// takeRequeuedSignals acts on the signals that the threads the exec killed
// put back on the process's queue (requeueStopSignalLocked): the exec'ing
// thread, the only one left, dequeues them with the new image's handlers,
// after its PTRACE_EVENT_EXEC stop if it is traced. Exits a fatal one
// starts join q.
func (t *Task) takeRequeuedSignals(q *exitQueue) {
	tg := t.tg
	var b exitBatch
	// The process lock guards the queue and orders the delivery against
	// other signals.
	tg.mu.Lock()
	for pending := tg.execRequeued; pending != 0; {
		sig := nextSignal(pending)
		pending &^= sigBit(sig)
		// Queued past an init's send-time filter, as a tracee's signals
		// are: get_signal lets only SIGKILL and SIGSTOP act on an init.
		tg.sendSignalToLocked(t, true, sig, true, &b)
	}
	tg.execRequeued = 0
	tg.mu.Unlock()
	q.push(b)
}

// execTrap is exec's ptrace_event(PTRACE_EVENT_EXEC): a tracee with
// PTRACE_O_TRACEEXEC stops for the event; one attached without
// PTRACE_SEIZE and without the option is sent SIGTRAP instead. Either way
// it stops before the new image runs.
func (t *Task) execTrap() {
	tg := t.tg
	// The process lock guards the thread's ptrace state.
	tg.mu.Lock()
	switch {
	case t.tracer.Load() == nil:
	case t.ptraceOptions&unix.PTRACE_O_TRACEEXEC != 0:
		t.eventOwed = int32(unix.SIGTRAP) | unix.PTRACE_EVENT_EXEC<<8
		t.nextTraceEventLocked()
	case !t.jobctl.has(jobctlSeized):
		tg.sendThreadSignalLocked(t, int(unix.SIGTRAP), false)
	}
	tg.mu.Unlock()
}

// releaseHeldExitsLocked is zap_other_threads' SIGKILL to the threads
// other than the exec'ing one whose exits wait at PTRACE_EVENT_EXIT (no
// exit_state yet): the fatal wake-up ends the stop and the exits go on.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) releaseHeldExitsLocked(execing *Task) {
	for th := tg.threads.head; th != nil; th = th.threadLink.next {
		th.assertProcessLocked() // +checklocksforce: th is a thread of tg
		if th != execing {
			th.releaseExitLocked()
		}
	}
}

// resetExitSignal is de_thread's "tsk->exit_signal = SIGCHLD", which every
// exec reaches, by the leader or not: from then on the process notifies
// its parent with SIGCHLD and is waited for without __WCLONE.
func (tg *ThreadGroup) resetExitSignal() {
	if tg.parent.Load() == nil {
		return // the root init has no parent to notify
	}
	// The parent's lock guards the child's exit signal and the per-class
	// counts and queues that follow from it.
	ptg := tg.lockParentOf()
	ptg.setExitSignalLocked(tg, int32(unix.SIGCHLD))
	ptg.mu.Unlock()
}

// deThread waits until the caller is its process's only thread but for a
// zombie leader (de_thread's wait for notify_count, which __exit_signal
// counts down as each killed sibling is released), then takes over the
// leader's place and does the rest of exec's process-wide work. It returns
// the old leader, to be released by the caller, or nil.
//
// A sibling that is traced is released only once its tracer's wait has
// reaped it, so the exec sleeps until then: killably, and visibly to
// Sleeping, as the exec cannot go on before the tracer acts. The exits
// the siblings' exits started (q) run before it sleeps, as on Linux,
// where the killed siblings have finished exiting by then.
func (t *Task) deThread(q *exitQueue) (*Task, error) {
	tg := t.tg
	// Only exec can change the leader, and t's exec holds execTask: a
	// non-leader takes the leader's place in a table section (the swap
	// under tasklist_lock), taken before the process lock.
	site := plan.ExecSwap
	if tg.leader.Load() == t {
		site = plan.NoSite
	}
	p := t.k.plan
	for slept := false; ; slept = true {
		p.Lock(site)
		// The process lock guards the thread list and the states the
		// siblings' exits change under it.
		tg.mu.Lock()
		// de_thread looks for a fatal signal after each sleep, before
		// it counts the siblings again; a kill that came before the
		// first count lets an exec with nothing to wait for complete.
		if slept && t.killPending {
			// Killed while waiting: the kill's exit takes over.
			tg.endExecLocked()
			t.jobctl.clear(jobctlInKernel)
			tg.mu.Unlock()
			p.Unlock(site)
			return nil, unix.EINTR
		}
		leader := tg.leader.Load()
		others := tg.threads.len - 1
		if leader != t && leader.state.Load() == taskZombie {
			others--
		}
		if others > 0 {
			wake := tg.execWaitChanLocked()
			dying := t.dyingChanLocked()
			tg.mu.Unlock()
			p.Unlock(site)
			q.run(t.k)
			t.sleepingOn.Store(&sleep{wake: wake, dying: dying})
			sleepUntil(wake, dying)
			t.sleepingOn.Store(nil)
			continue
		}
		var old *Task
		if leader != t {
			old = leader
			t.exchangeLeaderLocked(old)
		}
		tg.endExecLocked()
		tg.execed.Store(true)
		c := execCreds(t.creds.Load())
		t.creds.Store(c)
		tg.nonDumpable.Store(c.UID != c.EUID || c.GID != c.EGID) // begin_new_exec's set_dumpable
		tg.execSeq.Add(1)
		shared := tg.sighand.Swap(newSignalHandlers(flushedHandlers(tg.sighand.Load().table.Load())))
		shared.users.Add(-1) // unshare_sighand: it leaves a table it may have shared
		tg.mu.Unlock()
		p.Unlock(site)
		return old, nil
	}
}

// exchangeLeaderLocked makes t, a thread that is exec'ing, the leader of
// its process in place of old, a zombie: the two swap pids in every
// namespace level (exchange_tids), so the old leader leaves with t's tid
// and t keeps the tgid, the process group and session ids and the place
// on the parent's children list, which the model keeps per process.
//
// Preconditions: t.tg.mu is held; old is t's process's zombie leader and
// t the process's only other thread.
//
// +checklocks:t.tg.mu
func (t *Task) exchangeLeaderLocked(old *Task) {
	tg := t.tg
	lp, tp := old.pid.Load(), t.pid.Load()
	t.pid.Store(lp)
	old.pid.Store(tp)
	lp.task.Store(t)
	tp.task.Store(old)
	tg.leader.Store(t)
	if tg.ns.childReaper.Load() == old {
		tg.ns.childReaper.Store(t)
	}
	old.state.advance(taskZombie, taskDead)
	tg.removeThreadLocked(old)
}

// execCreds are the credentials after exec of a file with no set-id bits
// or capabilities (cap_bprm_creds_from_file): the saved and filesystem
// ids follow the effective ones, and a process with no root uid keeps no
// capability.
func execCreds(old *Creds) *Creds {
	c := *old
	c.SUID, c.FSUID = c.EUID, c.EUID
	c.SGID, c.FSGID = c.EGID, c.EGID
	if c.UID != 0 && c.EUID != 0 {
		c.CapPermitted, c.CapEffective = 0, 0
	}
	return &c
}

// flushedHandlers is flush_signal_handlers(t, 0): every handled signal
// returns to SIG_DFL, an ignored one stays ignored, and no flag is kept.
func flushedHandlers(cur *sigTable) *sigTable {
	var next sigTable
	for i, act := range cur {
		if act.Handler == SigIgn {
			next[i].Handler = SigIgn
		}
	}
	return &next
}

// execWaitChanLocked returns the channel closed when a thread of tg that
// an exec waits for becomes a zombie or is released.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) execWaitChanLocked() chan struct{} {
	if tg.execWait == nil {
		tg.execWait = make(chan struct{})
	}
	return tg.execWait
}

// endExecLocked ends an exec's hold on its process: group_exec_task is
// cleared, and so is what the model keeps of signal->cred_guard_mutex,
// which the exec held from prepare_bprm_creds through de_thread: an
// attach waiting for it goes on. Stop signals sent during the exec are
// acted on now (doSignalStop), as the thread dequeues them on its way
// back to user space.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) endExecLocked() {
	tg.execTask = nil
	if tg.stopPending != 0 {
		tg.k.goAsync(tg.doSignalStop)
	}
	if tg.credGuardFree != nil {
		close(tg.credGuardFree)
		tg.credGuardFree = nil
	}
}

// credGuardChanLocked returns, while an exec of tg holds its
// cred_guard_mutex, a channel closed when it lets go; nil when it does
// not hold it.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) credGuardChanLocked() chan struct{} {
	if tg.execTask == nil {
		return nil
	}
	if tg.credGuardFree == nil {
		tg.credGuardFree = make(chan struct{})
	}
	return tg.credGuardFree
}

// wakeExecLocked wakes an exec waiting for its siblings to be gone.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) wakeExecLocked() {
	if tg.execWait != nil {
		close(tg.execWait)
		tg.execWait = nil
	}
}

// Execed reports whether the process has exec'd since its fork (the
// clearing of PF_FORKNOEXEC).
func (tg *ThreadGroup) Execed() bool { return tg.execed.Load() }
