package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"tasklist/internal/cbuild"
	"tasklist/workload"
)

func binary(t *testing.T) string {
	t.Helper()
	bin, err := Binary()
	if errors.Is(err, cbuild.ErrNoCompiler) {
		t.Skip("no C compiler to build the host program")
	}
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestEveryWorkloadRunsOnTheHost: the host program knows every workload
// of package workload, every sample lasts at least its length, and each
// worker counts iterations; pthread-create also times its calls.
func TestEveryWorkloadRunsOnTheHost(t *testing.T) {
	binary(t)
	for _, w := range workload.All() {
		spec := Spec{Workload: w.Name, Workers: 2, Warmup: 5 * time.Millisecond, Sample: 40 * time.Millisecond,
			Samples: 2, Population: 20, Mix: "get:2,fork-exit:1,pthread-create:1"}
		r, idle := runAndCheck(t, spec)
		if idle >= 0 {
			// On a busy machine a worker can wait out short samples for
			// a CPU: only one that stays idle over long ones is wrong.
			spec.Sample = 500 * time.Millisecond
			if r, idle = runAndCheck(t, spec); idle >= 0 {
				t.Errorf("%s: worker %d did nothing", w.Name, idle)
			}
		}
		timed := 0
		for _, s := range r.Samples {
			timed += len(s.Latencies)
		}
		// Only pthread-create times its calls (and the mix, when it
		// deals pthread-create).
		if w.Name != "mix" && (w.Name == "pthread-create") != (timed > 0) {
			t.Errorf("%s: %d timed calls", w.Name, timed)
		}
	}
}

// runAndCheck runs spec and checks its samples' shape; idle is a worker
// that counted no iteration in any sample, or -1.
func runAndCheck(t *testing.T, spec Spec) (r *Result, idle int) {
	t.Helper()
	r, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Samples) != spec.Samples {
		t.Fatalf("%s: %d samples, want %d", spec.Workload, len(r.Samples), spec.Samples)
	}
	counts := make([]uint64, spec.Workers)
	for i, s := range r.Samples {
		if s.Length < spec.Sample {
			t.Errorf("%s: sample %d lasted %v, less than %v", spec.Workload, i, s.Length, spec.Sample)
		}
		if len(s.Counts) != spec.Workers {
			t.Fatalf("%s: sample %d has %d workers' counts", spec.Workload, i, len(s.Counts))
		}
		for w, c := range s.Counts {
			counts[w] += c
		}
	}
	for w, c := range counts {
		if c == 0 {
			return r, w
		}
	}
	return r, -1
}

// TestCancelCleansUp: a cancelled run returns the context's error and
// leaves neither processes nor semaphore sets behind.
func TestCancelCleansUp(t *testing.T) {
	bin := binary(t)
	sets := semSets(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := Run(ctx, Spec{Workload: "semop-multi", Workers: 2, Warmup: time.Millisecond, Sample: 10 * time.Second, Samples: 1})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run = %v, want the context's error", err)
	}
	// Run returns once the program has been waited for, after its
	// workers.
	if n := len(children(bin, os.Getpid())); n > 0 {
		t.Fatalf("%d host benchmark processes still running", n)
	}
	// As root the sets are in a namespace of the program's own
	// (TestNothingOutlivesTheCaller).
	if after := semSets(t); os.Geteuid() != 0 && after > sets {
		t.Fatalf("%d semaphore sets after the run, %d before", after, sets)
	}
}

// TestBadWorkload: the program refuses a workload it does not know.
func TestBadWorkload(t *testing.T) {
	binary(t)
	_, err := Run(context.Background(), Spec{Workload: "nosuch", Workers: 1, Sample: time.Millisecond, Samples: 1})
	if err == nil || !strings.Contains(err.Error(), "bad arguments") {
		t.Fatalf("Run = %v, want bad arguments", err)
	}
}

// semSets counts the system's semaphore sets.
func semSets(t *testing.T) int {
	data, err := os.ReadFile("/proc/sysvipc/sem")
	if err != nil {
		t.Skip("no /proc/sysvipc/sem")
	}
	return strings.Count(string(data), "\n") - 1
}

// TestDeckHoldsAnyMix: the host program's deck holds the largest mix a
// workfile may give (workload.MaxDeck), so that it runs the mix the model
// runs.
func TestDeckHoldsAnyMix(t *testing.T) {
	if want := fmt.Sprintf("#define DECKCAP %d\n", workload.MaxDeck); !strings.Contains(string(source), want) {
		t.Fatalf("hostbench.c does not say %q", want)
	}
}
