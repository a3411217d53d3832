package kernel

import (
	"golang.org/x/sys/unix"

	"tasklist/plan"
)

// Exit is exit(2): it ends the calling thread only (B1); the process ends
// with its last thread, whose status becomes the process's unless a group
// exit set one (B3). Exit returns once the thread has exited, except for a
// namespace init whose namespace must empty first (B11): that tail runs
// asynchronously and Kernel.Quiesce waits for it; and for a thread whose
// tracer holds it at PTRACE_EVENT_EXIT, whose exit goes on once the tracer
// resumes it (the task is Stopped until then; WaitRunnable waits for it).
// Errors: ESRCH if the caller already exited; ErrInitExit for the last
// thread of the root init (B4).
func (t *Task) Exit(code int) error { return t.exitCall(int32(code&0xff)<<8, false) }

// ExitGroup is exit_group(2) (do_group_exit): the first group exit code
// wins and every other live thread is killed (B2). Errors: ESRCH if the
// caller already exited; ErrInitExit for the root init.
func (t *Task) ExitGroup(code int) error { return t.exitCall(int32(code&0xff)<<8, true) }

// exitCall is exit and exit_group: the start of do_exit for the caller
// (with group, for every thread of its process) under the locks that
// order it, then the rest of each exit.
func (t *Task) exitCall(status int32, group bool) error {
	tg := t.tg
	p := t.k.plan
	// A plan's table lock, where the plan takes one for do_exit's start.
	p.Lock(plan.ExitStart)
	// The process lock orders PF_EXITING and the live count against
	// clone of a thread, group exits and reparenting onto this process;
	// a group exit changes the group-exit state and every thread's
	// PF_EXITING in one critical section, so no thread can adopt
	// another's children or be cloned in between.
	tg.mu.Lock()
	victims, err := t.beginExitCallLocked(status, group)
	tg.mu.Unlock()
	p.Unlock(plan.ExitStart)
	switch {
	case err != nil:
		return err
	case victims == nil:
		t.k.finishAll([]*Task{t}) // on the stack: exit's fast path allocates nothing here
	default:
		t.k.finishAll(victims)
	}
	return nil
}

// beginExitCallLocked marks the threads exit or exit_group ends as
// exiting and returns them, nil when the caller is the only one.
//
// Preconditions: t.tg.mu is held.
//
// +checklocks:t.tg.mu
func (t *Task) beginExitCallLocked(status int32, group bool) ([]*Task, error) {
	tg := t.tg
	switch {
	case t.state.Load() != taskRunning:
		return nil, unix.ESRCH
	case tg == t.k.init.tg && (group || tg.liveThreads == 1):
		return nil, ErrInitExit
	case !group:
		t.beginExitLocked(status, true)
		return nil, nil
	case tg.execTask != nil && !tg.groupExiting:
		// Another thread's exec is killing its siblings: do_group_exit
		// ends only the caller, with status 0.
		t.beginExitLocked(0, true)
		return nil, nil
	}
	if tg.liveThreads > 1 {
		tg.groupExiting = true
		tg.groupExitCode = status
		tg.markGroupExit(status)
	}
	tg.endJobControlLocked()
	return tg.beginExitAllLocked(status, true), nil
}

// groupExitSet is the bit groupExitMark carries beside the status once
// it is set (a status may be 0).
const groupExitSet = 1 << 16

// markGroupExit publishes SIGNAL_GROUP_EXIT with the process's status.
func (tg *ThreadGroup) markGroupExit(status int32) { tg.groupExitMark.Store(status | groupExitSet) }

// groupExitStatus returns the status markGroupExit published, and whether
// it has been.
func (tg *ThreadGroup) groupExitStatus() (int32, bool) {
	mark := tg.groupExitMark.Load()
	return mark &^ groupExitSet, mark != 0
}

// beginExitLocked is the start of do_exit: PF_EXITING and the live count.
// The thread that takes the count to zero fixes the process's status.
// wake is markKilledLocked's: false for a thread an exit batch kills.
//
// Preconditions: t.tg.mu is held; t is running.
//
// +checklocks:t.tg.mu
func (t *Task) beginExitLocked(status int32, wake bool) {
	tg := t.tg
	if t.jobctl.take(jobctlStopPending | jobctlStopInCall) {
		// exit_signals: a thread that owes the group stop takes part
		// in it as it exits.
		tg.participateLocked()
	}
	t.state.advance(taskRunning, taskExiting)
	t.exitCode = status
	t.flags.set(flagExitEventDue, t.tracer.Load() != nil && t.ptraceOptions&unix.PTRACE_O_TRACEEXIT != 0)
	t.markKilledLocked(wake)
	tg.liveThreads--
	if tg.liveThreads == 0 {
		t.flags.set(flagGroupDead, true)
		tg.exitStatus = status
		if tg.groupExiting {
			tg.exitStatus = tg.groupExitCode
		}
		// synchronize_group_exit: the last thread's exit is a group exit
		// with its status, and signal->flags = SIGNAL_GROUP_EXIT drops a
		// continue not yet reported.
		tg.markGroupExit(tg.exitStatus)
		if tg.continued.Load() {
			tg.continued.Store(false)
		}
	}
}

// beginExitAllLocked starts the exit of every running thread of tg; wake
// as for beginExitLocked.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) beginExitAllLocked(status int32, wake bool) []*Task {
	var victims []*Task
	for t := tg.threads.head; t != nil; t = t.threadLink.next {
		if t.state.Load() == taskRunning {
			victims = append(victims, t)
		}
	}
	for _, t := range victims {
		t.assertProcessLocked() // +checklocksforce: t is a thread of tg
		t.beginExitLocked(status, wake)
	}
	return victims
}

// finishAll is finishExits for the exits a call ends with: those they
// start run after them, on a goroutine of their own.
func (k *Kernel) finishAll(ts []*Task) {
	var q exitQueue
	k.finishExits(ts, &q)
	q.run(k)
}

// finishExits runs the rest of do_exit for threads already marked exiting;
// the exits they start join q. Threads killed in a call exit once their
// calls have returned (call.go), and the batch's other exits wait for
// that too: a woken call scans at once, while do_exit has a long way to
// go to exit_notify, so the call sees its process's children before
// another thread's exit hands them on (find_alive_thread does not pass
// over a thread still in its call). A namespace's child reaper goes last:
// its exit may have to wait for the others' pids to be freed.
func (k *Kernel) finishExits(ts []*Task, q *exitQueue) {
	for _, t := range ts {
		t.awaitCallEnd()
	}
	for i, t := range ts {
		if t.tg.ns.childReaper.Load() == t {
			last := len(ts) - 1
			ts[i], ts[last] = ts[last], ts[i]
			break
		}
	}
	for _, t := range ts {
		if !t.holdExitForTracer() {
			t.exitNotify(q)
		}
	}
}

// wakeKilled is wakeKilledLocked under the thread's process lock.
func (t *Task) wakeKilled() {
	// The process lock guards the kill's channels and the interrupt.
	t.tg.mu.Lock()
	t.wakeKilledLocked()
	t.tg.mu.Unlock()
}

// exitNotify is exit_notify: hand the children to a reaper, become a
// zombie, and tell the parent or reap oneself. What it finds dead is
// released once its section is over, as exit_notify releases its dead
// list after write_unlock_irq(&tasklist_lock). The exits it starts join q.
func (t *Task) exitNotify(q *exitQueue) {
	t.releaseVforkParent() // exit_mm's mm_release
	if t.flags.has(flagGroupDead) {
		t.tg.dropMM() // exit_mm of the process's last thread
	}
	t.exitSem()
	t.dropFiles() // exit_files
	var dead deadList
	t.exitPtrace(&dead, q)
	p := t.k.plan
	// A plan's table lock: exit_notify reparents the children and tells
	// the parent under it.
	p.Lock(plan.ExitNotify)
	zap, zombie := t.forgetOriginalParent(&dead, q)
	if zap {
		// find_child_reaper drops the lock for zap_pid_ns_processes, and
		// releases the dead tracees first (seed 001, docs/seeds.md).
		p.Unlock(plan.ExitNotify)
		dead.release()
		t.zapPIDNamespace(q) // it resumes with becomeZombie once the namespace is empty
		p.Lock(plan.ExitNotify)
	}
	if t.flags.has(flagGroupDead) {
		// The process's own group may lose its last link to the rest
		// of the session with it (kill_orphaned_pgrp(leader, NULL)).
		tg := t.tg
		if pp := tg.parent.Load(); pp != nil {
			killOrphanedPgrp(tg, pp.tg, tg, q)
		}
	}
	if !zap && !zombie {
		t.becomeZombie(&dead)
	}
	p.Unlock(plan.ExitNotify)
	dead.release()
}

// deadList collects the tasks a table section finds dead, to be released
// once the section is over (release_task never runs inside another
// section's hold of the table lock).
type deadList struct {
	threads deadQueue[*Task]        // non-leader threads: releaseThread
	groups  deadQueue[*ThreadGroup] // processes whose leader was claimed: release
}

// release releases everything collected, threads first.
func (d *deadList) release() {
	if d.threads.first != nil || d.groups.first != nil {
		d.releaseAll()
	}
}

func (d *deadList) releaseAll() {
	d.threads.each((*Task).releaseThread)
	d.groups.each((*ThreadGroup).release)
}

// add moves everything collected in from onto d.
func (d *deadList) add(from *deadList) {
	from.threads.each(d.threads.push)
	from.groups.each(d.groups.push)
}

// deadQueue is a list that keeps its first element inline: a section most
// often finds one thing dead, and then collecting it allocates nothing.
type deadQueue[T comparable] struct {
	first T
	rest  []T
}

func (q *deadQueue[T]) push(v T) {
	var none T
	if q.first == none {
		q.first = v
		return
	}
	q.rest = append(q.rest, v)
}

// each calls f on the elements in the order they were pushed.
func (q *deadQueue[T]) each(f func(T)) {
	var none T
	if q.first == none {
		return
	}
	f(q.first)
	for _, v := range q.rest {
		f(v)
	}
}

// inSection runs f in a table section of its own at site (a plan's table
// lock, if it takes one there) and releases what f finds dead once the
// section is over.
func (k *Kernel) inSection(site plan.Site, f func(dead *deadList)) {
	var dead deadList
	k.plan.Lock(site)
	f(&dead)
	k.plan.Unlock(site)
	dead.release()
}

// becomeZombieNow is becomeZombie in a table section of its own, for an
// exit that resumes after a zap (zap_pid_ns_processes returns to
// find_child_reaper, which takes the lock again).
func (t *Task) becomeZombieNow() { t.k.inSection(plan.ExitNotify, t.becomeZombie) }

// becomeZombieLocked is becomeZombie for a leader whose parent process's
// lock is held as well as its own: it reports whether the process must be
// reaped at once (autoreap).
//
// Preconditions: t.tg.mu and ptg.mu are held; t is its process's leader;
// ptg is the parent process.
//
// +checklocks:t.tg.mu
// +checklocks:ptg.mu
func (t *Task) becomeZombieLocked(ptg *ThreadGroup) bool {
	tg := t.tg
	t.state.advance(taskExiting, taskZombie)
	if !tg.claimLeaderNotifyLocked() {
		// Other threads left (B6); a tracer in ptg hears of the
		// zombie all the same.
		if tracer := t.tracer.Load(); tracer != nil && tracer.tg == ptg {
			ptg.signalTracerLocked(tracer, t)
		}
		return false
	}
	return tg.notifyParentLocked(ptg)
}

// becomeZombie is the end of exit_notify (B5, B6): a non-leader thread
// reaps itself unless it is traced, when it waits for its tracer's wait
// (and keeps a zombie leader waiting with it); the leader notifies the
// parent once the group is empty, and is reaped at once if the parent
// does not want it. What is to be reaped goes on dead.
func (t *Task) becomeZombie(dead *deadList) {
	tg := t.tg
	notify, selfReap := false, false
	// The process lock makes "leader is a zombie" and "no other thread
	// left" one state, so exactly one thread notifies the parent.
	tg.mu.Lock()
	t.state.advance(taskExiting, taskZombie)
	if t == tg.leader.Load() {
		notify = tg.claimLeaderNotifyLocked()
		tg.wakeExecLocked()
	} else {
		selfReap = true
	}
	tg.mu.Unlock()
	switch {
	case selfReap:
		if t.notifyTracer() {
			dead.threads.push(t)
		}
	case notify:
		if tg.notifyParent() {
			dead.groups.push(tg)
		}
	default:
		t.signalTracer()
	}
}

// signalTracer is exit_notify's do_notify_parent for a traced leader
// whose other threads live on: its tracer is sent SIGCHLD and its waiters
// wake, though it cannot reap the zombie until the process is empty
// (delay_group_leader); it is notified again then.
func (t *Task) signalTracer() {
	tracer := t.tracer.Load()
	if tracer == nil {
		return
	}
	ttg := tracer.tg
	// The tracer's lock guards its signal delivery and its waiters.
	ttg.mu.Lock()
	if t.tracer.Load() == tracer {
		ttg.signalTracerLocked(tracer, t)
	}
	ttg.mu.Unlock()
}

// signalTracerLocked sends SIGCHLD for tracee c through its tracer thread
// and wakes the tracer's waiters.
//
// Preconditions: tg.mu is held; tracer, a thread of tg, traces c.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) signalTracerLocked(tracer, c *Task) {
	tg.sendSignalViaLocked(tracer, int(unix.SIGCHLD), false, nil)
	tg.wakeWaitersLocked(c)
}

// claimLeaderNotifyLocked reports whether the caller is the one to notify
// the parent about the zombie leader: the leader is a zombie, no other
// thread is left, and nobody claimed it before.
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) claimLeaderNotifyLocked() bool {
	if tg.leaderNotifyClaimed || tg.threads.len != 1 || tg.leader.Load().state.Load() != taskZombie {
		return false
	}
	tg.leaderNotifyClaimed = true
	return true
}

// releaseThread is release_task for a thread other than the leader. When
// it was the last one besides a zombie leader, the leader's parent is
// notified now (B6).
func (t *Task) releaseThread() {
	tg := t.tg
	// A plan's table lock: release_task unhashes the task under it.
	t.k.plan.Lock(plan.Release)
	// The process lock guards the thread list and the leader's pending
	// notification.
	tg.mu.Lock()
	t.state.advance(taskZombie, taskDead)
	tg.removeThreadLocked(t)
	notify := tg.claimLeaderNotifyLocked()
	tg.wakeExecLocked()
	tg.mu.Unlock()
	t.endRelease()
	if notify {
		// The thread's pid is gone before the parent hears of the
		// leader, so a parent that reaps the process finds every pid of
		// it freed. release_task tells the parent under the table lock
		// and releases the leader after it (zap_leader).
		t.k.plan.Lock(plan.Release)
		zapLeader := tg.notifyParent()
		t.k.plan.Unlock(plan.Release)
		if zapLeader {
			tg.release()
		}
	}
}

// release is release_task for a process whose zombie leader was claimed
// or autoreaped: the leader leaves the thread list and its process group,
// and its pid is freed after every lock is dropped.
func (tg *ThreadGroup) release() {
	leader := tg.leader.Load()
	// A plan's table lock: release_task unhashes the task under it.
	tg.k.plan.Lock(plan.Release)
	// The process lock guards the thread list.
	tg.mu.Lock()
	leader.state.advance(taskZombie, taskDead)
	tg.removeThreadLocked(leader)
	tg.mu.Unlock()
	leader.untrace()
	tg.leavePgrp()
	tg.sighand.Load().users.Add(-1) // __cleanup_sighand
	leader.endRelease()
}

// endRelease ends release_task's section, which the caller holds (the
// plan's Release site), and drops what the released task held: its pid,
// its place on its user's list and its RLIMIT_NPROC charge, and its place
// in the thread count; and it mixes the task's runtime into the entropy
// pool. No kernel lock is held. The pid is freed and the entropy fed
// after the section (release_task_post in Linux 6.15; seed 004) unless a
// plan models a Linux that did them inside.
func (t *Task) endRelease() {
	if p := t.k.plan; p != nil && p.Mode(plan.Release) != plan.None {
		t.endReleaseSection(p)
		return
	}
	// feedEntropy, dropCharges and freePID, written out: this is every
	// release's path under tasklist's own locking.
	t.k.entropy.Add(uint64(t.userShard), uint64(t.k.now()-t.started))
	t.dropCharges()
	pid := t.pid.Load()
	pid.task.CompareAndSwap(t, nil)
	pid.put()
}

// endReleaseSection is endRelease under a plan that takes its table lock
// in release_task.
func (t *Task) endReleaseSection(p *plan.Plan) {
	entropyInside := !p.Has(plan.EntropyOutsideLock)
	pidInside := !p.Has(plan.FreePIDOutsideLock)
	if entropyInside {
		t.feedEntropy()
	}
	if pidInside {
		t.freePID()
	}
	p.Unlock(plan.Release)
	if !entropyInside {
		t.feedEntropy()
	}
	t.dropCharges()
	if !pidInside {
		t.freePID()
	}
}

// feedEntropy mixes the task's runtime into the entropy pool
// (add_device_randomness), in the shard of the process that created the
// task, which tasks created by other processes rarely share.
func (t *Task) feedEntropy() { t.k.entropy.Add(uint64(t.userShard), uint64(t.k.now()-t.started)) }

// dropCharges takes the task off its user's list and count and out of
// the thread count.
func (t *Task) dropCharges() {
	t.leaveUser()
	if t.k.cfg.ThreadLimit > 0 {
		t.k.nrThreads.Add(-1)
	}
}

// freePID unhashes the task from its pid and drops its reference
// (free_pid once the last reference is gone).
func (t *Task) freePID() {
	p := t.pid.Load()
	p.task.CompareAndSwap(t, nil)
	p.put()
}

// notifyParent is do_notify_parent for a process whose leader is a zombie
// and whose other threads are gone. It reports whether the process must
// be reaped at once (autoreap).
func (tg *ThreadGroup) notifyParent() bool {
	if tg.tracedAway() && !tg.leader.Load().notifyTracer() {
		return false // the tracer's wait hands it on (C11)
	}
	// The parent's lock guards this child's parent-side state and the
	// parent's ready list.
	ptg := tg.lockParentOf()
	autoreap := tg.notifyParentLocked(ptg)
	ptg.mu.Unlock()
	return autoreap
}

// notifyParentLocked sends the exit signal, wakes the parent's waiters and
// either makes the child a zombie that wait can claim or, if the parent
// does not want it, marks it dead for the caller to release (B7).
//
// Preconditions: ptg.mu is held; ptg is the parent of tg.
//
// +checklocks:ptg.mu
func (tg *ThreadGroup) notifyParentLocked(ptg *ThreadGroup) bool {
	tg.assertParentLocked()
	ptg.unmarkJobLocked(tg) // a zombie reports only its exit
	sig := int(tg.exitSignal)
	if tg.parentExecSeq != ptg.execSeq.Load() {
		sig = int(unix.SIGCHLD) // the parent changed security domain
	}
	autoreap := ptg.zapping
	if act := ptg.sighand.Load().action(int(unix.SIGCHLD)); sig == int(unix.SIGCHLD) &&
		(act.Handler == SigIgn || act.Flags&SaNoCldWait != 0) {
		// A traced child is not reaped at once: its tracer in the
		// parent's own group will report it (do_notify_parent's
		// !tsk->ptrace).
		autoreap = tg.leader.Load().tracer.Load() == nil
		if act.Handler == SigIgn {
			sig = 0
		}
	}
	if sig != 0 {
		// do_notify_parent sends to tsk->parent, the thread that forked
		// the child or, for a child traced from its parent's own
		// process, the tracer thread, which takes the signal if it
		// wants it (a traced one stops for it). The child is never in
		// an ancestor namespace of its parent, so the signal is not
		// forced.
		to := tg.parent.Load()
		if tracer := tg.leader.Load().tracer.Load(); tracer != nil && tracer.tg == ptg {
			to = tracer
		}
		ptg.sendSignalViaLocked(to, sig, false, nil)
	}
	ptg.wakeWaitersLocked(tg.leader.Load())
	if autoreap {
		tg.exitState.Store(procDead)
		tg.unlinkFromParentLocked(ptg)
		return true
	}
	tg.exitState.Store(procZombie)
	ptg.markReadyLocked(tg)
	return false
}

// unlinkFromParentLocked removes a dead child from its parent's lists.
//
// Preconditions: ptg.mu is held; ptg is the parent of tg.
//
// +checklocks:ptg.mu
func (tg *ThreadGroup) unlinkFromParentLocked(ptg *ThreadGroup) {
	tg.assertParentLocked()
	ptg.children.remove(tg, siblingLinkOf)
	tg.parent.Load().nrChildren.Add(-1)
	ptg.nrChildren[waitClass(tg.exitSignal)]--
}

// exitStatusForWait returns the status wait reports for a zombie process.
// It is read without c.mu: the value was fixed under c.mu before the
// notification that made c a zombie, and readers reach it through that
// notification (the parent's lock) or after it.
func (tg *ThreadGroup) exitStatusForWait() int32 {
	return tg.exitStatus // +checklocksignore: fixed before the zombie was published
}
