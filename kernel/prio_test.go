package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

// cap_task_setnice, set_one_prio's last check: a target whose permitted
// capabilities the caller lacks may be reniced only with CAP_SYS_NICE
// (F5; corpus f23).
func TestSetniceNeedsCallersCaps_F5(t *testing.T) {
	e := newEnv(t, Config{})
	keeper := e.fork(e.init)
	errIs(t, "setresuid", keeper.Setresuid(1000, 1000, -1), nil) // saved uid 0 keeps the permitted set
	dropped := e.forkAs(1000)
	errIs(t, "renice of a task with more capabilities",
		dropped.Setpriority(unix.PRIO_PROCESS, keeper.Gettid(), 12), unix.EPERM)
	if got, _ := keeper.Getpriority(unix.PRIO_PROCESS, 0); got != 20 {
		t.Fatalf("refused renice changed the target: getpriority %d, want 20", got)
	}
	errIs(t, "renice by the task with more capabilities", keeper.Setpriority(unix.PRIO_PROCESS, dropped.Gettid(), 12), nil)
	e.check()
}
