package main

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestWithInterrupts: each stop signal, sent to the process for real,
// ends an interruptible command's context with the signal as its cause,
// which gives 128 plus its number as the exit status.
func TestWithInterrupts(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		ctx, stop := withInterrupts(context.Background())
		if err := syscall.Kill(os.Getpid(), sig); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Minute):
			t.Fatalf("%v did not end the context", sig)
		}
		if got, want := interruptStatus(ctx), 128+int(sig); got != want {
			t.Errorf("%v: status %d, want %d", sig, got, want)
		}
		stop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := interruptStatus(ctx); got != 130 {
		t.Errorf("a context cancelled by no signal: status %d, want 130", got)
	}
	if got := interrupted(ctx); got != "interrupted" {
		t.Errorf("interrupted = %q", got)
	}
}
