package workload

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"tasklist/kernel"
	"tasklist/replay"
)

// ReplayPrefix names a recorded trace's replay as a workload: replay:FILE.
const ReplayPrefix = "replay:"

// CallsPerSec is a replay's unit: the trace's calls made on the model per second.
var CallsPerSec = Unit{Name: "calls/s", PerSecond: 1}

// Replay returns the workload that replays the strace trace in path (package replay: `tasklist
// trace` records one), named replay:NAME after the file, less its .strace. The trace is read,
// parsed and replayed once on a model of its own here, which keeps every call it makes (a
// *replay.SyntaxError, FILE:LINE: message, for a trace that does not parse or that the model
// cannot replay to its end). Each worker then replays its own copy of the trace, one pass per
// Op, on tasks of its own: its worker process's descendants, so that workers share only what
// the plan shares. In a pass each traced task is a goroutine, and a call waits only for the
// calls of other tasks that the trace's causal order puts before it (replay.Compile); every
// result is checked against the first replay's, and a pass whose result differs fails the run.
// PerOp is the trace's calls per pass; the host cannot replay a trace.
func Replay(path string) (*Workload, error) {
	p, err := replay.CompileFile(path)
	if err != nil {
		return nil, err
	}
	if p.Calls() == 0 {
		return nil, fmt.Errorf("%s: no call of the trace is made on the model", path)
	}
	return &Workload{
		Name: ReplayPrefix + strings.TrimSuffix(filepath.Base(path), ".strace"),
		Seed: "none", Unit: CallsPerSec, PerOp: p.Calls(),
		Summary: fmt.Sprintf("a replay of %s: its %d calls the model makes, each of its %d tasks a goroutine, as fast as the trace's causal order allows",
			path, p.Calls(), p.Tasks()-1),
		NotOnHost: "the host cannot replay a trace's calls",
		setup: processes(root, false, func(t *kernel.Task) Op {
			r := p.NewRunner(t)
			return func() (time.Duration, error) { return 0, r.Pass() }
		}),
	}, nil
}
