package kernelrun

import (
	"regexp"
	"testing"

	"tasklist/scenario"
)

// TestAgentCallsCoverTheCallTable: the runner knows how to encode and decode every call the
// language declares, and no call it does not, so that a call added to the table without its
// handlers is named here.
func TestAgentCallsCoverTheCallTable(t *testing.T) {
	var made []string
	for name, call := range agentCalls {
		if call.encode != nil && call.decode != nil {
			made = append(made, name)
		}
	}
	for _, p := range scenario.Coverage("kernelrun (agentCalls, calls.go)", made, nil) {
		t.Error(p)
	}
}

// TestAgentServesEveryCall: agent.c's handlers have an entry for the command of every call the
// language declares and none for a command no call has, so a call added to the language
// without one fails here rather than answer ENOSYS in a run.
func TestAgentServesEveryCall(t *testing.T) {
	entries := map[string]bool{}
	for _, m := range regexp.MustCompile(`\[(OP_[A-Z0-9_]+)\] = \w+,`).FindAllStringSubmatch(string(agentSource), -1) {
		entries[m[1]] = true
	}
	commands := map[string]bool{}
	for _, c := range scenario.Calls() {
		name := opName(c.Name)
		commands[name] = true
		if !entries[name] {
			t.Errorf("kernelrun agent.c: no handler [%s] for %s", name, c.Name)
		}
	}
	for name := range entries {
		if !commands[name] {
			t.Errorf("kernelrun agent.c: a handler [%s] for the command of no call", name)
		}
	}
}
