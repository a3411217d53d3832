package kernel

import (
	"bytes"
	"sync"
	"testing"
)

// Every released task — a reaped process, a thread that reaps itself, an
// autoreaped child — mixes its runtime into the pool once, concurrent
// releases included, and what ReadEntropy returns changes with it (seed
// 004's add_device_randomness in release_task).
func TestReleaseFeedsEntropy(t *testing.T) {
	e := newEnv(t, Config{})
	if n := e.k.EntropySamples(); n != 0 {
		t.Fatalf("samples before any release: %d", n)
	}
	before := make([]byte, 40)
	if n, err := e.k.ReadEntropy(before); n != len(before) || err != nil {
		t.Fatalf("ReadEntropy = %d, %v", n, err)
	}

	const workers, rounds = 4, 50
	var wg sync.WaitGroup
	for range workers {
		w := e.fork(e.init)
		wg.Go(func() {
			for range rounds {
				c, err := w.Fork()
				if err != nil {
					t.Error(err)
					return
				}
				th, err := w.Clone(CloneArgs{Flags: threadFlags})
				if err != nil {
					t.Error(err)
					return
				}
				_ = c.Exit(0)
				_ = th.Exit(0)
				if _, err := e.wait4(w, -1, 0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got, want := e.k.EntropySamples(), uint64(2*workers*rounds); got != want {
		t.Fatalf("samples = %d, want %d (one per released task)", got, want)
	}
	after := make([]byte, 40)
	e.k.ReadEntropy(after)
	if bytes.Equal(before, after) {
		t.Fatal("releases did not change the pool's output")
	}
	mustOK(t, e.k.CheckInvariants())
}
