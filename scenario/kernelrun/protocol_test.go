package kernelrun

import (
	"strings"
	"testing"
)

// TestAgentServesEveryCommand: every command has the name agent.c knows it by, and agent.c's
// dispatch has a case for it, so a command the agent does not make fails here rather than
// answer ENOSYS in a run.
func TestAgentServesEveryCommand(t *testing.T) {
	if len(opNames) != opUnshare+1 {
		t.Fatalf("opNames has %d entries, want one per command (%d)", len(opNames)-1, opUnshare)
	}
	seen := map[string]bool{}
	for op, name := range opNames[1:] {
		switch {
		case name == "":
			t.Errorf("command %d has no name", op+1)
		case seen[name]:
			t.Errorf("%s names two commands", name)
		case !strings.Contains(string(agentSource), "case "+name+":"):
			t.Errorf("agent.c has no case for %s", name)
		}
		seen[name] = true
	}
}
