package modelrun

import (
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"tasklist/kernel"
	"tasklist/scenario"
)

// TestHandlersCoverTheCallTable: the model runner has a handler for every call the language
// declares and none for a call it does not, so that a call added to the table without its
// handler is named here rather than answer ENOSYS in a run.
func TestHandlersCoverTheCallTable(t *testing.T) {
	for _, p := range scenario.Coverage("modelrun (handlers, calls.go)", slices.Collect(maps.Keys(handlers)), nil) {
		t.Error(p)
	}
}

// TestLocalCallsChangeNoOtherIdleTask holds the call table's Local column to the model: every
// corpus scenario runs on it, and around every call declared local the tasks that have no call
// of their own in flight, the caller and the tasks the call makes aside, must be as they were:
// none stopped, continued or ended by it. Those are the tasks the kernel runner stops watching
// after a local call.
func TestLocalCallsChangeNoOtherIdleTask(t *testing.T) {
	paths, err := filepath.Glob("../../testdata/scenarios/*.scn")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := scenario.Parse(path, src)
			if err != nil {
				t.Fatal(err)
			}
			b, err := New()
			if err != nil {
				t.Fatal(err)
			}
			scenario.Run(s, localCheck{b, t}, io.Discard, io.Discard)
			b.Close()
		})
	}
}

// localCheck is the model runner with TestLocalCallsChangeNoOtherIdleTask's check around each
// call.
type localCheck struct {
	*Backend
	t *testing.T
}

// taskState is what a local call must not change in another idle task.
type taskState struct{ stopped, exited bool }

func (b localCheck) Do(actor scenario.TaskRef, c scenario.Call) scenario.Result {
	before := b.idleOthers(actor, c)
	defer b.unchanged(c, before)
	return b.Backend.Do(actor, c)
}

func (b localCheck) Start(actor scenario.TaskRef, c scenario.Call) error {
	before := b.idleOthers(actor, c)
	defer b.unchanged(c, before)
	return b.Backend.Start(actor, c)
}

// idleOthers returns the state of every task but actor that has no call in flight, if c is
// declared local.
func (b localCheck) idleOthers(actor scenario.TaskRef, c scenario.Call) map[*kernel.Task]taskState {
	if spec, _ := scenario.LookupCall(c.Name); !spec.Local {
		return nil
	}
	b.mu.Lock() // for tasks
	defer b.mu.Unlock()
	states := map[*kernel.Task]taskState{}
	for i, t := range b.tasks {
		ref := scenario.TaskRef(i)
		if ref == actor || b.bg[ref] != nil || b.stuck[ref] != nil {
			continue
		}
		states[t] = taskState{t.Stopped(), t.Exited()}
	}
	return states
}

func (b localCheck) unchanged(c scenario.Call, before map[*kernel.Task]taskState) {
	for t, was := range before {
		if now := (taskState{t.Stopped(), t.Exited()}); now != was {
			b.t.Errorf("line %d: the local call %s changed task %d from %+v to %+v", c.Pos.Line, c.Name,
				t.PIDIn(t.Kernel().RootNamespace()), was, now)
		}
	}
}
