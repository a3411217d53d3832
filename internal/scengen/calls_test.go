package scengen

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"tasklist/scenario"
)

// notGenerated are the calls of the language no move makes, each with the reason.
var notGenerated = map[string]string{
	"unshare": "a task that unshares its pid namespace gives its next child pid 1 of a new one, " +
		"and the generator keeps every task where its picture of pids and groups holds",
}

// TestMovesCoverTheCallTable: every call the language declares is made by some area's moves
// or listed in notGenerated with the reason, so that a call added to the table is named here
// until the generator makes it or says why not.
func TestMovesCoverTheCallTable(t *testing.T) {
	made := map[string]bool{}
	callName := regexp.MustCompile(`\.([a-z_0-9]+)\(`)
	for _, area := range Areas {
		for seed := range uint64(100) {
			src, err := Generate(area, seed)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range callName.FindAllStringSubmatch(src, -1) {
				made[m[1]] = true
			}
		}
	}
	for _, p := range scenario.Coverage("scengen (moves, or notGenerated)", slices.Collect(maps.Keys(made)), notGenerated) {
		t.Error(p)
	}
}

// TestCallTextFollowsTheTable: callText writes what the parser reads back as the same call,
// and refuses a call the language lacks, a count it does not take and an argument of a form
// its position does not accept.
func TestCallTextFollowsTheTable(t *testing.T) {
	got := callText("semctl", set(semSet{name: "S1"}), num(0), constant("SETALL"), values([]int{1, 2}))
	if want := "semctl(S1, 0, SETALL, [1 2])"; got != want {
		t.Errorf("callText = %q, want %q", got, want)
	}
	src := "S1 = init.semget(IPC_PRIVATE, 2, 0600)\nP = init.fork()\ninit." + got + "\n" +
		"init." + callText("kill", group("P"), constant("SIGCONT")) + "\n" +
		"init." + callText("semtimedop", set(semSet{name: "S1"}), num(5), sembuf(0, 1, "IPC_NOWAIT")) + "\n"
	if _, err := scenario.Parse("t.scn", []byte(src)); err != nil {
		t.Errorf("%v\n%s", err, src)
	}
	for _, bad := range []func(){
		func() { callText("no_such_call") },
		func() { callText("getpid", num(1)) },
		func() { callText("kill", set(semSet{name: "S1"}), num(0)) },
		func() { callText("semop", set(semSet{name: "S1"})) },
		func() { callText("setuid", named("P")) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(r.(string), "scengen: ") {
					t.Errorf("recovered %v, want a scengen panic", r)
				}
			}()
			bad()
		}()
	}
}
