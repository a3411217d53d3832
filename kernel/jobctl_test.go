package kernel

import "testing"

// TestJobctlBits: each operation on the word changes only the bits it
// names, take reports whether any of them was set, and String names what
// is left.
func TestJobctlBits(t *testing.T) {
	const jobctlEvery = jobctlStopDequeued | jobctlPendingMask | jobctlListening | jobctlStopInCall |
		jobctlSignalStopMask | jobctlExitHeld | jobctlInKernel | jobctlSeized
	for _, tc := range []struct {
		name     string
		start    jobctlBits
		op       func(*jobctlBits) bool
		want     jobctlBits
		wantTook bool
		str      string
	}{
		{"empty", 0, nil, 0, false, "0"},
		{"set", jobctlStopDequeued, func(j *jobctlBits) bool { j.set(jobctlTrapNotify); return false },
			jobctlStopDequeued | jobctlTrapNotify, false, "STOP_DEQUEUED|TRAP_NOTIFY"},
		{"the model's bits after Linux's", jobctlStopInCall, func(j *jobctlBits) bool { j.set(jobctlStopPending); return false },
			jobctlStopPending | jobctlStopInCall, false, "STOP_PENDING|STOP_IN_CALL"},
		{"set again", jobctlListening, func(j *jobctlBits) bool { j.set(jobctlListening); return false },
			jobctlListening, false, "LISTENING"},
		{"clear keeps the others", jobctlPendingMask | jobctlStopDequeued, func(j *jobctlBits) bool { j.clear(jobctlTrapMask); return false },
			jobctlStopPending | jobctlStopDequeued, false, "STOP_DEQUEUED|STOP_PENDING"},
		{"clear of stop pending keeps dequeued", jobctlStopPending | jobctlStopDequeued, func(j *jobctlBits) bool { j.clear(jobctlStopPending); return false },
			jobctlStopDequeued, false, "STOP_DEQUEUED"},
		{"a stop's end clears its kind", jobctlSignalStop | jobctlSignalShared | jobctlStopDequeued, func(j *jobctlBits) bool { j.clear(jobctlSignalStopMask); return false },
			jobctlStopDequeued, false, "STOP_DEQUEUED"},
		{"take the held exit", jobctlExitHeld | jobctlStopInCall, func(j *jobctlBits) bool { return j.take(jobctlExitHeld) },
			jobctlStopInCall, true, "STOP_IN_CALL"},
		{"take either stop owed", jobctlStopInCall | jobctlStopDequeued, func(j *jobctlBits) bool { return j.take(jobctlStopPending | jobctlStopInCall) },
			jobctlStopDequeued, true, "STOP_DEQUEUED"},
		{"take one of two", jobctlTrapStop | jobctlListening, func(j *jobctlBits) bool { return j.take(jobctlTrapMask) },
			jobctlListening, true, "LISTENING"},
		{"take none", jobctlListening, func(j *jobctlBits) bool { return j.take(jobctlPendingMask) },
			jobctlListening, false, "LISTENING"},
		{"every name", jobctlEvery, nil, jobctlEvery, false,
			"STOP_DEQUEUED|STOP_PENDING|TRAP_STOP|TRAP_NOTIFY|LISTENING|STOP_IN_CALL|SIGNAL_STOP|SIGNAL_SHARED|EXIT_HELD|IN_KERNEL|SEIZED"},
		{"unnamed bits in hex", jobctlTrapStop | 1<<5 | 1<<63, nil,
			jobctlTrapStop | 1<<5 | 1<<63, false, "TRAP_STOP|0x8000000000000020"},
	} {
		j := tc.start
		took := false
		if tc.op != nil {
			took = tc.op(&j)
		}
		if j != tc.want || took != tc.wantTook {
			t.Errorf("%s: %v → %v (took %v), want %v (took %v)", tc.name, tc.start, j, took, tc.want, tc.wantTook)
		}
		if got := j.String(); got != tc.str {
			t.Errorf("%s: String() = %q, want %q", tc.name, got, tc.str)
		}
	}
}

// TestJobctlHas: has reports whether any of the bits asked about is set.
func TestJobctlHas(t *testing.T) {
	j := jobctlStopPending | jobctlListening
	for bits, want := range map[jobctlBits]bool{
		jobctlStopPending:                true,
		jobctlTrapMask:                   false,
		jobctlPendingMask:                true,
		jobctlStopDequeued:               false,
		jobctlListening | jobctlTrapStop: true,
		0:                                false,
	} {
		if got := j.has(bits); got != want {
			t.Errorf("%v.has(%v) = %v, want %v", j, bits, got, want)
		}
	}
}

// TestJobctlNamesInBitOrder: String lists the bits in the order Linux
// numbers them, each name once.
func TestJobctlNamesInBitOrder(t *testing.T) {
	var seen jobctlBits
	for i, n := range jobctlNames {
		if n.bit&(n.bit-1) != 0 || n.bit&seen != 0 || n.bit <= seen {
			t.Errorf("jobctlNames[%d] = %v (%#x): not a single bit above those before it", i, n.name, uint64(n.bit))
		}
		seen |= n.bit
	}
}
