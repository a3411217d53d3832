//go:build tasklist_unsafe

package sem

import (
	"runtime"
	"testing"

	"tasklist/plan"
)

// unsafeLockings are the designs of the plans with the unsafe toggle
// sem-perm-no-revalidate: scalable's and linux-2.6.35's (gvisor's differs
// from the latter only by WakeAll).
var unsafeLockings = []design{
	{"fine+norevalidate", plan.SemLocking{NoRevalidate: true}},
	{"setlock+norevalidate", plan.SemLocking{SetLockOnly: true, NoRevalidate: true}},
}

// TestRemovalRaceNoRevalidate runs removalRace under NoRevalidate, where a
// semop acting on the removed set must be seen within a bounded number of
// tries: the window between the lockless lookup and the lock is real, and
// no sleep widens it. The hit rate is logged. The window is crossed by an
// IPC_RMID running in parallel, so the test needs two Ps.
func TestRemovalRaceNoRevalidate(t *testing.T) {
	const maxTries = 20000
	for _, m := range unsafeLockings {
		t.Run(m.name, func(t *testing.T) {
			if runtime.GOMAXPROCS(0) < 2 {
				t.Skip("one P runs the semop and IPC_RMID one after the other")
			}
			ns := newNS(m.lk)
			hits, tries := 0, 0
			for tries < maxTries && hits < 3 {
				tries++
				if removalRace(t, ns) {
					hits++
				}
			}
			t.Logf("%d of %d tries acted on the removed set", hits, tries)
			if hits == 0 {
				t.Errorf("no semop acted on a removed set in %d tries", tries)
			}
		})
	}
}

// TestStressNoRevalidate runs the stress test under NoRevalidate: the
// unsafe toggle may give wrong answers, but never a crash, a hang, a
// stranded sleeper or a leaked undo entry.
func TestStressNoRevalidate(t *testing.T) {
	for _, m := range unsafeLockings {
		t.Run(m.name, func(t *testing.T) { testStress(t, m.lk) })
	}
}
