package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// stopSignals stop an interruptible command: a terminal's Ctrl-C, kill's default, and the
// hangup of a terminal or a session that goes away.
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// interruption is the cause of an interruptible command's context when a signal ended it.
type interruption struct{ sig syscall.Signal }

func (i interruption) Error() string { return "interrupted by " + unix.SignalName(i.sig) }

// withInterrupts returns a context that the first of stopSignals ends, with an interruption
// as its cause. From then on the signals have their default actions again, so that a second
// one ends the program at once. stop releases the signals.
func withInterrupts(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, stopSignals...)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs)
			cancel(interruption{s.(syscall.Signal)})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// interrupted says what ended ctx, "interrupted by SIGINT", or "interrupted" when no signal
// did.
func interrupted(ctx context.Context) string {
	var i interruption
	if errors.As(context.Cause(ctx), &i) {
		return i.Error()
	}
	return "interrupted"
}

// interruptStatus is the exit status of a command that ctx's end stopped: 128 plus the
// signal's number, as a shell reports a program that signal killed (130 for SIGINT, 143 for
// SIGTERM, 129 for SIGHUP); 130 for a context that ended otherwise.
func interruptStatus(ctx context.Context) int {
	var i interruption
	if errors.As(context.Cause(ctx), &i) {
		return 128 + int(i.sig)
	}
	return 128 + int(syscall.SIGINT)
}
