package bench

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
)

//go:embed report.html
var reportTemplate string

// ReportFiles are the data files a report holds beside its charts.
var ReportFiles = map[string]string{"results.json": "json", "results.csv": "csv", "results.bench": "bench", "results.txt": "table"}

// WriteReport writes the report into dir, creating it: a chart per
// workload of its figure against workers for every plan (the host's
// included), of where its workers wait and of its projection, a chart
// per seed claim, each as SVG and PNG; the results in every format; and
// index.html, which shows them all and refers to its files by relative
// paths, so that it works opened from disk. It returns index.html's
// path.
func (r *Results) WriteReport(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	type figure struct {
		Name, Title, Caption string
	}
	type section struct {
		Workload, Unit, Summary, HostNote string
		Figures                           []figure
	}
	page := struct {
		Header, Table string
		Sections      []section
		Seeds         []figure
		Files         []string
	}{}
	var buf bytes.Buffer
	r.WriteHeader(&buf)
	page.Header = buf.String()
	buf.Reset()
	r.WriteTable(&buf)
	page.Table = buf.String()

	prs := r.Projections()
	for _, g := range r.Groups {
		sec := section{Workload: g.Workload, Unit: g.Unit, Summary: g.Summary}
		if r.hasHost(g.Workload) {
			sec.HostNote = g.HostNote
		}
		for _, draw := range []func() (*chart, error){
			func() (*chart, error) { return r.throughputChart(g) },
			func() (*chart, error) { return r.lockChart(g) },
			func() (*chart, error) { return r.projectionChart(g, prs) },
		} {
			c, err := draw()
			if err != nil {
				return "", err
			}
			if c == nil {
				continue
			}
			if err := c.save(dir); err != nil {
				return "", err
			}
			sec.Figures = append(sec.Figures, figure{Name: c.name, Title: c.title, Caption: c.caption})
		}
		page.Sections = append(page.Sections, sec)
	}
	for _, s := range r.Seeds {
		c, err := r.seedChart(s)
		if err != nil {
			return "", err
		}
		if err := c.save(dir); err != nil {
			return "", err
		}
		page.Seeds = append(page.Seeds, figure{Name: c.name, Title: c.title, Caption: c.caption})
	}
	for _, name := range []string{"results.txt", "results.json", "results.csv", "results.bench"} {
		buf.Reset()
		if err := r.WriteFormat(&buf, ReportFiles[name]); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			return "", err
		}
		page.Files = append(page.Files, name)
	}
	tmpl, err := template.New("report").Parse(reportTemplate)
	if err != nil {
		return "", err
	}
	buf.Reset()
	if err := tmpl.Execute(&buf, page); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	index := filepath.Join(dir, "index.html")
	return index, os.WriteFile(index, buf.Bytes(), 0o644)
}
