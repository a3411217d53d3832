package workload

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tasklist/kernel"
	"tasklist/replay"
)

// A recorded trace's replay is a workload named after its file: set up on one shared
// kernel and on a kernel per worker, its ops, a pass of the trace each, run side by side
// and leave every table as they found it. Its figure is the trace's calls made on the
// model, and the host cannot run it.
func TestReplayWorkload(t *testing.T) {
	w, err := Named(ReplayPrefix + "../testdata/traces/timeout.strace")
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "replay:timeout" || w.Unit != CallsPerSec || w.PerOp != 30 || w.NotOnHost == "" {
		t.Fatalf("%s: unit %v, %d calls an op, not on the host: %q", w.Name, w.Unit, w.PerOp, w.NotOnHost)
	}
	for _, private := range []bool{false, true} {
		e := env(t, 2, private, kernel.Config{})
		inst := setup(t, ReplayPrefix+"../testdata/traces/timeout.strace", e)
		before := allocated(e)
		runOps(t, inst, 4)
		checkKernels(t, e)
		if after := allocated(e); !slices.Equal(before, after) {
			t.Errorf("private %v: pids in use %v after setup, %v after the passes", private, before, after)
		}
	}
}

// A trace that cannot be read, or that does not parse, is no workload: the error is the
// file's, or FILE:LINE: message. A replay is no job of a mix.
func TestReplayWorkloadRefusesBadTraces(t *testing.T) {
	if _, err := Named(ReplayPrefix + "/nonexistent/x.strace"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing trace: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.strace")
	if err := os.WriteFile(bad, []byte("10 getpid() = 10\n10 getpid(\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var serr *replay.SyntaxError
	if _, err := Named(ReplayPrefix + bad); !errors.As(err, &serr) || !strings.HasPrefix(err.Error(), bad+":2: ") {
		t.Errorf("a trace that does not parse: %v", err)
	}
	if _, err := ParseMix(strings.NewReader("10 replay:x.strace\n"), "w.mix"); err == nil || !strings.Contains(err.Error(), "w.mix:1: a trace's replay cannot be part of a mix") {
		t.Errorf("a mix with a replay: %v", err)
	}
}
