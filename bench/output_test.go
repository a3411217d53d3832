package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"tasklist/workload"
)

// synthetic returns results as a sweep of fork-exit on scalable,
// linux-2.6.35 and the host, and of pthread-create on two plans, at 1, 2,
// 4 and 8 workers, would give them, with lock profiles and seed claims.
func synthetic(t *testing.T) *Results {
	t.Helper()
	fork, _ := workload.Named("fork-exit")
	pc, _ := workload.Named("pthread-create")
	cfg := Config{Groups: []Group{
		{Workload: fork, Plans: []string{"scalable", "linux-2.6.35", Host}},
		{Workload: pc, Plans: []string{SeedBase, SeedBase + ",release-tracees-in-reaper"}},
	}, Workers: []int{1, 2, 4, 8}, Reps: 5, Timing: tinyTiming}
	r := newResults(cfg)
	r.Env.GOGC = "default"
	for _, pt := range r.Points {
		base := 1000.0 * USL{Sigma: 0.05, Kappa: 0.002}.Speedup(pt.Workers)
		switch {
		case pt.Workload == "pthread-create" && pt.Plan == SeedBase:
			base = 40
		case pt.Workload == "pthread-create":
			base = 25
		case pt.Plan == "linux-2.6.35":
			base *= 0.7
		case pt.Plan == Host:
			base *= 50
		}
		for i := range 5 {
			pt.add(measurement{value: base * (1 + 0.01*float64(i)), allocs: 6, bytes: 942})
		}
		if pt.Plan != Host {
			pt.Locks = &LockProfile{Serial: 0.02, SerialClass: "kernel.ProcessGroup.mu",
				Waits: []ClassWait{{Class: "kernel.ProcessGroup.mu", Share: 0.05, Contended: 0.1}, {Class: "pid.Allocator.mu", Share: 0.01, Contended: 0.02}}}
		}
	}
	r.Point("fork-exit", Host, 8).Notes = []string{"unprivileged"}
	r.Seeds = []SeedResult{{Claim: Claims[1], Matches: "yes"}}
	for _, n := range r.Workers {
		off, on := r.Point("pthread-create", SeedBase, n), r.Point("pthread-create", Claims[1].Plan(), n)
		r.Seeds[0].At = append(r.Seeds[0].At, SeedPoint{Workers: n, Comparison: Compare(off.Values, on.Values, false), Off: off.Summary(), On: on.Summary()})
	}
	return r
}

// TestJSONSchema: the JSON output is one object whose results array has,
// for each measured point, the fields scripts rely on.
func TestJSONSchema(t *testing.T) {
	r := synthetic(t)
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Env     map[string]any   `json:"env"`
		Results []map[string]any `json:"results"`
		Seeds   []map[string]any `json:"seeds"`
		Projs   []map[string]any `json:"projections"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Results) != len(r.Points) {
		t.Fatalf("%d results for %d points", len(doc.Results), len(r.Points))
	}
	for _, key := range []string{"gomaxprocs", "cores", "go", "kernel", "gogc"} {
		if _, ok := doc.Env[key]; !ok {
			t.Errorf("env has no %q", key)
		}
	}
	for _, res := range doc.Results {
		for _, key := range []string{"workload", "plan", "workers", "unit", "values", "hmean", "center", "ci_lo", "min", "max"} {
			if _, ok := res[key]; !ok {
				t.Fatalf("result %v has no %q", res, key)
			}
		}
		if vals := res["values"].([]any); len(vals) != 5 {
			t.Fatalf("%d values", len(vals))
		}
		_, compared := res["change_pct"]
		isBase := res["plan"] == "scalable" || res["plan"] == Host || res["workload"] == "pthread-create" && res["plan"] == SeedBase
		if compared == isBase {
			t.Errorf("%v/%v: change_pct present %v", res["workload"], res["plan"], compared)
		}
	}
	pt := r.Point("fork-exit", "linux-2.6.35", 2)
	for _, res := range doc.Results {
		if res["plan"] == pt.Plan && res["workers"] == 2.0 && res["workload"] == "fork-exit" {
			if res["hmean"] != Hmean(pt.Values) || res["significant"] != true || res["unit"] != "jobs/min" {
				t.Fatalf("fork-exit on linux-2.6.35 at 2: %v", res)
			}
		}
	}
	if len(doc.Seeds) != 1 || doc.Seeds[0]["matches"] != "yes" || len(doc.Projs) == 0 {
		t.Fatalf("seeds %v, %d projections", doc.Seeds, len(doc.Projs))
	}
}

// TestBenchFormatParses: x/perf's benchfmt reads the bench output back:
// one result per repetition, named by workload, plan and workers, with
// the figure and, for the model, allocs/op and B/op.
func TestBenchFormatParses(t *testing.T) {
	r := synthetic(t)
	var buf bytes.Buffer
	if err := r.WriteBench(&buf); err != nil {
		t.Fatal(err)
	}
	rd := benchfmt.NewReader(&buf, "bench.txt")
	n := 0
	for rd.Scan() {
		switch rec := rd.Result(); rec := rec.(type) {
		case *benchfmt.SyntaxError:
			t.Fatalf("syntax error: %v", rec)
		case *benchfmt.Result:
			n++
			base, parts := rec.Name.Parts()
			if string(base) != "Workload" || len(parts) != 4 || string(parts[3]) != "-"+strconv.Itoa(r.Env.GOMAXPROCS) {
				t.Fatalf("name %q", rec.Name.Full())
			}
			wl, plan := strings.TrimPrefix(string(parts[0]), "/"), strings.TrimPrefix(string(parts[1]), "/plan=")
			workers, _ := strconv.Atoi(strings.TrimPrefix(string(parts[2]), "/workers="))
			pt := r.Point(wl, plan, workers)
			if pt == nil {
				t.Fatalf("no point for %q", rec.Name.Full())
			}
			if v, ok := rec.Value(pt.Unit); !ok || v != pt.Values[0] && v != pt.Values[1] && v != pt.Values[2] && v != pt.Values[3] && v != pt.Values[4] {
				t.Fatalf("%q: %v %s not among %v", rec.Name.Full(), v, pt.Unit, pt.Values)
			}
			if _, ok := rec.Value("allocs/op"); ok == (plan == Host) {
				t.Fatalf("%q: allocs/op present %v", rec.Name.Full(), ok)
			}
			if v := rec.GetConfig("gomaxprocs"); v != strconv.Itoa(r.Env.GOMAXPROCS) {
				t.Fatalf("gomaxprocs config %q", v)
			}
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	if want := len(r.Points) * 5; n != want {
		t.Fatalf("%d results, want %d", n, want)
	}
}

// TestCSV: a header and one row per point, the repetitions in one cell.
func TestCSV(t *testing.T) {
	r := synthetic(t)
	var buf bytes.Buffer
	if err := r.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+len(r.Points) || strings.Join(rows[0], ",") != strings.Join(csvHeader, ",") {
		t.Fatalf("%d rows, header %v", len(rows), rows[0])
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, row := range rows[1:] {
		workers, _ := strconv.Atoi(row[col["workers"]])
		pt := r.Point(row[col["workload"]], row[col["plan"]], workers)
		if pt == nil || len(strings.Split(row[col["values"]], ";")) != 5 {
			t.Fatalf("row %v", row)
		}
		if hm, _ := strconv.ParseFloat(row[col["hmean"]], 64); math.Abs(hm-Hmean(pt.Values)) > 1e-6*hm {
			t.Fatalf("hmean %v, want %v", hm, Hmean(pt.Values))
		}
	}
}

// TestTable: the mmtests layout, a significant change between asterisks,
// the host in rows of its own, the projection and the seed table.
func TestTable(t *testing.T) {
	r := synthetic(t)
	// Two scattered repetitions: their interval has no upper bound.
	r.Point("fork-exit", Host, 2).Values = []float64{1000, 100000}
	var buf bytes.Buffer
	r.WriteTable(&buf)
	out := buf.String()
	for _, want := range []string{
		"GOMAXPROCS", "Hmean     fork-exit-2", "(   0.00%)", "* -30.00%*", "Amean     pthread-create-1",
		"Host      fork-exit-8", "CI95", "Allocs", "6.0 942B", "Serial", "ProcessGroup.mu",
		"Projection past this machine", "0.0500", "release-tracees-in-reaper", "23 vs 42 µs/call",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(strings.ToLower(out), "inf") {
		t.Errorf("the table prints an infinite bound:\n%s", out)
	}
	header := strings.SplitN(out[strings.Index(out, "fork-exit: "):], "\n", 3)[1]
	if !strings.Contains(header, "linux-2.6.35") || strings.Contains(header, Host) {
		t.Errorf("the plan columns are %q: the host must be rows of its own", header)
	}
}

// TestIntervalCell: an interval is its two ends relative to the center;
// one without an upper bound, as scattered repetitions of a harmonic mean
// give, is its lower end alone.
func TestIntervalCell(t *testing.T) {
	for _, tc := range []struct {
		values []float64
		want   string
	}{
		{[]float64{100, 100, 100}, "-0.0% +0.0%"},
		{[]float64{1, 100}, "-92.6%"},
		{[]float64{100}, "n/a"},
	} {
		s := Summarize(tc.values, true)
		if got := intervalCell(s); got != tc.want {
			t.Errorf("intervalCell(%v) = %q, want %q (summary %+v)", tc.values, got, tc.want, s)
		}
	}
}
