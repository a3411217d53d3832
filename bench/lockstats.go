package bench

import (
	"math"
	"slices"
	"time"

	"tasklist/lockstat"
)

// LockProfile is where a point's workers spent their time on locks,
// measured in a run of its own with lock statistics on, so that the
// timed runs pay nothing for them.
type LockProfile struct {
	// Serial is the serial fraction: the share of the workers' time
	// spent holding the hottest single lock of SerialClass, the class
	// that serialized them most. Amdahl's law bounds the speedup of any
	// number of workers by 1/Serial. Only a class on which workers
	// collided (some acquisition waited) counts: a lock nobody else
	// wanted serialized nobody.
	Serial      float64
	SerialClass string
	// Waits lists the classes workers waited for, largest share first.
	Waits []ClassWait
	// Shared is the class of reader-writer locks that the workers'
	// acquisitions moved between CPUs most often (lockstat's bounces):
	// each such acquisition, a reader's no less than a writer's, wrote
	// the lock's line after another CPU had, a cache-line transfer on
	// every worker's path that no wait shows. SharedPerOp is how many
	// per iteration of the workload, SharedShare the share of the
	// class's acquisitions that moved.
	Shared      string
	SharedPerOp float64
	SharedShare float64
}

// ClassWait is one lock class's share of the workers' time spent waiting.
type ClassWait struct {
	Class string `json:"class"`
	// Share is the time spent waiting for the class's locks over the
	// workers' total time.
	Share float64 `json:"share"`
	// Contended is the share of acquisitions that had to wait.
	Contended float64 `json:"contended"`
}

// AmdahlBound returns the largest speedup the serial fraction allows, +Inf
// when nothing was serial.
func (p *LockProfile) AmdahlBound() float64 {
	if p == nil || p.Serial <= 0 {
		return math.Inf(1)
	}
	return 1 / p.Serial
}

// classTimes is what a profile needs of one lock class's statistics over a
// run.
type classTimes struct {
	name                    string
	acquisitions, contended uint64
	wait                    time.Duration
	// serial is how long the workers were serialized on one lock of the
	// class.
	serial time.Duration
	// bounces counts the acquisitions made on another CPU than the
	// lock's previous one.
	bounces uint64
}

// readLockClasses returns every lock class's statistics since the last
// lockstat.ResetStats. A class's serial time is the exclusive hold time of
// its hottest single lock (lockstat's HottestHold): one lock is held by one
// worker at a time, so that time is serialized, while holds of a class with
// a lock per worker (a process's lock) do not serialize anyone. Read holds
// count as waits for writers only, not as serial time.
func readLockClasses() []classTimes {
	var out []classTimes
	for _, s := range lockstat.Snapshot() {
		acq := s.Write.Acquisitions + s.Read.Acquisitions
		if acq == 0 {
			continue
		}
		out = append(out, classTimes{name: s.Name, acquisitions: acq,
			contended: s.Write.Contentions + s.Read.Contentions,
			wait:      s.Write.Wait.Total + s.Read.Wait.Total, serial: s.HottestHold,
			bounces: s.Write.Bounces + s.Read.Bounces})
	}
	return out
}

// lockProfile turns the statistics of a run of workers lasting elapsed,
// in which they made iterations iterations, into a profile.
func lockProfile(classes []classTimes, workers int, elapsed time.Duration, iterations uint64) *LockProfile {
	total := float64(workers) * elapsed.Seconds()
	p := &LockProfile{}
	if total <= 0 {
		return p
	}
	for _, c := range classes {
		if iterations > 0 && c.bounces > 0 {
			if perOp := float64(c.bounces) / float64(iterations); perOp > p.SharedPerOp {
				p.Shared, p.SharedPerOp = c.name, perOp
				p.SharedShare = float64(c.bounces) / float64(c.acquisitions)
			}
		}
		if share := c.serial.Seconds() / total; c.contended > 0 && share > p.Serial {
			p.Serial, p.SerialClass = share, c.name
		}
		if c.wait > 0 {
			p.Waits = append(p.Waits, ClassWait{Class: c.name, Share: c.wait.Seconds() / total,
				Contended: float64(c.contended) / float64(c.acquisitions)})
		}
	}
	slices.SortFunc(p.Waits, func(a, b ClassWait) int {
		switch {
		case a.Share > b.Share:
			return -1
		case a.Share < b.Share:
			return 1
		}
		return 0
	})
	return p
}

// lockPhase tells a lock-statistics run where the harness is.
type lockPhase int

const (
	lockStart lockPhase = iota // the first sample begins
	lockStop                   // the last sample ends
)

// lockRecorder gathers a profile over the samples of one run.
type lockRecorder struct {
	workers  int
	prev     bool
	started  time.Time
	classes  []classTimes
	duration time.Duration
}

// phase is the harness's hook.
func (r *lockRecorder) phase(p lockPhase) {
	switch p {
	case lockStart:
		r.prev = lockstat.SetStats(true)
		lockstat.ResetStats()
		r.started = time.Now()
	case lockStop:
		r.duration = time.Since(r.started)
		r.classes = readLockClasses()
		lockstat.SetStats(r.prev)
	}
}

// profile returns what was gathered over a run of iterations iterations.
func (r *lockRecorder) profile(iterations uint64) *LockProfile {
	return lockProfile(r.classes, r.workers, r.duration, iterations)
}
