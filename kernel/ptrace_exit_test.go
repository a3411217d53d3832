package kernel

import (
	"context"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
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
				f.exit(f.th, 9)
			default:
				f.kill(f.init, f.b, unix.SIGKILL)
			}
			f.k.Quiesce()
			f.reapCode(f.a, -1, unix.WALL|unix.WNOHANG, f.th.Gettid(), stopped(unix.SIGTRAP, unix.PTRACE_EVENT_EXIT), CLDTrapped)
			f.wantStopped(true, f.th)
			if how == "exit" {
				// The leader lives; the process is untouched by the hold.
				f.wantStopped(false, f.b)
			}
			f.wantWait(f.init, f.b.Getpid(), unix.WNOHANG, nil)
			switch how {
			case "tracer exits":
				f.exit(f.a, 0)
			default:
				f.ptrace(f.a, unix.PTRACE_CONT, f.th, 0)
			}
			f.k.Quiesce()
			if how == "exit" {
				f.reapCode(f.a, -1, unix.WALL|unix.WNOHANG, f.th.Gettid(), exited(9), CLDExited)
			}
			if how == "SIGKILL" {
				f.reapCode(f.a, -1, unix.WALL|unix.WNOHANG, f.th.Gettid(), killed(unix.SIGKILL), CLDKilled)
				f.reapCode(f.init, f.b.Getpid(), unix.WNOHANG, f.b.Getpid(), killed(unix.SIGKILL), CLDKilled)
			}
			f.finish()
		})
	}
}

// D9, D10: threads held at PTRACE_EVENT_EXIT race their tracer's CONTs,
// a kill of their process and the tracer's own exit. Whoever wins, every
// held exit is released once: the process is reaped by its parent with
// nothing left behind, and no thread is left linked to a dead tracer.
func TestStressTraceExitVsTracerExit(t *testing.T) {
	s := newStress(t, 21, Config{})
	s.checkEvery = 0 // the rounds check the invariants mid-race
	for i := range s.rounds(300) {
		tracer := s.fork(s.init)
		b := s.fork(s.init)
		threads := []*Task{b}
		for range 3 {
			threads = append(threads, s.thread(b))
		}
		opts := uint64(unix.PTRACE_O_TRACEEXIT)
		if i%2 == 1 {
			opts |= unix.PTRACE_O_EXITKILL // the tracer's exit kills as it releases
		}
		for _, th := range threads {
			s.ptrace(tracer, unix.PTRACE_SEIZE, th, opts)
		}
		ctx, cancel := context.WithCancel(context.Background())
		// A thread killed first has no exit of its own to make: ESRCH.
		gone := func(err error) {
			if err != nil && err != unix.ESRCH {
				t.Errorf("iteration %d: unexpected error: %v", i, err)
			}
		}
		fs := []func(){
			func() { gone(threads[1].Exit(1)) },
			func() { gone(threads[2].ExitGroup(2)) },
			func() { expectOK(t, s.init.Kill(b.Getpid(), int(unix.SIGKILL))) },
			func() { expectOK(t, tracer.Exit(0)) },
			func() {
				// The tracer resumes what it finds held, until it dies.
				for ctx.Err() == nil {
					r, err := tracer.Wait4(ctx, -1, unix.WALL|unix.WNOHANG)
					if err != nil {
						return
					}
					if r.Pid > 0 && r.Status.Stopped() {
						_ = tracer.Ptrace(unix.PTRACE_CONT, r.Pid, 0, 0)
					}
					runtime.Gosched()
				}
			},
		}
		s.concurrently(fs...)
		cancel()
		s.check()
		s.reapAll(s.init)
	}
	s.end()
}

// do_exit stops at PTRACE_EVENT_EXIT before exit_signals sets PF_EXITING:
// a thread held there is alive for find_alive_thread and adopts the
// children of its exiting leader (B8; corpus b82).
func TestExitEventStopThreadStillAdopts_B8(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	th := e.thread(p)
	e.ptrace(e.init, unix.PTRACE_SEIZE, th, unix.PTRACE_O_TRACEEXIT)
	e.exit(th, 5)
	c := e.fork(p)
	e.exit(p, 3)
	e.check()
	if got := c.Parent(); got != th {
		t.Fatalf("orphan's parent is %v, want the thread held at PTRACE_EVENT_EXIT", got)
	}
	e.ptrace(e.init, unix.PTRACE_CONT, th, 0)
	e.check()
	if got := c.Getppid(); got != 1 {
		t.Fatalf("orphan's parent pid %d after the thread exited, want init's", got)
	}
	e.reap(e.init, th.Gettid(), unix.WALL, th.Gettid(), exited(3))
	e.reap(e.init, p.Getpid(), unix.WALL, p.Getpid(), exited(3))
	e.check()
}
