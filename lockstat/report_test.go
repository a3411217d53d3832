package lockstat

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// timing summarizes ds.
func timing(ds ...time.Duration) Timing {
	var t Timing
	for i, d := range ds {
		if i == 0 || d < t.Min {
			t.Min = d
		}
		t.Max = max(t.Max, d)
		t.Total += d
		t.Hist[bucket(uint64(d))]++
	}
	return t
}

// table is WriteTable's output parsed back: the column names and, per
// line label, the fields.
type table struct {
	columns []string
	labels  []string
	rows    map[string][]string
	footer  string
}

func parseTable(t *testing.T, out string) table {
	t.Helper()
	tb := table{rows: map[string][]string{}}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0 || strings.Trim(line, "-") == "":
		case strings.HasPrefix(strings.TrimSpace(line), "class name"):
			tb.columns = fields[2:]
		case strings.HasSuffix(fields[0], ":"):
			label := strings.TrimSuffix(fields[0], ":")
			tb.labels = append(tb.labels, label)
			tb.rows[label] = fields[1:]
			if len(fields[1:]) != len(tb.columns) {
				t.Fatalf("line %q has %d values for %d columns", line, len(fields)-1, len(tb.columns))
			}
		case strings.HasPrefix(line, "worker time"):
			tb.footer = line
		case tb.columns == nil:
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	return tb
}

// check compares the named column of a line with want, a count, a
// duration (printed in microseconds) or a fraction.
func (tb table) check(t *testing.T, label, column string, want any) {
	t.Helper()
	col := -1
	for i, c := range tb.columns {
		if c == column {
			col = i
		}
	}
	row, ok := tb.rows[label]
	if col < 0 || !ok {
		t.Fatalf("no column %q or line %q in %v, %v", column, label, tb.columns, tb.labels)
	}
	got := row[col]
	if w, ok := want.(string); ok {
		if got != w {
			t.Errorf("%s %s = %q, want %q", label, column, got, w)
		}
		return
	}
	v, err := strconv.ParseFloat(got, 64)
	if err != nil {
		t.Fatalf("%s %s = %q: %v", label, column, got, err)
	}
	var w, tolerance float64
	switch w0 := want.(type) {
	case uint64:
		w = float64(w0)
	case time.Duration:
		w, tolerance = float64(w0)/1e3, 0.005
	case float64:
		w, tolerance = w0, 0.00005
	}
	if math.Abs(v-w) > tolerance+1e-9 {
		t.Errorf("%s %s = %s, want %v", label, column, got, w)
	}
}

// checkMode compares a line's /proc/lock_stat columns with m.
func (tb table) checkMode(t *testing.T, label string, m ModeStats) {
	t.Helper()
	for col, want := range map[string]any{
		"contentions": m.Contentions, "acquisitions": m.Acquisitions, "acq-bounces": m.Bounces,
		"waittime-min": m.Wait.Min, "waittime-max": m.Wait.Max, "waittime-total": m.Wait.Total, "waittime-avg": m.Wait.Avg(),
		"holdtime-min": m.Hold.Min, "holdtime-max": m.Hold.Max, "holdtime-total": m.Hold.Total, "holdtime-avg": m.Hold.Avg(),
	} {
		tb.check(t, label, col, want)
	}
}

func TestWriteTable(t *testing.T) {
	us := time.Microsecond
	stats := []ClassStats{{
		Name: "table.mutex",
		Write: ModeStats{Contentions: 2, Acquisitions: 5,
			Wait: timing(1500, 2500), Hold: timing(100, 200, 300, 400, 12345)},
		HottestHold: 9 * us,
	}, {
		Name:        "table.rw",
		Write:       ModeStats{Acquisitions: 1, Hold: timing(7 * us)},
		Read:        ModeStats{Contentions: 1, Acquisitions: 3, Bounces: 2, Wait: timing(800), Hold: timing(50 * us)},
		HottestHold: 7 * us,
	}, {
		Name: "table.readonly",
		Read: ModeStats{Acquisitions: 1, Hold: timing(10)},
	}}

	var b strings.Builder
	if err := WriteTable(&b, stats, 0); err != nil {
		t.Fatal(err)
	}
	tb := parseTable(t, b.String())
	if strings.Join(tb.columns, " ") != strings.Join(lockStatColumns, " ") {
		t.Errorf("columns %v, want %v", tb.columns, lockStatColumns)
	}
	if got := strings.Join(tb.labels, " "); got != "table.mutex table.rw-W table.rw-R table.readonly-R" {
		t.Errorf("lines %s", got)
	}
	tb.checkMode(t, "table.mutex", stats[0].Write)
	tb.checkMode(t, "table.rw-W", stats[1].Write)
	tb.checkMode(t, "table.rw-R", stats[1].Read)
	tb.checkMode(t, "table.readonly-R", stats[2].Read)
	if tb.footer != "" {
		t.Errorf("footer %q without a worker time", tb.footer)
	}

	const workerTime = 100 * time.Microsecond
	b.Reset()
	if err := WriteTable(&b, stats, workerTime); err != nil {
		t.Fatal(err)
	}
	tb = parseTable(t, b.String())
	if want := append(append([]string(nil), lockStatColumns...), boundColumns...); strings.Join(tb.columns, " ") != strings.Join(want, " ") {
		t.Errorf("columns %v, want %v", tb.columns, want)
	}
	tb.checkMode(t, "table.mutex", stats[0].Write)
	tb.check(t, "table.mutex", "holdtime-hottest", 9*us)
	tb.check(t, "table.mutex", "serial-fraction", 0.09)
	tb.check(t, "table.mutex", "wait-fraction", 0.04)
	tb.check(t, "table.rw-W", "serial-fraction", 0.07)
	tb.check(t, "table.rw-W", "wait-fraction", 0.0)
	tb.check(t, "table.rw-R", "holdtime-hottest", "-")
	tb.check(t, "table.rw-R", "serial-fraction", "-")
	tb.check(t, "table.rw-R", "wait-fraction", 0.008)
	if want := "serial fraction 0.0900 (table.mutex), speedup at most 11.11"; !strings.Contains(tb.footer, want) {
		t.Errorf("footer %q does not say %q", tb.footer, want)
	}

	if f, name := RunSerialFraction(stats[2:], workerTime); f != 0 || name != "" {
		t.Errorf("read-only run: serial fraction %v (%q), want 0", f, name)
	}
}

// TestWriteTableLive prints the statistics of a real lock.
func TestWriteTableLive(t *testing.T) {
	withStats(t)
	c := NewClass("table.live")
	var rw RWMutex
	rw.Init(c, 1)
	rw.Lock()
	rw.Unlock()
	rw.RLock()
	rw.RUnlock()
	s := c.Stats()
	var b strings.Builder
	if err := WriteTable(&b, Snapshot(), time.Second); err != nil {
		t.Fatal(err)
	}
	tb := parseTable(t, b.String())
	tb.checkMode(t, c.name+"-W", s.Write)
	tb.checkMode(t, c.name+"-R", s.Read)
	tb.check(t, c.name+"-W", "holdtime-hottest", s.HottestHold)
}
