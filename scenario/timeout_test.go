package scenario

import (
	"math"
	"testing"
	"time"
)

// Timeouts whose seconds reach KTIME_SEC_MAX are no deadline; every shorter one is, without
// overflowing.
func TestSemTimeout(t *testing.T) {
	const secMax = 9223372036 // KTIME_SEC_MAX
	for _, tc := range []struct {
		ms    int64
		d     time.Duration
		timed bool
	}{
		{-1, 0, false},
		{0, 0, true},
		{1500, 1500 * time.Millisecond, true},
		{secMax*1000 - 1, (secMax-1)*time.Second + 999*time.Millisecond, true},
		{secMax * 1000, 0, false},
		{math.MaxInt64, 0, false},
	} {
		if d, timed := SemTimeout(tc.ms); d != tc.d || timed != tc.timed {
			t.Errorf("SemTimeout(%d) = %v, %v; want %v, %v", tc.ms, d, timed, tc.d, tc.timed)
		}
	}
}
