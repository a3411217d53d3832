package scenario_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"tasklist/lockstat"
	"tasklist/plan"
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
				case scenario.ArgPid, scenario.ArgID:
					args[i] = "init"
					if c.Name == "prlimit" {
						// A CPU limit of 0 on init would kill it, and every task with it.
						args[i] = actor
					}
				case scenario.ArgFD:
					file := fmt.Sprintf("F%d", n)
					fmt.Fprintf(&sb, "%s = %s.pidfd_open(init, 0)\n", file, actor)
					args[i] = file
				case scenario.ArgSet:
					set := fmt.Sprintf("S%d", n)
					fmt.Fprintf(&sb, "%s = %s.semget(IPC_PRIVATE, 1, IPC_CREAT|0600)\n", set, actor)
					args[i] = set
				case scenario.ArgSembuf:
					args[i] = "{0, 0, IPC_NOWAIT}"
				case scenario.ArgSigset:
					args[i] = "[SIGUSR1 SIGRTMIN+2]"
				default:
					args[i] = "0"
				}
			}
			stmt := fmt.Sprintf("%s.%s(%s)", actor, c.Name, strings.Join(args, ", "))
			if c.Name == "sigsuspend" {
				// It sleeps until a handled signal comes, whatever its argument.
				fmt.Fprintf(&sb, "%s.sigaction(SIGUSR2, HANDLER, 0)\n%s &\ninit.kill(%s, SIGUSR2)\n", actor, stmt, actor)
				stmt = "join " + actor
			}
			fmt.Fprintln(&sb, stmt)
			made = append(made, stmt)
		}
	}
	return sb.String(), made
}

// TestCallsTasklistLock holds the call table's Tasklist column to the model: every declared call
// is made as checkCalls makes them under the linux-2.6.35 plan, which takes the table lock at
// each site where Linux 2.6.35 took tasklist_lock, and a call that took the lock for reading
// or for writing must declare a site the plan takes so.
func TestCallsTasklistLock(t *testing.T) {
	const preset = "linux-2.6.35"
	var table *lockstat.Class
	for _, c := range lockstat.Classes() {
		if c.Name() == "plan.tasklist_lock" {
			table = c
		}
	}
	if table == nil {
		t.Fatal("no lock class plan.tasklist_lock")
	}
	defer lockstat.SetStats(lockstat.SetStats(true))
	src, _ := everyCall()
	newBackend := func() (scenario.Backend, error) {
		p := plan.MustParse(preset, false)
		b, err := modelrun.NewWithPlan(p)
		return tableLockCheck{b, t, table, p}, err
	}
	if err := scenario.ExecSource("calls.scn", []byte(src), newBackend, func(scenario.Outcome) {}); err != nil {
		t.Fatal(err)
	}
}

// tableLockCheck is the model runner with TestCallsTasklistLock's check around each call.
type tableLockCheck struct {
	*modelrun.Backend
	t     *testing.T
	table *lockstat.Class
	plan  *plan.Plan
}

func (b tableLockCheck) Do(actor scenario.TaskRef, c scenario.Call) scenario.Result {
	before := b.table.Stats()
	r := b.Backend.Do(actor, c)
	took := b.table.Stats().Delta(before)
	spec, _ := scenario.LookupCall(c.Name)
	declared := map[plan.Mode]bool{}
	for _, site := range spec.Tasklist {
		declared[b.plan.Mode(site)] = true
	}
	if took.Read.Acquisitions > 0 && !declared[plan.Read] || took.Write.Acquisitions > 0 && !declared[plan.Write] {
		b.t.Errorf("line %d: %s took the table lock %d times for reading and %d for writing under %s, but declares the sites %v",
			c.Pos.Line, c.Name, took.Read.Acquisitions, took.Write.Acquisitions, b.plan.Name(), spec.Tasklist)
	}
	return r
}

// TestCallsDocumented: the contract, docs/scenario-language.md, shows every declared call.
func TestCallsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/scenario-language.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range scenario.Calls() {
		if !strings.Contains(string(doc), "`"+c.Name+"(") {
			t.Errorf("docs/scenario-language.md does not show %s", c.Name)
		}
	}
}

// TestCoverage: Coverage names the runner and each call it neither makes nor excuses, makes and
// excuses, or names without the table declaring it, and nothing for a runner that covers the
// table.
func TestCoverage(t *testing.T) {
	var all []string
	for _, c := range scenario.Calls() {
		all = append(all, c.Name)
	}
	if p := scenario.Coverage("r", all, nil); p != nil {
		t.Errorf("a runner that makes every call: %q", p)
	}
	made := append(slices.Clone(all[1:]), "no_such_call")
	got := scenario.Coverage("r", made, map[string]string{all[2]: "a reason"})
	want := []string{
		"r: does not make " + all[0] + " and gives no reason",
		"r: makes " + all[2] + " but gives a reason not to",
		"r: names no_such_call, which the call table does not declare",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Coverage = %q, want %q", got, want)
	}
}
