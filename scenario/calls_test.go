package scenario_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"tasklist/scenario"
	"tasklist/scenario/kernelrun"
	"tasklist/scenario/modelrun"
)

// The call table (scenario.Calls) is the one declaration of each call's name, arguments and
// results; these tests hold both runners to it. Every declared call is made at every argument
// count it takes, each argument of its declared kind, by a fresh child of init: the runner
// must know the call (no ENOSYS), take its arguments (no panic), tell what it did (no fatal
// result) and return a kind of Result the call declares.

func TestCallsModel(t *testing.T) {
	checkCalls(t, func() (scenario.Backend, error) { return modelrun.New() })
}

func TestCallsKernel(t *testing.T) {
	needKernelRunner(t)
	checkCalls(t, func() (scenario.Backend, error) { return kernelrun.New() })
}

func checkCalls(t *testing.T, newBackend scenario.NewBackend) {
	src, made := everyCall()
	var outcomes []scenario.Outcome
	if err := scenario.ExecSource("calls.scn", []byte(src), newBackend, func(o scenario.Outcome) {
		outcomes = append(outcomes, o)
	}); err != nil {
		t.Fatal(err)
	}
	var checked []string
	for _, o := range outcomes {
		spec, ok := scenario.LookupCall(o.Call)
		switch {
		case !ok:
			t.Fatalf("line %d: outcome of an undeclared call %q", o.Line, o.Call)
		case o.Skipped != nil:
			t.Errorf("%s: skipped: %v", o.Source, o.Skipped)
		case o.Result.Kind == scenario.ResultFatal:
			t.Fatalf("%s: the runner could not tell what the call did: %v", o.Source, o.Result.Err)
		case o.Result.Kind == scenario.ResultErrno && o.Result.Errno == unix.ENOSYS:
			t.Errorf("%s = ENOSYS: the runner does not make %s", o.Source, o.Call)
		case !spec.Returns(o.Result.Kind):
			t.Errorf("%s = %s: a kind of result (%d) that %s does not declare", o.Source, o.Text, o.Result.Kind, o.Call)
		}
		if slices.Contains(made, o.Source) {
			checked = append(checked, o.Source)
		}
	}
	if !slices.Equal(checked, made) {
		t.Errorf("calls with an outcome:\n%s\nwant:\n%s", strings.Join(checked, "\n"), strings.Join(made, "\n"))
	}
}

// everyCall writes a scenario that makes every declared call at every count it takes, and
// lists the statements that make them.
func everyCall() (src string, made []string) {
	var sb strings.Builder
	n := 0
	for _, c := range scenario.Calls() {
		for _, count := range c.ArgCounts() {
			n++
			actor := fmt.Sprintf("T%d", n)
			fmt.Fprintf(&sb, "%s = init.fork()\n", actor)
			args := make([]string, count)
			for i := range args {
				switch c.Kind(i) {
				case scenario.ArgPid:
					args[i] = "init"
				case scenario.ArgSet:
					set := fmt.Sprintf("S%d", n)
					fmt.Fprintf(&sb, "%s = %s.semget(IPC_PRIVATE, 1, IPC_CREAT|0600)\n", set, actor)
					args[i] = set
				case scenario.ArgSembuf:
					args[i] = "{0, 0, IPC_NOWAIT}"
				default:
					args[i] = "0"
				}
			}
			stmt := fmt.Sprintf("%s.%s(%s)", actor, c.Name, strings.Join(args, ", "))
			fmt.Fprintln(&sb, stmt)
			made = append(made, stmt)
		}
	}
	return sb.String(), made
}
