package kernel

import (
	"golang.org/x/sys/unix"
)

// The group exits that fatal signals start, and the order their exits
// run in.

// fatalStatus is the wait status of a death by sig: with the core bit for
// a signal that dumps core when RLIMIT_CORE allows a core file.
func (tg *ThreadGroup) fatalStatus(sig int) int32 {
	status := int32(sig)
	if sigDefaultCoredumps(sig) && tg.rlimits.Load()[unix.RLIMIT_CORE].Cur != 0 {
		status |= 0x80
	}
	return status
}

// killLocked starts a group exit with status (a fatal signal's
// complete_signal): every live thread is marked exiting at once, and their
// exits run on a goroutine of their own, counted by Kernel.Quiesce, or
// join b. The job-control state goes with it (signal->flags =
// SIGNAL_GROUP_EXIT).
//
// Preconditions: tg.mu is held.
//
// +checklocks:tg.mu
func (tg *ThreadGroup) killLocked(status int32, b *exitBatch) {
	if tg.groupExiting || tg.liveThreads == 0 {
		return
	}
	tg.groupExiting = true
	tg.groupExitCode = status
	tg.markGroupExit(status)
	tg.endJobControlLocked()
	victims := tg.beginExitAllLocked(status, b == nil)
	if b != nil {
		*b = append(*b, victims...)
		return
	}
	q := exitQueue{victims}
	q.run(tg.k)
}

// exitBatch collects the threads that the fatal signals of one step mark
// as exiting.
type exitBatch []*Task

// run runs the batch's exits, in order, on a goroutine of their own.
func (b *exitBatch) run(k *Kernel) {
	q := exitQueue{*b}
	q.run(k)
}

// exitQueue holds, in order, the batches of exits that exits in progress
// start: a parent-death signal, an orphaned group's SIGHUP, a tracer's
// PTRACE_O_EXITKILL or a signal it leaves a tracee, a namespace's zap.
// They run once the exits that started them, and the call those belong
// to, are over, first in first out, so that their order against the rest
// of the call (the handler flush of an exec whose killed leader had
// children) and against the rest of the batch is fixed, and is the one the
// reference model takes; Linux runs them whenever the killed tasks get a
// CPU.
type exitQueue []exitBatch

// push queues a batch.
func (q *exitQueue) push(b exitBatch) {
	if len(b) > 0 {
		*q = append(*q, b)
	}
}

// drain runs the queued batches, and those their exits queue, in order.
// A batch's kills wake their threads as it starts, the step that killed
// them being over.
func (q *exitQueue) drain(k *Kernel) {
	for len(*q) > 0 {
		b := (*q)[0]
		*q = (*q)[1:]
		for _, t := range b {
			t.wakeKilled()
		}
		k.finishExits(b, q)
	}
}

// run drains the queue on a goroutine of its own, counted by Quiesce.
func (q *exitQueue) run(k *Kernel) {
	if len(*q) == 0 {
		return
	}
	rest := *q
	*q = nil
	k.goAsync(func() { rest.drain(k) })
}
