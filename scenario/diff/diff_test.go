package diff

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"tasklist/scenario"
)

func TestCompare(t *testing.T) {
	model := "1: A = init.fork() = A\n2: A.getpid() = A\n3: B = A.fork() = B\n5: join A = 0\n"
	kernel := "1: A = init.fork() = A\n2: A.getpid() = ESRCH\n4: A.exit(0) = done\n5: join A = 0\n"
	got := Compare(model, kernel)
	want := []Line{
		{Line: 2, Source: "A.getpid()", Model: "A", Kernel: "ESRCH"},
		{Line: 3, Source: "B = A.fork()", Model: "B"},
		{Line: 4, Source: "A.exit(0)", Kernel: "done"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Compare = %+v, want %+v", got, want)
	}
	if lines := Compare(model, model); len(lines) != 0 {
		t.Errorf("Compare of equal outputs = %+v", lines)
	}
}

// fixed is a backend that answers every call with one result.
type fixed struct{ res scenario.Result }

func (f fixed) PidIn(viewer, target scenario.TaskRef) int { return 0 }
func (f fixed) Do(scenario.TaskRef, scenario.Call) scenario.Result {
	return f.res
}
func (f fixed) Start(scenario.TaskRef, scenario.Call) error { return nil }
func (f fixed) Join(scenario.TaskRef) scenario.Result       { return f.res }
func (f fixed) Close() error                                { return nil }

func backend(r scenario.Result) NewBackend {
	return func() (scenario.Backend, error) { return fixed{r}, nil }
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.scn")
	bad := filepath.Join(dir, "bad.scn")
	os.WriteFile(good, []byte("init.getpgrp()\ninit.setsid()\n"), 0o644)
	os.WriteFile(bad, []byte("init.nosuchcall()\n"), 0o644)
	zero := backend(scenario.Result{Kind: scenario.ResultInt})
	eperm := backend(scenario.Result{Kind: scenario.ResultErrno, Errno: 1})

	var out, errs bytes.Buffer
	if st := Files([]string{good}, zero, zero, &out, &errs); st != 0 || !strings.Contains(out.String(), "no differences") {
		t.Errorf("same backends: status %d, output %q", st, out.String())
	}
	out.Reset()
	if st := Files([]string{good}, zero, eperm, &out, &errs); st != 1 {
		t.Errorf("different backends: status %d", st)
	}
	want := good + ": 2 lines differ\n  1: init.getpgrp()\n    model:  0\n    kernel: EPERM\n"
	if !strings.HasPrefix(out.String(), want) {
		t.Errorf("output %q, want prefix %q", out.String(), want)
	}
	errs.Reset()
	if st := Files([]string{bad, good}, zero, zero, &out, &errs); st != 2 || !strings.Contains(errs.String(), "bad.scn:1:") {
		t.Errorf("parse error: status %d, stderr %q", st, errs.String())
	}
}

// A runner that cannot tell what a call did makes the file fail with the run's message, not
// differ: the lines it did not print are no results.
func TestFileRunnerGaveUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.scn")
	os.WriteFile(path, []byte("init.getpgrp()\ninit.setsid()\n"), 0o644)
	zero := backend(scenario.Result{Kind: scenario.ResultInt})
	fatal := backend(scenario.Result{Kind: scenario.ResultFatal, Err: errors.New("gave up")})
	lines, err := File(path, zero, fatal)
	if err == nil || err.Error() != path+":1: gave up" {
		t.Errorf("File = %v, %v; want the error %q", lines, err, path+":1: gave up")
	}
}
