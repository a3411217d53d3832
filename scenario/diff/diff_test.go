package diff

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"tasklist/scenario"
)

// result is the outcome of a statement that printed text.
func result(line int, source, text string) scenario.Outcome {
	return scenario.Outcome{File: "f.scn", Line: line, Source: source, Text: text}
}

func TestCompare(t *testing.T) {
	skipped := scenario.Outcome{File: "f.scn", Line: 4, Source: "A.exit(0)",
		Skipped: &scenario.Error{File: "f.scn", Line: 4, Col: 1, Msg: "A names nothing"}}
	model := []scenario.Outcome{result(1, "A = init.fork()", "A"), result(2, "A.getpid()", "A"),
		result(3, "B = A.fork()", "B"), skipped, result(5, "join A", "0")}
	kernel := []scenario.Outcome{result(1, "A = init.fork()", "A"), result(2, "A.getpid()", "ESRCH"),
		result(4, "A.exit(0)", "done"), result(5, "join A", "0")}
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
		t.Errorf("Compare of equal outcomes = %+v", lines)
	}
}

// fixed is a backend that answers every call with one result.
type fixed struct{ res scenario.Result }

func (f fixed) PidIn(viewer, target scenario.TaskRef) int { return 0 }
func (f fixed) Do(scenario.TaskRef, scenario.Call) scenario.Result {
	return f.res
}
func (f fixed) Start(scenario.TaskRef, scenario.Call) error    { return nil }
func (f fixed) Join(scenario.TaskRef) scenario.Result          { return f.res }
func (f fixed) Made(scenario.TaskRef) (scenario.TaskRef, bool) { return 0, false }
func (f fixed) Close() error                                   { return nil }

func backend(r scenario.Result) scenario.NewBackend {
	return func() (scenario.Backend, error) { return fixed{r}, nil }
}

func TestFileAndPrint(t *testing.T) {
	src := []byte("init.getpgrp()\ninit.setsid()\n")
	zero := backend(scenario.Result{Kind: scenario.ResultInt})
	eperm := backend(scenario.Result{Kind: scenario.ResultErrno, Errno: 1})

	lines, err := File("good.scn", src, zero, zero)
	var out bytes.Buffer
	Print(&out, "good.scn", lines)
	if err != nil || len(lines) != 0 || out.String() != "good.scn: no differences\n" {
		t.Errorf("same backends: %v, %+v, output %q", err, lines, out.String())
	}
	lines, err = File("good.scn", src, zero, eperm)
	out.Reset()
	Print(&out, "good.scn", lines)
	want := "good.scn: 2 lines differ\n  1: init.getpgrp()\n    model:  0\n    kernel: EPERM\n" +
		"  2: init.setsid()\n    model:  0\n    kernel: EPERM\n"
	if err != nil || out.String() != want {
		t.Errorf("different backends: %v, output %q, want %q", err, out.String(), want)
	}
	var perr *scenario.Error
	if _, err := File("bad.scn", []byte("init.nosuchcall()\n"), zero, zero); !errors.As(err, &perr) || perr.Line != 1 {
		t.Errorf("parse error: %v", err)
	}
	broken := func() (scenario.Backend, error) { return nil, errors.New("no namespaces") }
	if _, err := File("good.scn", src, zero, broken); err == nil || err.Error() != "good.scn: cannot run: no namespaces" {
		t.Errorf("no kernel backend: %v", err)
	}
}

// A runner that cannot tell what a call did makes the file fail with the run's message, not
// differ: the lines it did not print are no results.
func TestFileRunnerGaveUp(t *testing.T) {
	zero := backend(scenario.Result{Kind: scenario.ResultInt})
	fatal := backend(scenario.Result{Kind: scenario.ResultFatal, Err: errors.New("gave up")})
	lines, err := File("f.scn", []byte("init.getpgrp()\ninit.setsid()\n"), zero, fatal)
	if err == nil || err.Error() != "f.scn:1: gave up" {
		t.Errorf("File = %v, %v; want the error %q", lines, err, "f.scn:1: gave up")
	}
}
