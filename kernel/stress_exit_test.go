package kernel

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStressExitGroupVsClone races exit_group against clone by another
// thread of the same process. A thread cloned before the group exit is
// killed with its siblings; otherwise clone fails (EINTR, or ESRCH when the
// caller was already killed). A process forked meanwhile is not killed but
// reparented to init.
func TestStressExitGroupVsClone(t *testing.T) {
	s := newStress(t, 1, Config{})
	for i := range s.rounds(400) {
		p := s.fork(s.init)
		th := s.thread(p)
		caller, exiter := th, p
		if i%2 == 1 {
			caller, exiter = p, th
		}
		forkMode := i%4 >= 2
		var nt *Task
		var cerr, xerr error
		s.concurrently(
			func() {
				if forkMode {
					nt, cerr = caller.Fork()
				} else {
					nt, cerr = caller.Clone(CloneArgs{Flags: threadFlags})
				}
			},
			func() { xerr = exiter.ExitGroup(7) })
		mustOK(t, xerr)
		switch {
		case cerr != nil && isOneOf(cerr, unix.EINTR, unix.ESRCH):
			s.count("refused")
		case cerr != nil:
			t.Fatalf("iteration %d: clone during exit_group: %v, want EINTR or ESRCH", i, cerr)
		case !forkMode && !nt.Exited():
			t.Fatalf("iteration %d: thread %d cloned during exit_group survived it", i, nt.Gettid())
		case !forkMode:
			s.count("thread killed with its group")
		case nt.Exited():
			t.Fatalf("iteration %d: process forked during exit_group was killed with its parent", i)
		case nt.Getppid() != 1:
			t.Fatalf("iteration %d: orphan forked during exit_group has parent %d, want init", i, nt.Getppid())
		default:
			s.count("process forked and reparented")
		}
		r := s.waitOne(s.init, p.Getpid(), 0)
		if !r.Status.Exited() || r.Status.ExitStatus() != 7 {
			t.Fatalf("iteration %d: process exited with status %#x, want exit_group's 7", i, uint32(r.Status))
		}
		if forkMode && cerr == nil {
			s.exitReaped(s.init, 0, nt)
		}
	}
	s.end()
}

// TestStressLastThreadsExit makes the last two (or three) threads of a
// process exit at once. Exactly one of them must notify the parent, with
// the status of one of the exits (or exit_group's when one of them called
// it); when the parent ignores SIGCHLD the process must be reaped exactly
// once, at once.
func TestStressLastThreadsExit(t *testing.T) {
	s := newStress(t, 5, Config{})
	for i := range s.rounds(400) {
		parent := s.init
		ignores := false
		if i%2 == 1 {
			parent = s.fork(s.init)
			if i%4 == 3 {
				ignores = true
				_, err := parent.Sigaction(int(unix.SIGCHLD), SigAction{Handler: SigIgn})
				mustOK(t, err)
			}
		}
		p := s.fork(parent)
		ppid := p.Getpid()
		threads := []*Task{p, s.thread(p)}
		if i%3 == 0 {
			threads = append(threads, s.thread(p))
		}
		groupExit := i%5 == 4
		errs := make([]error, len(threads))
		fs := make([]func(), len(threads))
		for j, th := range threads {
			fs[j] = func() {
				if groupExit && j == len(threads)-1 {
					errs[j] = th.ExitGroup(9)
				} else {
					errs[j] = th.Exit(j + 1)
				}
			}
		}
		s.concurrently(fs...)
		for j, err := range errs {
			// Under exit_group a sibling may already be dead when its own
			// exit starts.
			if err != nil && !(groupExit && errors.Is(err, unix.ESRCH)) {
				t.Fatalf("iteration %d: thread %d's exit: %v", i, j, err)
			}
		}
		if ignores {
			if n := s.k.RootNamespace().Allocated(); n != 2 {
				t.Fatalf("iteration %d: %d pids allocated after an autoreaped exit, want 2", i, n)
			}
		} else {
			r := s.waitOne(parent, ppid, 0)
			code := r.Status.ExitStatus()
			ok := r.Status.Exited() && (groupExit && code == 9 || !groupExit && code >= 1 && code <= len(threads))
			if !ok {
				t.Fatalf("iteration %d: status %#x, want the exit code of one of the threads", i, uint32(r.Status))
			}
		}
		s.wantWait(parent, -1, unix.WNOHANG|unix.WALL, unix.ECHILD)
		if parent != s.init {
			s.exitReaped(s.init, 0, parent)
		}
	}
	s.end()
}
