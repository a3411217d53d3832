package kernelrun

import (
	"errors"
	"time"
)

// outcome is how waiting for a reply ended.
type outcome int

const (
	replied outcome = iota
	died            // the task ended without replying: the call did not return
	stalled         // the task stayed blocked in a quiescent system past the stall timeout
)

var (
	errStalled = errors.New("the task is stopped and cannot take a command")
	errGone    = errors.New("the task is gone")
)

// alive reports whether t still exists as the task it was: not exited (a zombie or reaped)
// and not replaced by another task with its tid.
func (b *Backend) alive(t *task) bool {
	if t.gone {
		return false
	}
	st := readStat(t.tid)
	if st.state == 0 || st.state == 'Z' || st.state == 'X' || st.start != t.start {
		b.halt()
		t.gone = true
		return false
	}
	return true
}

// blocked reports whether t is stopped or sleeps in a system call other than its command
// loop's, which means in the call it was given, a call of op.
func blocked(t *task, op int) bool {
	if op == opExecve && t.tid != t.tgid && blockedTid(t.tgid) {
		return true // the exec is past de_thread, on the leader's tid
	}
	return blockedTid(t.tid)
}

func blockedTid(tid int) bool {
	switch readStat(tid).state {
	case 'T', 't':
		return true
	case 'S', 'D':
		return blockedInCall(tid)
	}
	return false
}

// watch returns how to tell whether t is still there to reply to a call of op.
func (b *Backend) watch(t *task, op int) func() bool {
	if op == opExecve {
		// A non-leader that execs takes its leader's tid and leaves its own.
		return func() bool { return processAlive(t.tgid) }
	}
	return func() bool { return b.alive(t) }
}

// quietNow reports whether no task is running or runnable at this instant.
func (b *Backend) quietNow() bool {
	for _, t := range b.tasks {
		if t.gone {
			continue
		}
		if readStat(t.tid).state == 'R' {
			return false
		}
	}
	return true
}

// quiesce waits until no task has been runnable for several samples in a row. A wakeup makes
// its task runnable before the waker's system call returns, so a system that stays quiet
// across the samples has finished acting on what the last call did: exits have reached the
// zombie state, signals have been handled, replies have been sent. A system that never
// settles (something spins) is given up on after a few seconds.
func (b *Backend) quiesce() {
	deadline := time.Now().Add(5 * time.Second)
	quiet := 0
	for delay := 50 * time.Microsecond; quiet < 4 && time.Now().Before(deadline); delay = min(2*delay, time.Millisecond) {
		if b.quietNow() {
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(delay)
	}
}

// await waits for t's reply to the call it was given, a call of op.
func (b *Backend) await(t *task, op int, stall time.Duration) (message, outcome) {
	alive := b.watch(t, op)
	var quietSince time.Time
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for delay := 20 * time.Microsecond; ; delay = min(2*delay, 2*time.Millisecond) {
		timer.Reset(delay)
		select {
		case m, ok := <-t.c.msgs:
			if !ok {
				b.halt()
				return message{}, died
			}
			return m, replied
		case <-timer.C:
		}
		if !alive() {
			if m, ok, done := t.tryReply(); done && ok {
				return m, replied
			}
			b.halt()
			return message{}, died
		}
		if blocked(t, op) && b.quietNow() {
			if quietSince.IsZero() {
				quietSince = time.Now()
			} else if time.Since(quietSince) > stall {
				return message{}, stalled
			}
		} else {
			quietSince = time.Time{}
		}
	}
}

// connect makes sure the runner holds t's socket. A new task sends it in its hello, which a
// task that starts stopped (traced with fork events, CLONE_PTRACE) sends only once resumed.
func (b *Backend) connect(t *task) error {
	var quietSince time.Time
	for t.c == nil {
		if fd, ok := b.hellos.claim(t.tid); ok {
			c, err := newConn(fd, b.hellos)
			if err != nil {
				return err
			}
			t.c = c
			return nil
		}
		if !b.alive(t) {
			return errGone
		}
		st := readStat(t.tid).state
		if (st == 'T' || st == 't') && b.quietNow() {
			if quietSince.IsZero() {
				quietSince = time.Now()
			} else if time.Since(quietSince) > StallTimeout {
				return errStalled
			}
		} else {
			quietSince = time.Time{}
		}
		select {
		case <-b.hellos.notify:
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}
