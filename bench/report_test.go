package bench

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

var imgSrc = regexp.MustCompile(`<img src="([^"]+)"`)

// syntheticReport writes the synthetic results' report into a temporary
// directory and returns it, index.html's path and its text.
func syntheticReport(t *testing.T) (dir, index string, html []byte) {
	t.Helper()
	dir = t.TempDir()
	index, err := synthetic(t).WriteReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	if html, err = os.ReadFile(index); err != nil {
		t.Fatal(err)
	}
	return dir, index, html
}

// TestReportFiles: the report holds every chart as SVG and PNG, the
// results in every format, and an index.html that shows every SVG and
// links every PNG by a relative path.
func TestReportFiles(t *testing.T) {
	dir, _, html := syntheticReport(t)
	// One throughput chart per workload, a lock chart per workload, a
	// projection for the throughput workload (pthread-create is a
	// latency) and a chart per seed.
	want := []string{"share-fork-exit", "share-pthread-create", "throughput-fork-exit", "throughput-pthread-create",
		"locks-fork-exit", "locks-pthread-create", "projection-fork-exit", "seed-001"}
	svgs, _ := filepath.Glob(filepath.Join(dir, "*.svg"))
	if len(svgs) != len(want) {
		t.Fatalf("%d SVG files, want %d: %v", len(svgs), len(want), svgs)
	}
	for _, name := range want {
		for _, ext := range []string{".svg", ".png"} {
			if st, err := os.Stat(filepath.Join(dir, name+ext)); err != nil || st.Size() == 0 {
				t.Errorf("%s%s: %v", name, ext, err)
			}
		}
		if !bytes.Contains(html, []byte(`<img src="`+name+`.svg"`)) || !bytes.Contains(html, []byte(`href="`+name+`.png"`)) {
			t.Errorf("index.html does not show %s", name)
		}
	}
	for name := range ReportFiles {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil || !bytes.Contains(html, []byte(`href="`+name+`"`)) {
			t.Errorf("%s: %v, linked %v", name, err, bytes.Contains(html, []byte(name)))
		}
	}
	if bytes.Contains(html, []byte(dir)) {
		t.Error("index.html refers to its files by absolute paths")
	}
	// What a reader wants at a glance comes first: the shares, then the
	// explanations, the table and the other charts.
	glance := bytes.Index(html, []byte(`<img src="share-`))
	for _, after := range []string{"How to read this report", `<pre>Hmean`, `<h2>Table`, `<img src="throughput-`} {
		if i := bytes.Index(html, []byte(after)); i >= 0 && i < glance {
			t.Errorf("index.html shows %q before the shares", after)
		}
	}
}

// TestShares: each plan is a share of private where the sweep ran it, of
// the first model plan otherwise; for a latency the share is the
// reference's time over the plan's, so that more is better.
func TestShares(t *testing.T) {
	r := synthetic(t)
	for _, tc := range []struct {
		plans []string
		want  string
	}{
		{[]string{"scalable", Private, Host}, Private},
		{[]string{Host, "scalable", "gvisor"}, "scalable"},
		{[]string{Host}, ""},
	} {
		if got := shareReference(GroupInfo{Plans: tc.plans}); got != tc.want {
			t.Errorf("shareReference(%q) = %q, want %q", tc.plans, got, tc.want)
		}
	}
	fork, latency := r.Groups[0], r.Groups[1]
	for _, tc := range []struct {
		g         GroupInfo
		ref, plan string
		want      float64
	}{
		{fork, "scalable", "linux-2.6.35", 70},
		{fork, "scalable", "scalable", 100},
		{latency, SeedBase, SeedBase + ",release-tracees-in-reaper", 160}, // 40 µs against 25
	} {
		xys := r.shares(tc.g, tc.ref, tc.plan)
		if len(xys) != len(r.Workers) {
			t.Fatalf("%s against %s: %d shares for %d worker counts", tc.plan, tc.ref, len(xys), len(r.Workers))
		}
		for i, xy := range xys {
			if xy.X != float64(r.Workers[i]) || math.Abs(xy.Y-tc.want) > 1e-9 {
				t.Errorf("%s against %s at %v workers: %v%%, want %v%%", tc.plan, tc.ref, xy.X, xy.Y, tc.want)
			}
		}
	}
}

// chromium returns the path of a Chromium to render with, or "".
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestReportRendersInChromium opens the report from disk in headless
// Chromium and checks that every chart loaded: a copy of index.html
// beside it, with a script added that records on load how many of its
// images have pixels, is dumped after it has loaded.
func TestReportRendersInChromium(t *testing.T) {
	browser := chromium()
	if browser == "" {
		t.Skip("no Chromium (Debian's chromium package) to render the report with; .ci/run installs it")
	}
	dir, _, html := syntheticReport(t)
	imgs := len(imgSrc.FindAll(html, -1))
	if imgs == 0 {
		t.Fatal("the report shows no chart")
	}
	const probe = `<script>
window.addEventListener('load', function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++;
  document.body.setAttribute('data-charts', ok + '/' + imgs.length);
});
</script></body>`
	check := filepath.Join(dir, "check.html")
	if err := os.WriteFile(check, bytes.Replace(html, []byte("</body>"), []byte(probe), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=20000",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+check)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, stderr.String())
	}
	m := regexp.MustCompile(`data-charts="(\d+)/(\d+)"`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the page did not finish loading; its DOM:\n%s", truncate(string(dom), 2000))
	}
	if string(m[1]) != string(m[2]) || string(m[2]) != strconv.Itoa(imgs) {
		t.Fatalf("%s of %s charts rendered, the report shows %d", m[1], m[2], imgs)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
