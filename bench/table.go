package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// WriteHeader writes the lines that say what measured: the machine, the
// program and the sweep's timing.
func (r *Results) WriteHeader(w io.Writer) {
	e := r.Env
	cpu := ""
	if e.CPU != "" {
		cpu = " (" + e.CPU + ")"
	}
	fmt.Fprintf(w, "tasklist bench: GOMAXPROCS %d, %d cores%s, %s, Linux %s, GOGC %s\n",
		e.GOMAXPROCS, e.Cores, cpu, e.GoVersion, e.Kernel, e.GOGC)
	fmt.Fprintf(w, "%d repetitions of a %v warm-up and %d × %v samples, interleaved across plans\n",
		r.Reps, r.Timing.Warmup, r.Timing.Samples, r.Timing.Sample)
	if r.Interrupted {
		fmt.Fprintln(w, "interrupted: the figures below are what was measured before the stop")
	}
}

// colWidth is the least width of a plan's column in the table.
const colWidth = 22

// WriteTable writes the mmtests-style table: for each workload, a row per
// worker count with each plan's center and its change against the first
// plan (marked *…* when significant), then the intervals, allocations,
// lock profile and the host's own rows; then the projection, and the
// seed table if there is one.
func (r *Results) WriteTable(w io.Writer) {
	r.WriteHeader(w)
	for _, g := range r.Groups {
		var plans []string
		for _, p := range g.Plans {
			if p != Host {
				plans = append(plans, p)
			}
		}
		better := "higher is better"
		if !g.HigherIsBetter {
			better = "lower is better"
		}
		fmt.Fprintf(w, "\n%s: %s, %s\n", g.Workload, g.Unit, better)
		label := len(g.Workload) + 4
		width := colWidth
		for _, p := range plans {
			width = max(width, len(p))
		}
		fmt.Fprintf(w, "%-10s%-*s", "", label, "")
		for _, p := range plans {
			fmt.Fprintf(w, " %*s", width, p)
		}
		fmt.Fprintln(w)
		row := func(kind string, n int, cell func(pt *Point) string) {
			fmt.Fprintf(w, "%-10s%-*s", kind, label, fmt.Sprintf("%s-%d", g.Workload, n))
			for _, p := range plans {
				c := ""
				if pt := r.Point(g.Workload, p, n); pt != nil && len(pt.Values) > 0 {
					c = cell(pt)
				}
				fmt.Fprintf(w, " %*s", width, c)
			}
			fmt.Fprintln(w)
		}
		kind := "Hmean"
		if !g.HigherIsBetter {
			kind = "Amean"
		}
		for _, n := range r.Workers {
			row(kind, n, func(pt *Point) string { return r.centerCell(pt) })
		}
		for _, n := range r.Workers {
			row("CI95", n, func(pt *Point) string { return intervalCell(pt.Summary()) })
		}
		for _, n := range r.Workers {
			row("Others", n, func(pt *Point) string {
				if l, ok := pt.OtherLoad(); ok {
					return fmt.Sprintf("%.2f CPUs", l)
				}
				return "?"
			})
		}
		for _, n := range r.Workers {
			row("Allocs", n, func(pt *Point) string {
				a, b := pt.AllocsPerOp()
				return fmt.Sprintf("%.1f %s", a, bytesString(b))
			})
		}
		for _, n := range r.Workers {
			if r.hasLocks(g.Workload, n) {
				row("Serial", n, func(pt *Point) string { return serialCell(pt.Locks) })
				row("Waits", n, func(pt *Point) string { return waitCell(pt.Locks) })
				row("Shared", n, func(pt *Point) string { return sharedCell(pt.Locks) })
			}
		}
		for _, n := range r.Workers {
			pt := r.Point(g.Workload, Host, n)
			switch {
			case pt == nil:
			case pt.Err != "":
				fmt.Fprintf(w, "%-10s%-*s %s\n", "Host", label, fmt.Sprintf("%s-%d", g.Workload, n), pt.Err)
			case len(pt.Values) > 0:
				s := pt.Summary()
				fmt.Fprintf(w, "%-10s%-*s %*s   %s\n", "Host", label, fmt.Sprintf("%s-%d", g.Workload, n),
					width, formatValue(s.Center), intervalCell(s))
			}
		}
		if g.HostNote != "" && r.hasHost(g.Workload) {
			fmt.Fprintf(w, "  host: %s\n", g.HostNote)
		}
	}
	r.writeProjection(w)
	if len(r.Seeds) > 0 {
		r.WriteSeeds(w)
	}
}

// centerCell is "123.4 (  0.00%)" for the base, "150.1 * 21.60%*" for a
// significant change and "150.1 (  1.20%)" for another.
func (r *Results) centerCell(pt *Point) string {
	s := pt.Summary()
	v := formatValue(s.Center)
	c, ok := r.Compare(pt)
	switch {
	case !ok:
		return fmt.Sprintf("%s (%7.2f%%)", v, 0.0)
	case c.Significant:
		return fmt.Sprintf("%s *%7.2f%%*", v, c.ChangePct)
	default:
		return fmt.Sprintf("%s (%7.2f%%)", v, c.ChangePct)
	}
}

// intervalCell is the interval relative to the center: "-1.2% +1.5%".
// An interval without an upper bound (a harmonic mean of a few scattered
// repetitions, whose reciprocals' interval reaches zero) is its lower end
// alone: "-45.3%".
func intervalCell(s Summary) string {
	if s.Center == 0 || s.N < 2 {
		return "n/a"
	}
	lo := fmt.Sprintf("-%.1f%%", (1-s.Lo/s.Center)*100)
	if math.IsInf(s.Hi, 1) {
		return lo
	}
	return fmt.Sprintf("%s +%.1f%%", lo, (s.Hi/s.Center-1)*100)
}

func serialCell(p *LockProfile) string {
	if p == nil {
		return ""
	}
	if p.SerialClass == "" {
		return "0%"
	}
	return fmt.Sprintf("%.1f%% %s", p.Serial*100, shortClass(p.SerialClass))
}

func waitCell(p *LockProfile) string {
	if p == nil {
		return ""
	}
	if len(p.Waits) == 0 {
		return "none"
	}
	return fmt.Sprintf("%.1f%% %s", p.Waits[0].Share*100, shortClass(p.Waits[0].Class))
}

// sharedCell names the class of reader-writer locks the workers' CPUs
// passed between them most, with how often per iteration.
func sharedCell(p *LockProfile) string {
	if p == nil {
		return ""
	}
	if p.Shared == "" {
		return "none"
	}
	return fmt.Sprintf("%.2g/it %s", p.SharedPerOp, shortClass(p.Shared))
}

func (r *Results) hasLocks(workload string, n int) bool {
	for _, pt := range r.Points {
		if pt.Workload == workload && pt.Workers == n && pt.Locks != nil {
			return true
		}
	}
	return false
}

func (r *Results) hasHost(workload string) bool {
	for _, pt := range r.Points {
		if pt.Workload == workload && pt.Plan == Host && len(pt.Values) > 0 {
			return true
		}
	}
	return false
}

// writeProjection writes the projection section: the fit to the measured
// speedups where scaling was measured, Amdahl's law from the serial
// fraction only where it was not; and Amdahl's bound beside it, marked
// where the measurement contradicts it.
func (r *Results) writeProjection(w io.Writer) {
	prs := r.Projections()
	if len(prs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nProjection past this machine (a projection from the points above, not a measurement):")
	fmt.Fprintln(w, "the USL fitted to the measured speedups (its contention term σ alone below 4 worker counts), within Amdahl's bound 1/serial fraction.")
	fmt.Fprintf(w, "%-20s %-22s %-10s %8s %8s %24s %8s", "workload", "plan", "fit", "σ", "κ", "serial", "bound")
	for _, c := range ProjectedCores {
		fmt.Fprintf(w, " %9s", fmt.Sprintf("×@%d", c))
	}
	fmt.Fprintln(w)
	var contradicted []string
	for _, pr := range prs {
		fit, sigma, kappa := "—", "—", "—"
		if pr.FitKind != "" {
			fit, sigma, kappa = pr.FitKind, fmt.Sprintf("%.4f", pr.Fit.Sigma), fmt.Sprintf("%.5f", pr.Fit.Kappa)
		}
		serial, bound := "—", "—"
		if pr.HasSerial {
			serial = fmt.Sprintf("%.2f%% %s", pr.Serial*100, shortClass(pr.SerialClass))
			bound = "∞"
			if !math.IsInf(pr.Amdahl, 1) {
				bound = fmt.Sprintf("%.1f", pr.Amdahl)
			}
		}
		if n := pr.ContradictedAt; n > 0 {
			bound += " ✗"
			at := slices.Index(pr.Ns, n)
			why := "the lock statistics do not see what limits it"
			if pr.Shared != "" {
				why = fmt.Sprintf("the workers pass %s's line between them, %.2g times an iteration, which no hold or wait shows", shortClass(pr.Shared), pr.SharedPerOp)
			}
			contradicted = append(contradicted, fmt.Sprintf("✗ %s on %s: measured %.2f× at %d workers, below Amdahl's %.2f× from the serial fraction: the bound is contradicted; %s.",
				pr.Workload, pr.Plan, pr.Speedups[at], n, AmdahlSpeedup(pr.Serial, n), why))
		}
		fmt.Fprintf(w, "%-20s %-22s %-10s %8s %8s %24s %8s", pr.Workload, shorten(pr.Plan, 22), fit, sigma, kappa, shorten(serial, 24), bound)
		for i := range pr.Cores {
			cell := ""
			switch {
			case pr.FitKind != "":
				cell = fmt.Sprintf("%.1f %s", pr.FitSpeedup[i], fitMark[pr.FitKind])
			case pr.HasSerial:
				cell = fmt.Sprintf("%.1f A", pr.AmdahlSpeedup[i])
			}
			fmt.Fprintf(w, " %9s", cell)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "(U: the USL's projected speedup over one worker; C: the contention term's; A: Amdahl's from the serial fraction, where no scaling was measured.)")
	for _, line := range contradicted {
		fmt.Fprintln(w, line)
	}
}

// fitMark marks a projected speedup with the kind of fit it comes from.
var fitMark = map[string]string{"USL": "U", "contention": "C"}

// WriteSeeds writes the seed table: each seed's claim beside our A/B of
// its toggle under SeedBase.
func (r *Results) WriteSeeds(w io.Writer) {
	fmt.Fprintf(w, "\nSeeds: each change's A/B under %s (toggle off vs on), beside the seed's own claim\n", SeedBase)
	fmt.Fprintf(w, "%-5s %-26s %-15s %-42s %s\n", "seed", "toggle", "workload", "claim", "ours by workers (* significant) · direction matches")
	for _, s := range r.Seeds {
		var parts []string
		for _, at := range s.At {
			parts = append(parts, fmt.Sprintf("%d: %s", at.Workers, at))
		}
		fmt.Fprintf(w, "%-5s %-26s %-15s %-42s %s · %s\n", s.Seed, s.Toggle, s.Workload, s.Claim.Claim,
			strings.Join(parts, ", "), s.Matches)
	}
}

// formatValue prints a figure with about four significant digits.
func formatValue(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e4:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func bytesString(b float64) string { return fmt.Sprintf("%.0fB", b) }

// shortClass drops the kernel package's prefix from a lock class's name:
// "kernel.User.mu" is "User.mu"; "pid.Allocator.mu" stays.
func shortClass(c string) string { return strings.TrimPrefix(c, "kernel.") }

func shorten(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
