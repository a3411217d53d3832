package kernelrun

import (
	"strings"
	"testing"

	"tasklist/scenario"
)

// TestAgentServesEveryCall: agent.c's dispatch has a case for the command of every call the
// language declares, so a call added to the language without one fails here rather than answer
// ENOSYS in a run.
func TestAgentServesEveryCall(t *testing.T) {
	for _, c := range scenario.Calls() {
		if name := opName(c.Name); !strings.Contains(string(agentSource), "case "+name+":") {
			t.Errorf("agent.c has no case for %s, the command of %s", name, c.Name)
		}
	}
}
