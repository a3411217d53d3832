package kernel

// A killed task dies on its way out of the kernel. Linux's fatal signal
// acts in get_signal, which runs only when the task returns to user
// space: a task asleep in a call when SIGKILL arrives wakes, finishes the
// call as the call's own loop decides (do_wait scans its children once
// more and may reap one; a semop completed by a waker returns 0), and
// only then runs do_exit. The model runs a killed task's exit on
// whichever goroutine runs its exit batch, so a task in such a call is
// marked (inCall) for the call's length, and its exit waits until the
// call has returned (awaitCallEnd). Calls that sleep are bracketed this
// way: wait4 and waitid, semop and semtimedop, execve (de_thread's wait)
// and a clone that can sleep (a vfork, or a traced caller's event stop).
//
// The mark and the kill meet as a Dekker pair under Go's sequentially
// consistent atomics: the caller sets inCall and then tests whether it
// is still running, the killer marks the thread exiting (its state)
// before an exit reads inCall. Either the exit sees the mark and waits,
// or the caller sees it was killed and returns at once without acting.

// enterCall marks the start of a call during which a kill does not end the
// task until the call returns. It reports false, leaving no mark, when
// the task is no longer running: the call must then fail with ESRCH.
func (t *Task) enterCall() bool {
	t.flags.set(flagInCall, true)
	if !t.alive() {
		t.leaveCall()
		return false
	}
	return true
}

// leaveCall ends a call enterCall began. An exit waiting for it
// (awaitCallEnd) goes on.
func (t *Task) leaveCall() {
	t.flags.set(flagInCall, false)
	t.k.settle.notify()
}

// awaitCallEnd waits, in the exit of a killed thread, until the call the
// thread was in when it was killed has returned. The exit of a thread
// never runs on the goroutine of its own call, so this cannot wait for
// itself.
func (t *Task) awaitCallEnd() {
	if !t.flags.has(flagInCall) {
		return
	}
	t.k.Await(nil, func() bool { return !t.flags.has(flagInCall) })
}
