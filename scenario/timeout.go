package scenario

import (
	"math"
	"time"
)

// ktimeSecMax is KTIME_SEC_MAX: the seconds of the largest time Linux's clocks hold
// (KTIME_MAX nanoseconds, some 292 years).
const ktimeSecMax = math.MaxInt64 / int64(time.Second)

// SemTimeout is how a semtimedop with a timeout of ms milliseconds waits on Linux: timed
// reports whether it has a deadline, d how far off. A negative ms is a timespec that
// timespec64_valid refuses (the call fails with EINVAL before it could wait); it reports no
// deadline. A timeout whose seconds reach KTIME_SEC_MAX is saturated to KTIME_MAX by
// timespec64_to_ktime and ktime_add_safe, a timer that never fires: the call waits as an
// untimed one does, and a runner reports it as it reports any call that can never complete.
// (Linux saturates a little earlier, by its uptime, when adding the timeout to the clock:
// those timeouts end some 292 years on, so no run tells the two apart.)
func SemTimeout(ms int64) (d time.Duration, timed bool) {
	if ms < 0 || ms/1000 >= ktimeSecMax {
		return 0, false
	}
	return time.Duration(ms/1000)*time.Second + time.Duration(ms%1000)*time.Millisecond, true
}
