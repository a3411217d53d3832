package lockstat

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ClassStats are the statistics of one lock class, summed over all its
// locks, covering the acquisitions and releases made while statistics were
// on (see [SetStats]) since they were last reset (see [ResetStats]).
type ClassStats struct {
	// Name is the class's name.
	Name string
	// Write covers exclusive acquisitions: Lock and TryLock of a Mutex or
	// an RWMutex. Its Hold times each exclusive hold, from acquisition to
	// Unlock.
	Write ModeStats
	// Read covers RLock of an RWMutex. Its Hold times occupied intervals,
	// not individual read holds: an interval runs from a read acquisition
	// of a lock that no reader held to the release that leaves it with no
	// reader, so overlapping read holds count once. This is the time the
	// lock kept writers out on readers' account.
	Read ModeStats
	// HottestHold is the total exclusive hold time of the class's hottest
	// lock: the largest, over the class's locks, of the sum of that lock's
	// exclusive holds. Holds of one lock never overlap, so it is a span of
	// time during which workers were serialized on that lock.
	HottestHold time.Duration

	class *Class // identifies the class for Since
}

// ModeStats are a class's statistics for one acquisition mode.
type ModeStats struct {
	// Acquisitions counts successful acquisitions, TryLock's included.
	Acquisitions uint64
	// Contentions counts the acquisitions that found the lock unavailable
	// and blocked. A failed TryLock is not a contention.
	Contentions uint64
	// Bounces counts the acquisitions of an RWMutex made on another CPU
	// than its previous acquisition, in either mode: each wrote the
	// lock's cache line after another CPU had, a read acquisition no
	// less than a write one, so these are the writes workers share even
	// where nobody waits. A Mutex's are not counted: two CPUs taking one
	// Mutex in turn show in its hold and wait times.
	Bounces uint64
	// Wait times the contended acquisitions, from the failed attempt to
	// acquisition. Wait.Count() can trail Contentions by the waits still
	// in progress.
	Wait Timing
	// Hold times the holds (see ClassStats.Write and ClassStats.Read).
	Hold Timing
}

// Timing summarizes a set of durations.
type Timing struct {
	Min, Max, Total time.Duration
	// Hist[i] counts the durations d with 2^i ns <= d < 2^(i+1) ns, except
	// that Hist[0] also counts durations under 1 ns and Hist[NumBuckets-1]
	// every duration from 2^(NumBuckets-1) ns (about 9 minutes) up.
	Hist [NumBuckets]uint64
}

// Count returns how many durations t summarizes.
func (t Timing) Count() uint64 {
	var n uint64
	for _, c := range t.Hist {
		n += c
	}
	return n
}

// Avg returns the mean duration, or 0 if there is none.
func (t Timing) Avg() time.Duration {
	n := t.Count()
	if n == 0 {
		return 0
	}
	return t.Total / time.Duration(n)
}

// Delta returns the statistics of the activity between prev and s, two
// readings of one class with no [ResetStats] in between. Counts, totals and
// histograms are exact. A Min or Max that moved between the readings is
// exact; one that did not is bounded by the histogram bucket that holds
// the true value: Min is then the bucket's lower end and Max its upper end,
// unless the overall Min or Max is tighter. HottestHold is s's minus
// prev's, a lower bound on the phase's hottest lock total that is exact for
// a class with a single lock. Reset the statistics before a phase to
// measure all of it exactly.
func (s ClassStats) Delta(prev ClassStats) ClassStats {
	d := s
	d.Write = s.Write.delta(prev.Write)
	d.Read = s.Read.delta(prev.Read)
	d.HottestHold = s.HottestHold - prev.HottestHold
	return d
}

func (m ModeStats) delta(prev ModeStats) ModeStats {
	return ModeStats{
		Acquisitions: m.Acquisitions - prev.Acquisitions,
		Contentions:  m.Contentions - prev.Contentions,
		Bounces:      m.Bounces - prev.Bounces,
		Wait:         m.Wait.delta(prev.Wait),
		Hold:         m.Hold.delta(prev.Hold),
	}
}

func (t Timing) delta(prev Timing) Timing {
	d := Timing{Total: t.Total - prev.Total}
	lowest, highest := -1, -1
	for i := range t.Hist {
		d.Hist[i] = t.Hist[i] - prev.Hist[i]
		if d.Hist[i] != 0 {
			if lowest < 0 {
				lowest = i
			}
			highest = i
		}
	}
	if lowest < 0 {
		return d
	}
	d.Min, d.Max = t.Min, t.Max
	if t.Min == prev.Min {
		d.Min = max(t.Min, bucketFloor(lowest))
	}
	if t.Max == prev.Max && highest < NumBuckets-1 {
		d.Max = min(t.Max, bucketFloor(highest+1)-1)
	}
	return d
}

// bucketFloor returns the smallest duration of histogram bucket i.
func bucketFloor(i int) time.Duration {
	if i == 0 {
		return 0
	}
	return time.Duration(1) << i
}

// Since returns the statistics of the activity since prev, a [Snapshot]
// taken after the last [ResetStats]: a [ClassStats.Delta] for every class
// active since, in Snapshot's order.
func Since(prev []ClassStats) []ClassStats {
	before := make(map[*Class]ClassStats, len(prev))
	for _, p := range prev {
		before[p.class] = p
	}
	var out []ClassStats
	for _, s := range Snapshot() {
		if d := s.Delta(before[s.class]); d.active() {
			out = append(out, d)
		}
	}
	return out
}

func (s ClassStats) active() bool { return s.Write.active() || s.Read.active() }

func (m ModeStats) active() bool { return m.Acquisitions != 0 || m.Contentions != 0 }

// SerialFraction returns the class's hottest lock's exclusive hold time
// over workerTime, the run's total worker time (workers × wall time), or 0
// if workerTime is not positive. See the package documentation.
func (s ClassStats) SerialFraction(workerTime time.Duration) float64 {
	return fraction(s.HottestHold, workerTime)
}

// WaitFraction returns the time workers spent blocked on the class's locks,
// in both modes, over workerTime, or 0 if workerTime is not positive.
func (s ClassStats) WaitFraction(workerTime time.Duration) float64 {
	return fraction(s.Write.Wait.Total+s.Read.Wait.Total, workerTime)
}

func fraction(d, workerTime time.Duration) float64 {
	if workerTime <= 0 {
		return 0
	}
	return float64(d) / float64(workerTime)
}

// RunSerialFraction returns the run's serial fraction, the largest
// [ClassStats.SerialFraction] of stats, and the name of the class that has
// it ("" if every fraction is 0). Its inverse bounds the run's speedup over
// one worker; see the package documentation.
func RunSerialFraction(stats []ClassStats, workerTime time.Duration) (float64, string) {
	best, name := 0.0, ""
	for _, s := range stats {
		if f := s.SerialFraction(workerTime); f > best {
			best, name = f, s.Name
		}
	}
	return best, name
}

// The table's columns: /proc/lock_stat's, less its contention bounces
// (acq-bounces are counted for RWMutex locks only), and those of the
// serial bound, printed only for a positive worker time.
var (
	lockStatColumns = []string{"contentions", "waittime-min", "waittime-max", "waittime-total", "waittime-avg",
		"acq-bounces", "acquisitions", "holdtime-min", "holdtime-max", "holdtime-total", "holdtime-avg"}
	boundColumns = []string{"holdtime-hottest", "serial-fraction", "wait-fraction"}
)

// WriteTable writes stats to w as a table in the layout of /proc/lock_stat
// (without its con-bounces column and contention points): a line per class in
// the order given, or for a class with read acquisitions, a "NAME-W" line
// for its exclusive mode (if used) and a "NAME-R" line for its read mode.
// Times are in microseconds with two decimals. When workerTime, the run's
// total worker time, is positive, each line adds the hottest lock's hold
// time and the serial and wait fractions ("-" where a column does not apply
// to read holds), and a last line gives the run's serial fraction and the
// speedup bound it implies. It returns the error of writing to w.
func WriteTable(w io.Writer, stats []ClassStats, workerTime time.Duration) error {
	cols := lockStatColumns
	if workerTime > 0 {
		cols = append(cols[:len(cols):len(cols)], boundColumns...)
	}
	widths := make([]int, len(cols))
	ruleLen := 41
	for i, c := range cols {
		widths[i] = max(14, len(c))
		ruleLen += 1 + widths[i]
	}
	var b strings.Builder
	line := func(label string, cells []string) {
		b.WriteString(label)
		for i, c := range cells {
			fmt.Fprintf(&b, " %*s", widths[i], c)
		}
		b.WriteString("\n")
	}
	rule := strings.Repeat("-", ruleLen) + "\n"
	b.WriteString("lock statistics, times in microseconds\n" + rule)
	line(fmt.Sprintf("%41s", "class name"), cols)
	b.WriteString(rule)
	for _, s := range stats {
		exclusiveLabel := s.Name
		if s.Read.active() {
			exclusiveLabel += "-W"
		}
		if s.Write.active() {
			line(fmt.Sprintf("%40s:", exclusiveLabel), rowCells(s.Write, workerTime, s.HottestHold, true))
		}
		if s.Read.active() {
			line(fmt.Sprintf("%40s:", s.Name+"-R"), rowCells(s.Read, workerTime, 0, false))
		}
	}
	if workerTime > 0 {
		b.WriteString(rule)
		f, name := RunSerialFraction(stats, workerTime)
		if name == "" {
			fmt.Fprintf(&b, "worker time %v: no exclusive holds, no serial bound\n", workerTime)
		} else {
			fmt.Fprintf(&b, "worker time %v: serial fraction %.4f (%s), speedup at most %.2f\n",
				workerTime, f, name, 1/f)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// rowCells returns the values of one table line; hottest and the serial
// fraction apply only to the exclusive mode.
func rowCells(m ModeStats, workerTime, hottest time.Duration, exclusive bool) []string {
	cells := []string{strconv.FormatUint(m.Contentions, 10)}
	cells = appendTiming(cells, m.Wait)
	cells = append(cells, strconv.FormatUint(m.Bounces, 10), strconv.FormatUint(m.Acquisitions, 10))
	cells = appendTiming(cells, m.Hold)
	if workerTime > 0 {
		if exclusive {
			cells = append(cells, usec(hottest), ratio(fraction(hottest, workerTime)))
		} else {
			cells = append(cells, "-", "-")
		}
		cells = append(cells, ratio(fraction(m.Wait.Total, workerTime)))
	}
	return cells
}

func appendTiming(cells []string, t Timing) []string {
	return append(cells, usec(t.Min), usec(t.Max), usec(t.Total), usec(t.Avg()))
}

// usec formats d in microseconds with two decimals, as /proc/lock_stat does.
func usec(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 2, 64) }

func ratio(f float64) string { return strconv.FormatFloat(f, 'f', 4, 64) }
