package scenario_test

import (
	"strings"
	"testing"

	"tasklist/scenario"
	"tasklist/scenario/kernelrun"
	"tasklist/scenario/modelrun"
)

// A set_tid entry for a pid namespace above the scenario's init is refused by both runners,
// without the call being made, and the run stops there; entries down to init's namespace,
// counting one a clone's CLONE_NEWPID or an unshare(CLONE_NEWPID) adds, are made.
const setTIDBeyondInit = `A = init.fork()
A.clone3(0, SIGCHLD, 50) == 50
A.clone3(CLONE_NEWPID, SIGCHLD, 1, 60) == 60
N = A.clone(CLONE_NEWPID|SIGCHLD)
N.clone3(0, SIGCHLD, 5, 70) == 5
A.unshare(CLONE_NEWPID) == 0
A.clone3(0, SIGCHLD, 1, 80) == 80
init.clone3(0, SIGCHLD, 90, 90)
init.getpid()
`

func TestSetTIDBeyondInitModel(t *testing.T) {
	checkSetTIDBeyondInit(t, func() (scenario.Backend, error) { return modelrun.New() })
}

func TestSetTIDBeyondInitKernel(t *testing.T) {
	needKernelRunner(t)
	checkSetTIDBeyondInit(t, func() (scenario.Backend, error) { return kernelrun.New() })
}

func checkSetTIDBeyondInit(t *testing.T, newBackend scenario.NewBackend) {
	b, err := newBackend()
	if err != nil {
		t.Fatal(err)
	}
	out, errs, status := runScenario(t, "settid.scn", []byte(setTIDBeyondInit), b)
	// Line 8 ended the run, and is all standard error says: every expectation before it
	// held.
	want := "settid.scn:8: clone3: set_tid has 2 entries, but the child has 1 pid namespace levels up to the scenario's init"
	if status != 2 || !strings.HasPrefix(errs, want) || !strings.Contains(out, "\n7: ") || strings.Contains(out, "\n8: ") {
		t.Errorf("status %d\nstdout:\n%s\nstderr:\n%s\nwant status 2, lines up to 7, and %q", status, out, errs, want)
	}
}
