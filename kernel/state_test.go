package kernel

import (
	"strings"
	"testing"
)

// TestStateAdvance: a task's state moves only along the lifecycle's
// edges; advancing from a state the task is not in panics and names the
// three states.
func TestStateAdvance(t *testing.T) {
	var w stateWord
	for _, step := range [][2]taskState{{taskEmbryo, taskRunning}, {taskRunning, taskExiting}, {taskExiting, taskZombie}, {taskZombie, taskDead}} {
		w.advance(step[0], step[1])
		if got := w.Load(); got != step[1] {
			t.Fatalf("after %v → %v the state is %v", step[0], step[1], got)
		}
	}
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "running → exiting, but the task is dead") {
			t.Fatalf("recovered %q, want a panic naming the states", msg)
		}
	}()
	w.advance(taskRunning, taskExiting)
}

func TestStateString(t *testing.T) {
	for s, want := range map[taskState]string{taskEmbryo: "embryo", taskDoomed: "doomed", taskZombie: "zombie", 9: "taskState(9)"} {
		if got := s.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int32(s), got, want)
		}
	}
}
