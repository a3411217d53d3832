package modelrun

import (
	"testing"

	"golang.org/x/sys/unix"

	"tasklist/scenario"
)

// A vfork child is known while its parent's clone waits for it: it can make
// calls, and its exec lets the clone return with the same task (A16, vfork).
func TestMadeBeforeJoin(t *testing.T) {
	b, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, ok := b.Made(scenario.Init); ok {
		t.Fatal("Made reports a task with no call in the background")
	}
	vfork := scenario.Call{Name: "clone", Args: []scenario.Value{{Int: unix.CLONE_VM | unix.CLONE_VFORK | int64(unix.SIGCHLD)}}}
	if err := b.Start(scenario.Init, vfork); err != nil {
		t.Fatal(err)
	}
	if b.Returned(scenario.Init) {
		t.Fatal("the vfork returned before its child exec'd")
	}
	child, ok := b.Made(scenario.Init)
	if !ok {
		t.Fatal("the vfork child is not found while its parent waits")
	}
	if got := b.Do(child, scenario.Call{Name: "getppid"}); got.Kind != scenario.ResultPid || got.Pid != 1 {
		t.Fatalf("child getppid = %+v, want pid 1", got)
	}
	if got := b.Do(child, scenario.Call{Name: "execve"}); got.Kind != scenario.ResultInt {
		t.Fatalf("child execve = %+v", got)
	}
	if !b.Returned(scenario.Init) {
		t.Fatal("the vfork has not returned after its child's exec")
	}
	res := b.Join(scenario.Init)
	if res.Kind != scenario.ResultNewTask || res.NewTask != child {
		t.Fatalf("join = %+v, not the task found before it", res)
	}
	// Once returned, Made answers from the result, with the join's name.
	if err := b.Start(scenario.Init, scenario.Call{Name: "fork"}); err != nil {
		t.Fatal(err)
	}
	forked, ok := b.Made(scenario.Init)
	res = b.Join(scenario.Init)
	if !ok || res.Kind != scenario.ResultNewTask || forked != res.NewTask {
		t.Fatalf("fork: Made = %d %v, join = %+v", forked, ok, res)
	}
}

// Two vforks in flight, one by the other's sibling: each finds its own child, not its
// parent's (a child of its parent would be a CLONE_PARENT child).
func TestMadeTwoVforks(t *testing.T) {
	b, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a := b.Do(scenario.Init, scenario.Call{Name: "fork"}).NewTask
	vfork := scenario.Call{Name: "clone", Args: []scenario.Value{{Int: unix.CLONE_VM | unix.CLONE_VFORK | int64(unix.SIGCHLD)}}}
	if err := b.Start(scenario.Init, vfork); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(a, vfork); err != nil {
		t.Fatal(err)
	}
	ca, ok := b.Made(a)
	if !ok || b.Task(ca).Parent() != b.Task(a) {
		t.Fatalf("a's vfork child: %d %v", ca, ok)
	}
	ci, ok := b.Made(scenario.Init)
	if !ok || b.Task(ci).Parent() != b.Task(scenario.Init) {
		t.Fatalf("init's vfork child: %d %v", ci, ok)
	}
	for _, c := range []scenario.TaskRef{ca, ci} {
		if got := b.Do(c, scenario.Call{Name: "exit", Args: []scenario.Value{{Int: 0}}}); got.Kind != scenario.ResultDone {
			t.Fatalf("exit: %+v", got)
		}
	}
	if res := b.Join(a); res.Kind != scenario.ResultNewTask || b.Task(res.NewTask) != b.Task(ca) {
		t.Errorf("a's join: %+v", res)
	}
	if res := b.Join(scenario.Init); res.Kind != scenario.ResultNewTask || b.Task(res.NewTask) != b.Task(ci) {
		t.Errorf("init's join: %+v", res)
	}
}
