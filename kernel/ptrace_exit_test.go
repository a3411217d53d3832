package kernel_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"tasklist/kernel"
)

// D6, D9: PTRACE_O_TRACEEXIT holds a thread's exit, whatever ends it, at
// PTRACE_EVENT_EXIT until its tracer resumes it (d125, d126). While held
// the thread is no zombie: its parent sees nothing, and Quiesce does not
// wait for it.
func TestPtraceTraceExitHoldsExit(t *testing.T) {
	for _, how := range []string{"exit", "SIGKILL", "tracer exits"} {
		t.Run(how, func(t *testing.T) {
			f := newPtFixture(t)
			f.ptrace(f.a, unix.PTRACE_SEIZE, f.th, unix.PTRACE_O_TRACEEXIT)
			switch how {
			case "exit":
				mustOK(t, f.th.Exit(9))
			default:
				mustOK(t, f.init.Kill(f.b.Getpid(), int(unix.SIGKILL)))
			}
			f.k.Quiesce()
			r, err := f.wait4(f.a, -1, unix.WALL|unix.WNOHANG)
			f.want("the tracer's wait", r, err, f.th.Gettid(), trapStatus(unix.SIGTRAP, unix.PTRACE_EVENT_EXIT), kernel.CLDTrapped)
			f.stopped(true, f.th)
			if how == "exit" {
				// The leader lives; the process is untouched by the hold.
				f.stopped(false, f.b)
			}
			r, err = f.wait4(f.init, f.b.Getpid(), unix.WNOHANG)
			f.wantNothing("the parent's wait while the thread is held", r, err)
			switch how {
			case "tracer exits":
				mustOK(t, f.a.Exit(0))
			default:
				f.ptrace(f.a, unix.PTRACE_CONT, f.th, 0)
			}
			f.k.Quiesce()
			if how == "exit" {
				r, err = f.wait4(f.a, -1, unix.WALL|unix.WNOHANG)
				f.want("the tracer's wait after CONT", r, err, f.th.Gettid(), exitedStatus(9), kernel.CLDExited)
			}
			if how == "SIGKILL" {
				r, err = f.wait4(f.a, -1, unix.WALL|unix.WNOHANG)
				f.want("the tracer's wait after CONT", r, err, f.th.Gettid(), unix.WaitStatus(unix.SIGKILL), kernel.CLDKilled)
				r, err = f.wait4(f.init, f.b.Getpid(), unix.WNOHANG)
				f.want("the parent's wait", r, err, f.b.Getpid(), unix.WaitStatus(unix.SIGKILL), kernel.CLDKilled)
			}
			f.finish()
		})
	}
}
