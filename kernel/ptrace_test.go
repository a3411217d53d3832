package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

// D10, seed 000 (docs/seeds.md): PTRACE_TRACEME races the parent's exit. Either TRACEME
// links first and the parent's exit_ptrace detaches it, or it sees the
// parent exiting and returns 0 without linking; no task is ever left
// linked to a tracer that has exited (CheckInvariants checks the links).
func TestStressTracemeVsParentExit(t *testing.T) {
	s := newStress(t, 3, Config{})
	s.checkEvery = 0 // the rounds check the invariants mid-race
	for i := range s.rounds(4000) {
		p := s.fork(s.init)
		c := s.fork(p)
		var terr error
		s.concurrently(
			func() { terr = c.Ptrace(unix.PTRACE_TRACEME, 0, 0, 0) },
			func() { s.exit(p, 0) })
		mustOK(t, terr)
		if i%64 == 0 {
			s.check()
		}
		// The child is init's now, untraced or traced by init (a TRACEME
		// that found it reparented links it to its new parent); one more
		// TRACEME leaves it traced by init either way.
		if err := c.Ptrace(unix.PTRACE_TRACEME, 0, 0, 0); err != nil && err != unix.EPERM {
			t.Fatalf("iteration %d: TRACEME after the race: %v", i, err)
		}
		if err := c.Ptrace(unix.PTRACE_TRACEME, 0, 0, 0); err != unix.EPERM {
			t.Fatalf("iteration %d: TRACEME of a traced task: %v, want EPERM", i, err)
		}
		s.exit(c, 0)
		s.waitOne(s.init, p.Getpid(), 0)
		s.waitOne(s.init, c.Getpid(), 0)
	}
	s.end()
}

// ATTACH races the tracer's death by a sibling's exit_group: the tracee
// is either attached before and detached (and resumed) by exit_ptrace, or
// not attached at all.
func TestStressAttachVsTracerExit(t *testing.T) {
	s := newStress(t, 4, Config{})
	s.checkEvery = 0 // the rounds check the invariants mid-race
	for i := range s.rounds(1000) {
		tracer := s.fork(s.init)
		sib := s.thread(tracer)
		target := s.fork(s.init)
		var aerr error
		s.concurrently(
			func() { aerr = tracer.Ptrace(unix.PTRACE_SEIZE, target.Getpid(), 0, 0) },
			func() { s.exitGroup(sib, 1) })
		if aerr != nil && !isOneOf(aerr, unix.EINTR, unix.ESRCH) {
			t.Fatalf("iteration %d: SEIZE during the tracer's exit: %v", i, aerr)
		}
		s.check()
		s.waitOne(s.init, tracer.Getpid(), 0)
		s.exitReaped(s.init, 0, target)
	}
	s.end()
}

// D1–D7: the errnos of each request.
func TestPtraceErrors(t *testing.T) {
	e := newEnv(t, Config{})
	a, b := e.fork(e.init), e.fork(e.init)
	th := e.thread(a)
	for _, tc := range []struct {
		name       string
		caller     *Task
		req, pid   int
		addr, data uint64
		want       error
	}{
		{"unknown pid", a, unix.PTRACE_ATTACH, 999, 0, 0, unix.ESRCH},
		{"own thread group", a, unix.PTRACE_ATTACH, th.Gettid(), 0, 0, unix.EPERM},
		{"SEIZE addr", a, unix.PTRACE_SEIZE, b.Getpid(), 1, 0, unix.EIO},
		{"SEIZE options", a, unix.PTRACE_SEIZE, b.Getpid(), 0, 1 << 30, unix.EIO},
		{"CONT untraced", a, unix.PTRACE_CONT, b.Getpid(), 0, 0, unix.ESRCH},
		{"SEIZE", a, unix.PTRACE_SEIZE, b.Getpid(), 0, 0, nil},
		{"already traced", e.init, unix.PTRACE_ATTACH, b.Getpid(), 0, 0, unix.EPERM},
		{"CONT running", a, unix.PTRACE_CONT, b.Getpid(), 0, 0, unix.ESRCH},
		{"CONT by another", e.init, unix.PTRACE_CONT, b.Getpid(), 0, 0, unix.ESRCH},
		{"INTERRUPT", a, unix.PTRACE_INTERRUPT, b.Getpid(), 0, 0, nil},
		{"DETACH bad signal", a, unix.PTRACE_DETACH, b.Getpid(), 0, 100, unix.EIO},
		{"unknown request", a, 0x4321, b.Getpid(), 0, 0, unix.EIO},
		{"DETACH", a, unix.PTRACE_DETACH, b.Getpid(), 0, 0, nil},
		{"TRACEME", b, unix.PTRACE_TRACEME, 0, 0, 0, nil},
		{"TRACEME twice", b, unix.PTRACE_TRACEME, 0, 0, 0, unix.EPERM},
	} {
		e.k.Quiesce()
		if err := tc.caller.Ptrace(tc.req, tc.pid, tc.addr, tc.data); err != tc.want && !(err == nil && tc.want == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	e.check()
	e.finish()
}
