package modelrun_test

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tasklist/scenario"
	"tasklist/scenario/modelrun"
)

// Bounds on one fuzz input, so that each runs in milliseconds: a scenario's statements run one
// after another and none can repeat, so its size bounds its work, except for the waits of
// semtimedop, whose timeouts boundedTimeouts cuts. The corpus fits within them.
const (
	fuzzMaxBytes   = 64 << 10
	fuzzMaxLines   = 200
	fuzzMaxTimeout = 20 // milliseconds
	// fuzzHang is how long a run may take before the input counts as one that hangs the model.
	fuzzHang = 20 * time.Second
)

// unboundReproducers made a name whose creating statement was skipped stand for init: its exit
// ended the scenario's init, and a call by it between init's background call and its join left
// the join with no call to wait for (a nil dereference in Join).
var unboundReproducers = []string{`A = init.fork()
A.exit(0)
init.wait4(A,0)
B = A.fork()
C = B.fork()
C.getpid()
C.exit(0)
init.getpid() &
join init
`, `A = init.fork()
A.exit(0)
init.wait4(A, 0)
B = A.fork()
C = B.fork()
init.getpid() &
C.exit(0)
join init
`}

// FuzzModel runs scenarios on the model and checks that nothing panics (the lock-order checker
// panics too), nothing hangs, and the kernel's invariants hold once the run is over.
func FuzzModel(f *testing.F) {
	for _, src := range unboundReproducers {
		f.Add(src)
	}
	paths, err := filepath.Glob("../../testdata/scenarios/*.scn")
	if err != nil || len(paths) == 0 {
		f.Fatalf("no corpus to seed from: %v", err)
	}
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(src))
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > fuzzMaxBytes || strings.Count(src, "\n") > fuzzMaxLines {
			t.Skip("larger than a fuzz input may be")
		}
		s, err := scenario.Parse("f.scn", []byte(src))
		if err != nil {
			return
		}
		b, err := modelrun.New()
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			scenario.Run(s, boundedTimeouts{b}, io.Discard, io.Discard)
			done <- b.Close()
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("close: %v", err)
			}
		case <-time.After(fuzzHang):
			t.Fatalf("the scenario still runs after %v", fuzzHang)
		}
		if err := b.Kernel().CheckInvariants(); err != nil {
			t.Fatalf("invariants after the scenario: %v", err)
		}
	})
}

// boundedTimeouts is the model with every timeout argument (scenario.ArgTimeout) cut to
// fuzzMaxTimeout.
type boundedTimeouts struct{ *modelrun.Backend }

func (b boundedTimeouts) Do(actor scenario.TaskRef, c scenario.Call) scenario.Result {
	return b.Backend.Do(actor, boundTimeout(c))
}

func (b boundedTimeouts) Start(actor scenario.TaskRef, c scenario.Call) error {
	return b.Backend.Start(actor, boundTimeout(c))
}

func boundTimeout(c scenario.Call) scenario.Call {
	spec, _ := scenario.LookupCall(c.Name)
	for i, k := range spec.Args {
		if k == scenario.ArgTimeout && i < len(c.Args) && c.Args[i].Int > fuzzMaxTimeout {
			c.Args = slices.Clone(c.Args)
			c.Args[i].Int = fuzzMaxTimeout
		}
	}
	return c
}
