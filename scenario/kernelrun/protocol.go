package kernelrun

import (
	"fmt"
	"slices"
	"strings"

	"tasklist/scenario"
)

// The protocol's numbers are written here only: agent.c is compiled with them defined
// (agentDefines).

// Message types, the first word of every message an agent sends.
const (
	msgReply  = 1 // the result of the command the task was serving
	msgHello  = 2 // a new task's first words: its host tid, with the runner's end of its socket
	msgTooBig = 3 // in place of a reply: the result does not fit in one message
)

// Commands, the first word of every message the runner sends: each call of the language is
// a command, numbered from 1 in the order of scenario.Calls, which agent.c knows by its opName.
var ops = numberCalls()

func numberCalls() map[string]int {
	m := map[string]int{}
	for i, c := range scenario.Calls() {
		m[c.Name] = i + 1
	}
	return m
}

// opName is the name agent.c gives the command that makes call: OP_FORK for fork.
func opName(call string) string { return "OP_" + strings.ToUpper(call) }

// maxWords is the most int64 words one message carries, either way.
const maxWords = 8192

// What one command carries: sembufs, three words each, and 16-bit semaphore values (SETALL's
// list, GETALL's reply), four to a word. Both exceed what Linux reads (SEMOPM, SEMMSL).
const (
	semopCarry  = (maxWords - 6) / 3
	valuesCarry = (maxWords - 6) * 4
)

// agentDefines are the C compiler's -D flags that give agent.c the protocol's numbers.
func agentDefines() []string {
	defs := []string{
		define("MSG_REPLY", msgReply), define("MSG_HELLO", msgHello), define("MSG_TOO_BIG", msgTooBig),
		define("MAXWORDS", maxWords), define("SEMOP_CARRY", semopCarry), define("VALUES_CARRY", valuesCarry),
		define("HANDLER_KIND", scenario.Handler),
	}
	for call, op := range ops {
		defs = append(defs, define(opName(call), op))
	}
	slices.Sort(defs) // the same flags, so the same binary, on every run
	return defs
}

func define(name string, v int) string { return fmt.Sprintf("-D%s=%d", name, v) }
