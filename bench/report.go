package bench

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

//go:embed report.html
var reportTemplate string

// ReportFiles are the data files a report holds beside its charts.
var ReportFiles = map[string]string{"results.json": "json", "results.csv": "csv", "results.bench": "bench", "results.txt": "table"}

// CheckReportDir says whether WriteReport can write dir, so that a sweep
// finds out before it measures: dir must be absent, an empty directory or
// an earlier report (its files alone, which a new report replaces as a
// whole), and a directory must be creatable beside it.
func CheckReportDir(dir string) error {
	dir = filepath.Clean(dir)
	if base := filepath.Base(dir); base == "." || base == ".." || base == string(filepath.Separator) {
		return fmt.Errorf("report directory %q: name the directory itself", dir)
	}
	switch st, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("report directory: %w", err)
	case !st.IsDir():
		return fmt.Errorf("report directory %s: not a directory", dir)
	default:
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("report directory: %w", err)
		}
		for _, e := range entries {
			if !e.Type().IsRegular() || !isReportFile(e.Name()) {
				return fmt.Errorf("report directory %s holds %s, which no report has: "+
					"name a new directory, an empty one or an earlier report", dir, e.Name())
			}
		}
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("report directory: %w", err)
	}
	probe, err := os.MkdirTemp(parent, newReportPattern(dir))
	if err != nil {
		return fmt.Errorf("report directory %s: %w", dir, err)
	}
	return os.Remove(probe)
}

// newReportPattern names the directory a report of dir is written in
// before it takes dir's place: hidden, beside dir.
func newReportPattern(dir string) string { return "." + filepath.Base(dir) + ".new-*" }

// isReportFile reports whether a report may hold a file called name.
func isReportFile(name string) bool {
	_, data := ReportFiles[name]
	ext := filepath.Ext(name)
	return data || name == "index.html" || ext == ".svg" || ext == ".png"
}

// WriteReport writes the report into dir: a chart per workload of each
// plan's figure as a share of the reference's (private's), of its figure
// against workers for every plan (the host's included), of where its
// workers wait and of its projection, a chart per seed claim, each as SVG
// and PNG; the results in every format; and index.html, which shows them
// all and refers to its files by relative paths, so that it works opened
// from disk. It returns index.html's path.
//
// dir must be as CheckReportDir requires. The report is written into a new
// directory beside dir, which then takes dir's place in one rename, so
// that dir holds at every moment a whole report, the earlier or the new
// one, however the run ends and however many runs write it at once.
func (r *Results) WriteReport(dir string) (string, error) {
	dir = filepath.Clean(dir)
	if err := CheckReportDir(dir); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), newReportPattern(dir))
	if err != nil {
		return "", err
	}
	// After the exchange with an earlier report, tmp holds that report.
	defer os.RemoveAll(tmp)
	if err := r.writeReportFiles(tmp); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	if err := replaceDir(tmp, dir); err != nil {
		return "", fmt.Errorf("report directory: %w", err)
	}
	return filepath.Join(dir, "index.html"), nil
}

// replaceDir puts the directory from in dir's place in one step: a rename
// where dir is absent or empty, an exchange of the two (renameat2's
// RENAME_EXCHANGE) where it holds an earlier report, which from then
// holds. Another run may create or replace dir meanwhile: each step is
// tried again.
func replaceDir(from, dir string) error {
	var err error
	for range 3 {
		if err = unix.Rename(from, dir); err == nil || !errors.Is(err, unix.EEXIST) && !errors.Is(err, unix.ENOTEMPTY) {
			break
		}
		err = unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, dir, unix.RENAME_EXCHANGE)
		if errors.Is(err, unix.EINVAL) {
			// A file system without the exchange: the earlier report
			// steps aside into from's path, for removal, first.
			err = swapAside(from, dir)
		}
		if err == nil || !errors.Is(err, unix.ENOENT) {
			break
		}
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: dir, Err: err}
	}
	return nil
}

// swapAside swaps from and dir by three renames, through a name beside
// them: dir is briefly absent, but never holds a mix of the two.
func swapAside(from, dir string) error {
	aside := from + ".old"
	if err := unix.Rename(dir, aside); err != nil {
		return err
	}
	if err := unix.Rename(from, dir); err != nil {
		unix.Rename(aside, dir)
		return err
	}
	return unix.Rename(aside, from)
}

// writeReportFiles writes the report's files into dir, which exists.
func (r *Results) writeReportFiles(dir string) error {
	type figure struct {
		Name, Title, Caption string
	}
	type section struct {
		Workload, Unit, Summary, HostNote string
		Figures                           []figure
	}
	page := struct {
		Header, Table string
		Glance        []figure
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

	save := func(c *chart) (figure, error) {
		return figure{Name: c.name, Title: c.title, Caption: c.caption}, c.save(dir)
	}
	prs := r.Projections()
	for _, g := range r.Groups {
		c, err := r.shareChart(g)
		if err != nil {
			return err
		}
		if c != nil {
			f, err := save(c)
			if err != nil {
				return err
			}
			page.Glance = append(page.Glance, f)
		}
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
				return err
			}
			if c == nil {
				continue
			}
			f, err := save(c)
			if err != nil {
				return err
			}
			sec.Figures = append(sec.Figures, f)
		}
		page.Sections = append(page.Sections, sec)
	}
	for _, s := range r.Seeds {
		c, err := r.seedChart(s)
		if err != nil {
			return err
		}
		f, err := save(c)
		if err != nil {
			return err
		}
		page.Seeds = append(page.Seeds, f)
	}
	for _, name := range []string{"results.txt", "results.json", "results.csv", "results.bench"} {
		buf.Reset()
		if err := r.WriteFormat(&buf, ReportFiles[name]); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
		page.Files = append(page.Files, name)
	}
	tmpl, err := template.New("report").Parse(reportTemplate)
	if err != nil {
		return err
	}
	buf.Reset()
	if err := tmpl.Execute(&buf, page); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "index.html"), buf.Bytes(), 0o644)
}
