package kernelrun

import (
	"errors"
	"fmt"
	"time"

	"tasklist/scenario"
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
	if st := t.stat(); st == 0 || st == 'Z' || st == 'X' {
		t.gone = true
		t.closeStat()
		return false
	}
	return true
}

// blocked reports whether t is stopped or sleeps in a system call other than its command
// loop's, which means in the call it was given, call.
func blocked(t *task, call string) bool {
	if execs(call) && t.tid != t.tgid && blockedTid(t.tgid) {
		return true // the exec is past de_thread, on the leader's tid
	}
	return blockedTid(t.tid)
}

// execs reports whether call replaces its caller's program (scenario.CallSpec.Exec).
func execs(call string) bool {
	spec, _ := scenario.LookupCall(call)
	return spec.Exec
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

// watch returns how to tell whether t is still there to reply to call.
func (b *Backend) watch(t *task, call string) func() bool {
	if execs(call) {
		// A non-leader that execs takes its leader's tid and leaves its own.
		return func() bool { return processAlive(t.tgid) }
	}
	return func() bool { return b.alive(t) }
}

// reach is what the call in flight may have set running: the tasks quiescence watches. A
// call that can signal, reap or wake another task reaches every task; a local one
// (scenario.CallSpec.Local) reaches its caller and the tasks it makes. Tasks with a call of
// their own in flight (a background call, a stalled one) are always watched: a semaphore
// operation or an exit can end their sleep. The rest sat idle in their command loops when the
// last call settled, and only a signal, a reaping or a ptrace request reaches them there.
type reach struct {
	all      bool
	actor    *task
	firstNew int // b.tasks[firstNew:] were made by the call
}

// begin records the call c by t as the one in flight.
func (b *Backend) begin(t *task, c scenario.Call) {
	spec, _ := scenario.LookupCall(c.Name)
	b.inFlight = reach{all: !spec.Local, actor: t, firstNew: len(b.tasks)}
}

// quietNow reports whether none of the tasks the call in flight reaches is running or
// runnable at this instant. Only the runner's own live tasks are read, each through its held
// /proc/TID/stat (proc.go).
func (b *Backend) quietNow() bool {
	r := b.inFlight
	for i, t := range b.tasks {
		watched := r.all || t == r.actor || i >= r.firstNew || t.bg != nil || t.hung
		if watched && !t.gone && t.stat() == 'R' {
			return false
		}
	}
	return true
}

// settleTimeout is how long quiesce waits for a system that never settles.
var settleTimeout = 5 * time.Second

// quiesce waits until no task has been runnable for several samples in a row. A wakeup makes
// its task runnable before the waker's system call returns, so a system that stays quiet
// across the samples has finished acting on what the last call did: exits have reached the
// zombie state, signals have been handled, replies have been sent. A system that does not
// settle within settleTimeout (something keeps running) cannot be read: quiesce fails.
func (b *Backend) quiesce() error {
	deadline := time.Now().Add(settleTimeout)
	quiet := 0
	for delay := 50 * time.Microsecond; quiet < 4; delay = min(2*delay, time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the tasks did not settle within %v (one kept running): the runner cannot tell what the call did", settleTimeout)
		}
		if b.quietNow() {
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(delay)
	}
	return nil
}

// await waits for t's reply to the call it was given, call.
func (b *Backend) await(t *task, call string, stall time.Duration) (message, outcome) {
	alive := b.watch(t, call)
	var quietSince time.Time
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for delay := 20 * time.Microsecond; ; delay = min(2*delay, 2*time.Millisecond) {
		timer.Reset(delay)
		select {
		case m, ok := <-t.c.msgs:
			if !ok {
				return message{}, died
			}
			return m, replied
		case <-timer.C:
		}
		if !alive() {
			if m, ok, done := t.tryReply(); done && ok {
				return m, replied
			}
			return message{}, died
		}
		if blocked(t, call) && b.quietNow() {
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
