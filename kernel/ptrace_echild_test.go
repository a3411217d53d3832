package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestZombieTraceeCountsOnlyForWEXITED_wait_consider_task: a zombie the
// waiter sees as a tracee (wait_consider_task with ptrace set: its
// tracer, or its real parent when a thread of the parent traces it) keeps
// a wait from failing with ECHILD only for WEXITED, since wait_task_zombie
// returns before notask_error is cleared; a leader that live threads keep
// from being reported also counts for WCONTINUED (c40, c41).
func TestZombieTraceeCountsOnlyForWEXITED_wait_consider_task(t *testing.T) {
	f := newPtFixture(t)
	waitid := func(w *Task, opts int) error {
		_, err := f.waitid(w, unix.P_ALL, 0, opts|unix.WNOHANG)
		return err
	}
	c := f.fork(f.a)
	mustOK(t, c.Ptrace(unix.PTRACE_TRACEME, 0, 0, 0))
	th := f.thread(c)
	f.exit(c, 3)
	f.k.Quiesce()
	// A leader kept a zombie by its thread.
	for opts, want := range map[int]error{unix.WSTOPPED: unix.ECHILD, unix.WCONTINUED: nil, unix.WEXITED: nil} {
		if err := waitid(f.a, opts); err != want {
			t.Fatalf("waitid(%#x) with a delayed zombie leader = %v, want %v", opts, err, want)
		}
	}
	f.exit(th, 4)
	f.k.Quiesce()
	for opts, want := range map[int]error{unix.WSTOPPED: unix.ECHILD, unix.WCONTINUED: unix.ECHILD,
		unix.WSTOPPED | unix.WCLONE: unix.ECHILD} {
		if err := waitid(f.a, opts); err != want {
			t.Fatalf("waitid(%#x) with a zombie tracee = %v, want %v", opts, err, want)
		}
	}
	r, err := f.waitid(f.a, unix.P_ALL, 0, unix.WEXITED|unix.WNOHANG)
	f.want("the parent's wait", r, err, c.Getpid(), exited(4), CLDExited)

	// A tracer outside the parent's process: it gets ECHILD without
	// WEXITED, the parent, which the zombie has not reached yet, does not.
	d := f.fork(f.b)
	f.ptrace(f.a, unix.PTRACE_SEIZE, d, 0)
	f.exit(d, 5)
	f.k.Quiesce()
	if err := waitid(f.a, unix.WSTOPPED|unix.WALL); err != unix.ECHILD {
		t.Fatalf("the tracer's waitid(WSTOPPED) = %v, want ECHILD", err)
	}
	if err := waitid(f.b, unix.WSTOPPED); err != nil {
		t.Fatalf("the parent's waitid(WSTOPPED) = %v, want 0", err)
	}
	f.finish()
}
