package bench

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// chart is one figure of the report.
type chart struct {
	// name is the file name without extension; the chart is saved as
	// name.svg and name.png.
	name    string
	title   string
	caption string
	plot    *plot.Plot
	// small marks a chart for the top of the report, shown several to a
	// row.
	small bool
}

// chartName is the file name of a chart of kind for workload: a character that has no place
// in a file name or a relative URL (the colon of replay:NAME, which would read as a scheme)
// becomes a hyphen.
func chartName(kind, workload string) string {
	return kind + "-" + strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == '-' || r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '-'
	}, workload)
}

// The charts' sizes.
const (
	chartWidth, chartHeight = 16 * vg.Centimeter, 10 * vg.Centimeter
	smallWidth, smallHeight = 11 * vg.Centimeter, 8 * vg.Centimeter
	// smallFrame is about what a small chart's title and axes take of its
	// height, smallLegendRow a row of its legend.
	smallFrame, smallLegendRow = 2 * vg.Centimeter, vg.Length(11) // in points
)

// save writes the chart as SVG and PNG into dir.
func (c *chart) save(dir string) error {
	width, height := chartWidth, chartHeight
	if c.small {
		width, height = smallWidth, smallHeight
	}
	for _, ext := range []string{".svg", ".png"} {
		if err := c.plot.Save(width, height, filepath.Join(dir, c.name+ext)); err != nil {
			return fmt.Errorf("chart %s: %w", c.name, err)
		}
	}
	return nil
}

// intervalXYs are points with asymmetric Y intervals, for error bars.
type intervalXYs struct {
	plotter.XYs
	lo, hi []float64 // distances below and above each point
}

func (e intervalXYs) YError(i int) (float64, float64) { return e.lo[i], e.hi[i] }

func (e *intervalXYs) add(x float64, s Summary) {
	e.XYs = append(e.XYs, plotter.XY{X: x, Y: s.Center})
	hi := s.Hi
	if math.IsInf(hi, 1) {
		hi = s.Max
	}
	// The lower end stays positive, for logarithmic axes.
	e.lo = append(e.lo, min(max(0, s.Center-s.Lo), 0.999*s.Center))
	e.hi = append(e.hi, max(0, hi-s.Center))
}

// throughputChart is a workload's figure against workers, a line per
// plan with the host's included, on a logarithmic scale since the host
// and the model differ by orders of magnitude.
func (r *Results) throughputChart(g GroupInfo) (*chart, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %s against workers", g.Workload, g.Unit)
	p.X.Label.Text = "workers"
	p.Y.Label.Text = g.Unit + " (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Tick.Marker = workerTicks(r.Workers)
	p.Legend.Top = true
	drawn := 0
	for i, name := range g.Plans {
		var pts intervalXYs
		for _, n := range r.Workers {
			// A logarithmic axis has no room for a point that did nothing.
			if pt := r.Point(g.Workload, name, n); pt != nil && len(pt.Values) > 0 && pt.Summary().Center > 0 {
				pts.add(float64(n), pt.Summary())
			}
		}
		if len(pts.XYs) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts.XYs)
		if err != nil {
			return nil, err
		}
		line.Color, points.Color = plotutil.Color(i), plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return nil, err
		}
		bars.Color = plotutil.Color(i)
		p.Add(line, points, bars)
		p.Legend.Add(name, line, points)
		drawn++
	}
	if drawn == 0 {
		return nil, nil
	}
	p.Y.Max *= 4 // headroom on the logarithmic axis for the legend
	return &chart{name: chartName("throughput", g.Workload), title: g.Workload, plot: p,
		caption: fmt.Sprintf("%s per plan and worker count, %s; bars are %.0f%% confidence intervals.", g.Unit, betterWord(g.HigherIsBetter), Confidence*100)}, nil
}

// shareReference is the plan a workload's other plans are a share of at a
// glance: private, the limit on this machine, where the sweep ran it, and
// otherwise the first model plan, the base of the comparisons.
func shareReference(g GroupInfo) string {
	ref := ""
	for _, name := range g.Plans {
		switch {
		case name == Private:
			return Private
		case ref == "" && name != Host:
			ref = name
		}
	}
	return ref
}

// shares are plan's figures at each worker count as a percentage of ref's:
// for a latency, ref's time over the plan's, so that more is better either
// way. Worker counts where either did nothing are left out.
func (r *Results) shares(g GroupInfo, ref, plan string) plotter.XYs {
	var xys plotter.XYs
	for _, n := range r.Workers {
		pt, base := r.Point(g.Workload, plan, n), r.Point(g.Workload, ref, n)
		if pt == nil || base == nil || len(pt.Values) == 0 || len(base.Values) == 0 {
			continue
		}
		v, b := pt.Summary().Center, base.Summary().Center
		if v <= 0 || b <= 0 {
			continue
		}
		share := 100 * v / b
		if !g.HigherIsBetter {
			share = 100 * b / v
		}
		xys = append(xys, plotter.XY{X: float64(n), Y: share})
	}
	return xys
}

// shareChart is what a reader of the report wants first of a workload:
// every model plan's figure as a share of the reference's
// (shareReference) at each worker count, a line per plan, the reference
// a dashed line at 100%. The host, measured on other terms, is not there.
func (r *Results) shareChart(g GroupInfo) (*chart, error) {
	ref := shareReference(g)
	if ref == "" {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %% of %s", g.Workload, ref)
	p.X.Label.Text = "workers"
	p.Y.Label.Text = "% of " + ref + ", higher is better"
	p.X.Tick.Marker = workerTicks(r.Workers)
	p.Legend.Top = true
	p.Legend.Left = true
	drawn := 0
	for i, name := range g.Plans {
		if name == Host || name == ref {
			continue
		}
		xys := r.shares(g, ref, name)
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		// The colours and marks of the throughput chart, plan by plan.
		line.Color, points.Color = plotutil.Color(i), plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(name, line, points)
		drawn++
	}
	if drawn == 0 {
		return nil, nil
	}
	lo, hi := float64(r.Workers[0]), float64(r.Workers[len(r.Workers)-1])
	level, err := plotter.NewLine(plotter.XYs{{X: lo, Y: 100}, {X: hi, Y: 100}})
	if err != nil {
		return nil, err
	}
	level.Color, level.Dashes = color.Gray{Y: 96}, plotutil.Dashes(1)
	p.Add(level)
	p.Legend.Add(ref+" (100%)", level)
	p.Legend.TextStyle.Font.Size = smallLegendRow - 2
	p.Y.Min = 0
	// The legend's rows cover the top of the plot: the axis goes as far
	// above the data as they reach down.
	covered := float64(smallLegendRow*vg.Length(drawn+1)) / float64(smallHeight-smallFrame)
	p.Y.Max = max(p.Y.Max, 100) / (1 - min(covered, 0.6))
	caption := fmt.Sprintf("%s: each plan's %s as a share of %s's at each worker count.", g.Workload, g.Unit, ref)
	if !g.HigherIsBetter {
		caption += fmt.Sprintf(" A latency: the share is %s's time over the plan's, so that higher is better here too.", ref)
	}
	return &chart{name: chartName("share", g.Workload), title: g.Workload + " at a glance", caption: caption, plot: p, small: true}, nil
}

func betterWord(higher bool) string {
	if higher {
		return "higher is better"
	}
	return "lower is better"
}

// workerTicks labels the measured worker counts.
type workerTicks []int

func (w workerTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for _, n := range w {
		ticks = append(ticks, plot.Tick{Value: float64(n), Label: fmt.Sprint(n)})
	}
	return ticks
}

// seedChart shows a claim's A/B: at each worker count, the toggle-off and
// toggle-on performance relative to toggle off's center (100), with
// their intervals.
func (r *Results) seedChart(s SeedResult) (*chart, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("seed %s: %s on %s", s.Seed, s.Toggle, s.Workload)
	p.Y.Label.Text = fmt.Sprintf("performance, %% of %s (higher is better)", SeedBase)
	var labels []string
	for _, at := range s.At {
		i := len(labels) / 2 // the group's place among those drawn
		if at.Off.Center <= 0 || at.On.Center <= 0 {
			continue // a side that did nothing has no ratio
		}
		ref := at.Off.Center
		// rel is x as a performance relative to ref: for a latency, the
		// inverse ratio, so that higher is better either way.
		rel := func(x Summary) Summary {
			if x.Kind == "Hmean" {
				return Summary{Center: 100 * x.Center / ref, Lo: 100 * x.Lo / ref, Hi: 100 * x.Hi / ref, Max: 100 * x.Max / ref}
			}
			return Summary{Center: 100 * ref / x.Center, Lo: 100 * ref / x.Hi, Hi: 100 * ref / x.Lo, Max: 100 * ref / x.Min}
		}
		for j, side := range []Summary{rel(at.Off), rel(at.On)} {
			x := float64(2*i + j)
			labels = append(labels, fmt.Sprintf("%dw %s", at.Workers, []string{"off", "on"}[j]))
			bar, err := plotter.NewBarChart(plotter.Values{side.Center}, vg.Points(24))
			if err != nil {
				return nil, err
			}
			bar.XMin = x
			bar.Color = plotutil.Color(j)
			p.Add(bar)
			if i == 0 {
				p.Legend.Add([]string{"toggle off", "toggle on"}[j], bar)
			}
			var whisker intervalXYs
			whisker.add(x, side)
			eb, err := plotter.NewYErrorBars(whisker)
			if err != nil {
				return nil, err
			}
			p.Add(eb)
		}
	}
	p.NominalX(labels...)
	p.Y.Min = 0
	p.Y.Max *= 1.25 // headroom for the legend
	p.Legend.Top = true
	return &chart{name: "seed-" + s.Seed, title: "seed " + s.Seed, plot: p,
		caption: fmt.Sprintf("Seed %s claims %s. Bars: toggle off and on under %s, relative to off; whiskers: %.0f%% intervals.", s.Seed, s.Claim.Claim, SeedBase, Confidence*100)}, nil
}

// lockChart stacks, for each model plan at the largest worker count with
// a lock profile, the share of worker time spent waiting per lock class.
func (r *Results) lockChart(g GroupInfo) (*chart, error) {
	n, plans := 0, []string{}
	for _, w := range r.Workers {
		if r.hasLocks(g.Workload, w) {
			n = w
		}
	}
	if n == 0 {
		return nil, nil
	}
	share := map[string]map[string]float64{} // class → plan → share
	total := map[string]float64{}
	for _, name := range g.Plans {
		pt := r.Point(g.Workload, name, n)
		if pt == nil || pt.Locks == nil {
			continue
		}
		plans = append(plans, name)
		for _, wt := range pt.Locks.Waits {
			if share[wt.Class] == nil {
				share[wt.Class] = map[string]float64{}
			}
			share[wt.Class][name] = wt.Share * 100
			total[wt.Class] += wt.Share
		}
	}
	classes := make([]string, 0, len(share))
	for c := range share {
		classes = append(classes, c)
	}
	slices.SortFunc(classes, func(a, b string) int {
		if total[a] != total[b] {
			if total[a] > total[b] {
				return -1
			}
			return 1
		}
		return compareStrings(a, b)
	})
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s at %d workers: where workers wait", g.Workload, n)
	p.Y.Label.Text = "% of worker time waiting"
	p.NominalX(plans...)
	var below *plotter.BarChart
	for i, c := range classes {
		if i == 6 {
			break
		}
		vals := make(plotter.Values, len(plans))
		for j, name := range plans {
			vals[j] = share[c][name]
		}
		bars, err := plotter.NewBarChart(vals, vg.Points(28))
		if err != nil {
			return nil, err
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Color = color.Black
		if below != nil {
			bars.StackOn(below)
		}
		below = bars
		p.Add(bars)
		p.Legend.Add(shortClass(c), bars)
	}
	if len(classes) == 0 {
		// Nobody waited: draw empty bars so that the chart says so.
		bars, err := plotter.NewBarChart(make(plotter.Values, len(plans)), vg.Points(28))
		if err != nil {
			return nil, err
		}
		p.Add(bars)
		p.Title.Text += " (no waits)"
	}
	// Headroom above the tallest stack for the legend.
	p.Y.Max *= 1.4
	p.Legend.Top = true
	return &chart{name: chartName("locks", g.Workload), title: g.Workload + " locks", plot: p,
		caption: fmt.Sprintf("Share of the workers' time spent waiting for each lock class (the six largest), from a run with lock statistics on at %d workers.", n)}, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// projectionChart draws, for each model plan of a workload, the
// projected speedup over one worker up to 128 cores (the fit to the
// measured speedups where there are any, Amdahl from the serial fraction
// otherwise) and the measured speedups.
func (r *Results) projectionChart(g GroupInfo, prs []Projection) (*chart, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: projected speedup (a projection, not a measurement)", g.Workload)
	p.X.Label.Text = "cores (log scale)"
	p.Y.Label.Text = "speedup over 1 worker"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = workerTicks{1, 2, 4, 8, 16, 32, 64, 128}
	p.Legend.Top = true
	p.Legend.Left = true
	drawn := 0
	for i, pr := range prs {
		if pr.Workload != g.Workload {
			continue
		}
		var curve plotter.XYs
		kind := pr.FitKind
		if kind == "" {
			kind = "Amdahl"
		}
		for c := 1; c <= 128; c *= 2 {
			curve = append(curve, plotter.XY{X: float64(c), Y: pr.At(c)})
		}
		line, err := plotter.NewLine(curve)
		if err != nil {
			return nil, err
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(1)
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("%s (%s)", pr.Plan, kind), line)
		if one := r.Point(g.Workload, pr.Plan, 1); one != nil && Hmean(one.Values) > 0 {
			var measured plotter.XYs
			base := Hmean(one.Values)
			for _, n := range r.Workers {
				if pt := r.Point(g.Workload, pr.Plan, n); pt != nil && len(pt.Values) > 0 {
					measured = append(measured, plotter.XY{X: float64(n), Y: Hmean(pt.Values) / base})
				}
			}
			sc, err := plotter.NewScatter(measured)
			if err != nil {
				return nil, err
			}
			sc.Color = plotutil.Color(i)
			sc.Shape = plotutil.Shape(i)
			p.Add(sc)
		}
		drawn++
	}
	if drawn == 0 {
		return nil, nil
	}
	return &chart{name: chartName("projection", g.Workload), title: g.Workload + " projection", plot: p,
		caption: "Dashed: the projection (the Universal Scalability Law fitted to the measured speedups, its contention term alone with fewer than four worker counts; Amdahl's law from the measured serial fraction only where no scaling was measured). Marks: the measured speedups."}, nil
}
