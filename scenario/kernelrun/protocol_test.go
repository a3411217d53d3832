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

// TestLocalCallsDeclared: every call quiescence treats as local is a call of the language, so
// that a renamed call cannot silently lose its place there.
func TestLocalCallsDeclared(t *testing.T) {
	for name := range localCalls {
		if _, ok := scenario.LookupCall(name); !ok {
			t.Errorf("localCalls names %s, which the language does not declare", name)
		}
	}
}
