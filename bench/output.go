package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Formats are the names WriteFormat accepts.
var Formats = []string{"table", "json", "bench", "csv"}

// WriteFormat writes r in one of Formats.
func (r *Results) WriteFormat(w io.Writer, format string) error {
	switch format {
	case "table":
		r.WriteTable(w)
		return nil
	case "json":
		return r.WriteJSON(w)
	case "bench":
		return r.WriteBench(w)
	case "csv":
		return r.WriteCSV(w)
	}
	return fmt.Errorf("unknown format %q (formats: %s)", format, strings.Join(Formats, ", "))
}

// jsonResult is one point in the JSON output.
type jsonResult struct {
	Workload       string    `json:"workload"`
	Plan           string    `json:"plan"`
	Workers        int       `json:"workers"`
	Unit           string    `json:"unit"`
	HigherIsBetter bool      `json:"higher_is_better"`
	Values         []float64 `json:"values"`
	Hmean          float64   `json:"hmean"`
	// Center is the hmean for rates and the arithmetic mean for
	// latencies; CILo and CIHi bound its 95% interval (CIHi null when
	// unbounded).
	CenterKind  string     `json:"center_kind"`
	Center      float64    `json:"center"`
	CILo        float64    `json:"ci_lo"`
	CIHi        *float64   `json:"ci_hi"`
	Min         float64    `json:"min"`
	Max         float64    `json:"max"`
	Base        string     `json:"base,omitempty"`
	ChangePct   *float64   `json:"change_pct,omitempty"`
	PValue      *float64   `json:"p_value,omitempty"`
	Significant *bool      `json:"significant,omitempty"`
	AllocsPerOp *float64   `json:"allocs_per_op,omitempty"`
	BytesPerOp  *float64   `json:"bytes_per_op,omitempty"`
	Locks       *jsonLocks `json:"locks,omitempty"`
	// OtherLoad is the other work beside each repetition, in CPUs.
	OtherLoad []float64 `json:"other_load"`
	Notes     []string  `json:"notes,omitempty"`
	Error     string    `json:"error,omitempty"`
}

type jsonLocks struct {
	SerialFraction float64     `json:"serial_fraction"`
	SerialClass    string      `json:"serial_class,omitempty"`
	Waits          []ClassWait `json:"waits"`
	SharedClass    string      `json:"shared_class,omitempty"`
	SharedPerOp    float64     `json:"shared_per_op,omitempty"`
	SharedShare    float64     `json:"shared_share,omitempty"`
}

type jsonProjection struct {
	Workload string `json:"workload"`
	Plan     string `json:"plan"`
	// Fit is "USL" or "contention" (σ alone); usl_sigma, usl_kappa and
	// usl_speedup are the fit's.
	Fit                  string    `json:"fit,omitempty"`
	USLSigma             *float64  `json:"usl_sigma,omitempty"`
	USLKappa             *float64  `json:"usl_kappa,omitempty"`
	SerialFraction       *float64  `json:"serial_fraction,omitempty"`
	AmdahlBound          *float64  `json:"amdahl_bound,omitempty"`
	AmdahlContradictedAt int       `json:"amdahl_contradicted_at,omitempty"`
	Cores                []int     `json:"cores"`
	USLSpeedup           []float64 `json:"usl_speedup,omitempty"`
	AmdahlSpeedup        []float64 `json:"amdahl_speedup,omitempty"`
}

type jsonSeed struct {
	Seed     string          `json:"seed"`
	Toggle   string          `json:"toggle"`
	Workload string          `json:"workload"`
	Claim    string          `json:"claim"`
	Matches  string          `json:"matches"`
	At       []jsonSeedPoint `json:"at"`
}

type jsonSeedPoint struct {
	Workers     int     `json:"workers"`
	ChangePct   float64 `json:"change_pct"`
	PValue      float64 `json:"p_value"`
	Significant bool    `json:"significant"`
}

// WriteJSON writes r as one JSON object: env, the sweep's settings,
// results (one element per point), projections and seeds.
func (r *Results) WriteJSON(w io.Writer) error {
	out := struct {
		Env         Env              `json:"env"`
		Workers     []int            `json:"workers"`
		Reps        int              `json:"reps"`
		WarmupNS    time.Duration    `json:"warmup_ns"`
		SampleNS    time.Duration    `json:"sample_ns"`
		Samples     int              `json:"samples"`
		Interrupted bool             `json:"interrupted"`
		Results     []jsonResult     `json:"results"`
		Projections []jsonProjection `json:"projections"`
		Seeds       []jsonSeed       `json:"seeds,omitempty"`
	}{Env: r.Env, Workers: r.Workers, Reps: r.Reps, WarmupNS: r.Timing.Warmup, SampleNS: r.Timing.Sample,
		Samples: r.Timing.Samples, Interrupted: r.Interrupted, Results: []jsonResult{}, Projections: []jsonProjection{}}
	for _, pt := range r.Points {
		if len(pt.Values) == 0 && pt.Err == "" {
			continue
		}
		out.Results = append(out.Results, r.jsonPoint(pt))
	}
	for _, pr := range r.Projections() {
		jp := jsonProjection{Workload: pr.Workload, Plan: pr.Plan, Cores: pr.Cores, Fit: pr.FitKind,
			USLSpeedup: pr.FitSpeedup, AmdahlSpeedup: pr.AmdahlSpeedup, AmdahlContradictedAt: pr.ContradictedAt}
		if pr.FitKind != "" {
			jp.USLSigma, jp.USLKappa = ptr(pr.Fit.Sigma), ptr(pr.Fit.Kappa)
		}
		if pr.HasSerial {
			jp.SerialFraction = ptr(pr.Serial)
			if !math.IsInf(pr.Amdahl, 1) {
				jp.AmdahlBound = ptr(pr.Amdahl)
			}
		}
		out.Projections = append(out.Projections, jp)
	}
	for _, s := range r.Seeds {
		js := jsonSeed{Seed: s.Seed, Toggle: s.Toggle, Workload: s.Workload, Claim: s.Claim.Claim, Matches: s.Matches}
		for _, at := range s.At {
			js.At = append(js.At, jsonSeedPoint{Workers: at.Workers, ChangePct: at.ChangePct, PValue: at.P, Significant: at.Significant})
		}
		out.Seeds = append(out.Seeds, js)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func (r *Results) jsonPoint(pt *Point) jsonResult {
	s := pt.Summary()
	jr := jsonResult{Workload: pt.Workload, Plan: pt.Plan, Workers: pt.Workers, Unit: pt.Unit,
		HigherIsBetter: pt.HigherIsBetter, Values: pt.Values, Hmean: Hmean(pt.Values), CenterKind: s.Kind,
		Center: s.Center, CILo: s.Lo, Min: s.Min, Max: s.Max, Notes: pt.Notes, Error: pt.Err, OtherLoad: pt.Loads}
	if jr.OtherLoad == nil {
		jr.OtherLoad = []float64{}
	}
	if jr.Values == nil {
		jr.Values = []float64{}
	}
	if !math.IsInf(s.Hi, 1) {
		jr.CIHi = ptr(s.Hi)
	}
	if b := r.Base(pt); b != nil {
		c, _ := r.Compare(pt)
		jr.Base, jr.ChangePct, jr.PValue, jr.Significant = b.Plan, ptr(c.ChangePct), ptr(c.P), &c.Significant
	}
	if len(pt.Allocs) > 0 {
		a, b := pt.AllocsPerOp()
		jr.AllocsPerOp, jr.BytesPerOp = ptr(a), ptr(b)
	}
	if pt.Locks != nil {
		l := pt.Locks
		jr.Locks = &jsonLocks{SerialFraction: l.Serial, SerialClass: l.SerialClass, Waits: l.Waits,
			SharedClass: l.Shared, SharedPerOp: l.SharedPerOp, SharedShare: l.SharedShare}
		if jr.Locks.Waits == nil {
			jr.Locks.Waits = []ClassWait{}
		}
	}
	return jr
}

func ptr[T any](v T) *T { return &v }

// benchNameChar matches what may not appear in a benchmark name's part.
var benchNameChar = regexp.MustCompile(`[\s/]`)

// WriteBench writes r in the Go benchmark format, one line per
// repetition, for benchstat: BenchmarkWorkload/NAME/plan=P/workers=N,
// with the figure in its unit and, for the model, allocs/op and B/op per
// iteration. The configuration lines carry the machine's description.
// Compare plans with `benchstat -col /plan FILE`.
func (r *Results) WriteBench(w io.Writer) error {
	e := r.Env
	fmt.Fprintf(w, "goos: %s\ngoarch: %s\n", e.GOOS, e.GOARCH)
	if e.CPU != "" {
		fmt.Fprintf(w, "cpu: %s\n", e.CPU)
	}
	fmt.Fprintf(w, "gomaxprocs: %d\ncores: %d\ngo: %s\nkernel: %s\ngogc: %s\n", e.GOMAXPROCS, e.Cores, e.GoVersion, e.Kernel, e.GOGC)
	for _, pt := range r.Points {
		name := fmt.Sprintf("BenchmarkWorkload/%s/plan=%s/workers=%d-%d", pt.Workload,
			benchNameChar.ReplaceAllString(pt.Plan, "_"), pt.Workers, e.GOMAXPROCS)
		unit := strings.ReplaceAll(pt.Unit, " ", "_")
		for i, v := range pt.Values {
			line := fmt.Sprintf("%s\t1\t%s %s", name, strconv.FormatFloat(v, 'g', -1, 64), unit)
			if i < len(pt.Allocs) {
				line += fmt.Sprintf("\t%s allocs/op\t%s B/op", strconv.FormatFloat(pt.Allocs[i], 'g', 6, 64),
					strconv.FormatFloat(pt.Bytes[i], 'g', 6, 64))
			}
			if _, err := fmt.Fprintln(w, line); err != nil {
				return err
			}
		}
	}
	return nil
}

// csvHeader names the CSV columns.
var csvHeader = []string{"workload", "plan", "workers", "unit", "reps", "center_kind", "center", "ci_lo", "ci_hi",
	"min", "max", "hmean", "base", "change_pct", "p_value", "significant", "allocs_per_op", "bytes_per_op",
	"serial_fraction", "serial_class", "top_wait_class", "top_wait_share", "other_load", "values", "gomaxprocs", "cores", "go",
	"kernel", "gogc", "error"}

// WriteCSV writes one row per point, under a header row. Values holds
// the repetitions separated by ';'. Empty cells mean "not measured".
func (r *Results) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	for _, pt := range r.Points {
		if len(pt.Values) == 0 && pt.Err == "" {
			continue
		}
		s := pt.Summary()
		row := []string{pt.Workload, pt.Plan, strconv.Itoa(pt.Workers), pt.Unit, strconv.Itoa(len(pt.Values)),
			s.Kind, f(s.Center), f(s.Lo), "", f(s.Min), f(s.Max), f(Hmean(pt.Values)), "", "", "", "", "", "", "", "", "", ""}
		if !math.IsInf(s.Hi, 1) {
			row[8] = f(s.Hi)
		}
		if b := r.Base(pt); b != nil {
			c, _ := r.Compare(pt)
			row[12], row[13], row[14], row[15] = b.Plan, f(c.ChangePct), f(c.P), strconv.FormatBool(c.Significant)
		}
		if len(pt.Allocs) > 0 {
			a, b := pt.AllocsPerOp()
			row[16], row[17] = f(a), f(b)
		}
		if l := pt.Locks; l != nil {
			row[18], row[19] = f(l.Serial), l.SerialClass
			if len(l.Waits) > 0 {
				row[20], row[21] = l.Waits[0].Class, f(l.Waits[0].Share)
			}
		}
		load := ""
		if l, ok := pt.OtherLoad(); ok {
			load = f(l)
		}
		vals := make([]string, len(pt.Values))
		for i, v := range pt.Values {
			vals[i] = f(v)
		}
		row = append(row, load, strings.Join(vals, ";"), strconv.Itoa(r.Env.GOMAXPROCS), strconv.Itoa(r.Env.Cores),
			r.Env.GoVersion, r.Env.Kernel, r.Env.GOGC, pt.Err)
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}
