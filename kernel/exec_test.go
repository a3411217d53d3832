package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

// B7, E1, de_thread: a non-leader's exec kills the other threads, takes
// the leader's pid (the old leader is released, its tid goes with it),
// resets handled signals to SIG_DFL but keeps SIG_IGN, makes the parent's
// setpgid fail with EACCES, and hands the dead threads' children to the
// exec'er.
func TestExecveDeThread(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	pid := p.Getpid()
	a := e.thread(p)
	b := e.thread(p)
	bTid := b.Gettid()
	child := e.clone(a, 0, unix.SIGUSR1)
	mustOK(t, errOf(p.Sigaction(int(unix.SIGUSR2), SigAction{Handler: SigHandler})))
	mustOK(t, errOf(p.Sigaction(int(unix.SIGHUP), SigAction{Handler: SigIgn, Flags: 0x4})))
	mustOK(t, errOf(b.Sigaction(int(unix.SIGCHLD), SigAction{Handler: SigHandler, Flags: SaNoCldWait})))

	mustOK(t, b.Execve())
	if !p.Exited() || !a.Exited() || b.Exited() {
		t.Fatalf("after exec: leader exited %v, sibling exited %v, exec'er exited %v", p.Exited(), a.Exited(), b.Exited())
	}
	if b.Getpid() != pid || b.Gettid() != pid || b.ThreadGroup().Leader() != b {
		t.Fatalf("exec'er: pid %d tid %d, want the old leader's %d", b.Getpid(), b.Gettid(), pid)
	}
	if got := e.k.RootNamespace().Lookup(bTid); got != nil {
		t.Fatalf("the exec'er's old tid %d still names a task", bTid)
	}
	if got := e.k.RootNamespace().Lookup(pid); got != b {
		t.Fatalf("pid %d names %v, want the exec'er", pid, got)
	}
	for sig, want := range map[unix.Signal]SigAction{
		unix.SIGUSR2: {Handler: SigDfl}, unix.SIGHUP: {Handler: SigIgn}, unix.SIGCHLD: {},
	} {
		if got, _ := b.SigactionOf(int(sig)); got != want {
			t.Errorf("%v after exec: %+v, want %+v", sig, got, want)
		}
	}
	if child.Getppid() != pid {
		t.Fatalf("child's parent %d, want the exec'er's pid %d", child.Getppid(), pid)
	}
	if err := e.init.Setpgid(pid, 0); err != unix.EACCES {
		t.Fatalf("setpgid of an exec'd child: %v, want EACCES", err)
	}
	e.exit(child, 4)
	if r := e.waitOne(b, child.Getpid(), unix.WALL|unix.WNOHANG); r.Status.ExitStatus() != 4 {
		t.Fatalf("child's status %v", r.Status)
	}
	e.exitGroup(b, 3)
	if r := e.waitOne(e.init, pid, 0); r.Status.ExitStatus() != 3 {
		t.Fatalf("process status %v, want exit 3", r.Status)
	}
	e.check()
	e.finish()
}

// Hard case: exec's de_thread against clone of a new thread and
// exit_group in the same process. A thread cloned before de_thread is
// killed; afterwards clone fails with EINTR (or ESRCH for a cloner already
// killed); the exec'er ends as the process's only thread, with the
// leader's pid; an exit_group during de_thread ends only its caller.
func TestStressExecVsClone(t *testing.T) {
	s := newStress(t, 2, Config{})
	s.checkEvery = 0 // the rounds check the invariants mid-race
	for i := range s.rounds(400) {
		p := s.fork(s.init)
		pid := p.Getpid()
		a := s.thread(p)
		b := s.thread(p)
		execer, cloner, other := b, a, p
		if i%2 == 1 {
			execer, cloner, other = p, a, b
		}
		var nt *Task
		var cerr, xerr, gerr error
		s.concurrently(
			func() { xerr = execer.Execve() },
			func() { nt, cerr = cloner.Clone(CloneArgs{Flags: threadFlags}) },
			func() {
				if i%4 >= 2 {
					gerr = other.ExitGroup(9)
				}
			})
		if gerr != nil && !isOneOf(gerr, unix.ESRCH) {
			t.Fatalf("iteration %d: exit_group during exec: %v", i, gerr) // ESRCH: killed by the exec first
		}
		if xerr != nil {
			// exit_group won: the whole process died before the exec
			// could start.
			if !isOneOf(xerr, unix.ESRCH, unix.EAGAIN, unix.EINTR) || !execer.Exited() {
				t.Fatalf("iteration %d: exec: %v, exec'er exited %v", i, xerr, execer.Exited())
			}
			s.count("exit_group first")
			if r := s.waitOne(s.init, pid, 0); r.Status.ExitStatus() != 9 {
				t.Fatalf("iteration %d: status %v, want exit 9", i, r.Status)
			}
			continue
		}
		switch {
		case cerr != nil && isOneOf(cerr, unix.EINTR, unix.ESRCH):
			s.count("clone refused")
		case cerr != nil:
			t.Fatalf("iteration %d: clone during exec: %v", i, cerr)
		case !nt.Exited():
			t.Fatalf("iteration %d: thread %d cloned during exec survived it", i, nt.Gettid())
		default:
			s.count("thread killed by exec")
		}
		if execer.Exited() || execer.Getpid() != pid || execer.Gettid() != pid {
			t.Fatalf("iteration %d: exec'er exited %v, pid %d tid %d, want %d", i, execer.Exited(), execer.Getpid(), execer.Gettid(), pid)
		}
		if !other.Exited() || !cloner.Exited() {
			t.Fatalf("iteration %d: a sibling survived the exec", i)
		}
		s.check()
		s.exitGroup(execer, 0)
		if r := s.waitOne(s.init, pid, 0); r.Status.ExitStatus() != 0 {
			t.Fatalf("iteration %d: status %v", i, r.Status)
		}
	}
	s.end()
}

// TestExitsAnExecStartsRunAfterIt: exits that an exit starts (here the
// parent-death signal of a child of the leader an exec kills) run once the
// call is over, in order, as the reference model runs them; Linux lets
// them race the rest of the call. So the child dies after the exec has
// reset SA_NOCLDWAIT (flush_signal_handlers) and stays a zombie for the
// exec'er to reap, every time: when it ran alongside the exec, it was
// sometimes reaped at once, and the state machine test failed under load.
func TestExitsAnExecStartsRunAfterIt(t *testing.T) {
	e := newEnv(t, Config{})
	for i := range 200 {
		p := e.fork(e.init)
		th := e.thread(p)
		c := e.fork(p)
		mustOK(t, c.PrctlSetPdeathsig(int(unix.SIGTERM)))
		mustOK(t, errOf(p.Sigaction(int(unix.SIGCHLD), SigAction{Flags: SaNoCldWait})))
		mustOK(t, th.Execve())
		e.k.Quiesce()
		r, err := th.Wait4(t.Context(), c.Getpid(), unix.WNOHANG)
		if err != nil || r.Pid != c.Getpid() || r.Status != killed(unix.SIGTERM) {
			t.Fatalf("iteration %d: the exec'er's wait for the child killed by its pdeath signal = %+v, %v; want it killed by SIGTERM",
				i, r, err)
		}
		e.exit(th, 0)
		e.waitOne(e.init, th.Getpid(), 0)
	}
	e.check()
}

// A thread an exec kills out of a signal-delivery stop requeues a signal
// its tracer has not collected (ptrace_signal); from the process's queue
// the exec'ing thread takes it after the exec, with the new image's
// default action (corpus x20).
func TestExecTakesKilledTraceeSignal_D6(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	pid := p.Gettid()
	mustOK(t, e.init.Ptrace(unix.PTRACE_SEIZE, pid, 0, 0))
	th := e.thread(p)
	mustOK(t, e.init.Kill(pid, int(unix.SIGUSR1)))
	e.check()
	if err := th.Execve(); err != nil {
		t.Fatalf("execve: %v", err)
	}
	e.check()
	e.reap(e.init, -1, unix.WNOHANG|unix.WALL, pid, killed(unix.SIGUSR1))
	e.settle()
}

// An exec that waits for a tracer to reap a killed sibling has let the
// exits its other killed siblings started run: a tracee of one of them,
// seized with PTRACE_O_EXITKILL, is dead while the exec still waits
// (corpus x21).
func TestExecWaitLetsSiblingExitsRun_D9(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	tracer := e.thread(p)
	victim := e.fork(e.init)
	held := e.thread(p)
	e.ptrace(tracer, unix.PTRACE_SEIZE, victim, unix.PTRACE_O_EXITKILL)
	e.ptrace(e.init, unix.PTRACE_SEIZE, held, 0)
	exec := e.blockedExecve(p)
	e.eventually("the exits the exec started", e.k.Quiescent)
	e.reap(e.init, victim.Gettid(), unix.WNOHANG|unix.WALL, victim.Gettid(), killed(unix.SIGKILL))
	e.reap(e.init, held.Gettid(), unix.WALL, held.Gettid(), exited(0))
	errIs(t, "execve", e.result(exec).err, nil)
	e.killAndSettle(p)
}

// de_thread ends with exit_signal = SIGCHLD for the thread that execs,
// the leader included: a child cloned with SIGUSR1 that execs itself
// leaves the __WCLONE class, and its exit sends its parent SIGCHLD, not
// SIGUSR1, whose default action would kill the parent (B7, C5; corpus
// x15).
func TestDeThreadResetsLeaderExitSignal_B7(t *testing.T) {
	e := newEnv(t, Config{})
	w := e.fork(e.init)
	a := e.clone(w, 0, unix.SIGUSR1)
	e.wantWait(w, -1, unix.WNOHANG|unix.WCLONE, nil)
	if err := a.Execve(); err != nil {
		t.Fatalf("execve: %v", err)
	}
	e.wantWait(w, -1, unix.WNOHANG|unix.WCLONE, unix.ECHILD)
	e.wantWait(w, -1, unix.WNOHANG, nil)
	e.exit(a, 3)
	e.check()
	if w.Exited() {
		t.Fatal("the parent was killed: the exit signal was not reset to SIGCHLD")
	}
	e.reap(w, -1, unix.WNOHANG, a.Getpid(), exited(3))
	e.exitReaped(e.init, 0, w)
	e.settle()
}

// de_thread sleeps, killably, until every killed sibling is released
// (notify_count, counted down in __exit_signal): a traced sibling only
// when its tracer reaps it, which it sees exit with status 0. Until then
// the exec is asleep, for runners to see (Sleeping), and returns once the
// tracer's wait has reaped the sibling (corpus x16).
func TestDeThreadWaitsForTracedSiblingRelease(t *testing.T) {
	e := newEnv(t, Config{})
	a := e.fork(e.init)
	th := e.thread(a)
	e.ptrace(e.init, unix.PTRACE_SEIZE, th, 0)
	exec := e.blockedExecve(a)
	e.stillBlocked(exec)
	e.reap(e.init, th.Gettid(), unix.WALL, th.Gettid(), exited(0))
	errIs(t, "exec", e.result(exec).err, nil)
	e.exit(a, 2)
	e.reap(e.init, -1, unix.WALL, a.Getpid(), exited(2))
	e.settle()
}

// ptrace_attach takes the target's cred_guard_mutex, which an exec holds
// through de_thread: an attach to a process whose exec waits for a traced
// sibling's reaping sleeps until the exec ends, then goes through (D5;
// corpus d143).
func TestAttachWaitsForExecCredGuard_D5(t *testing.T) {
	e := newEnv(t, Config{})
	a := e.fork(e.init)
	th := e.thread(a)
	e.ptrace(e.init, unix.PTRACE_SEIZE, th, 0)
	exec := e.blockedExecve(a)
	b := e.fork(e.init)
	attach := e.blocked(b, "attach", func() (WaitResult, error) {
		return WaitResult{}, b.Ptrace(unix.PTRACE_SEIZE, a.Gettid(), 0, 0)
	})
	e.stillBlocked(attach)
	e.reap(e.init, th.Gettid(), unix.WALL, th.Gettid(), exited(0))
	errIs(t, "exec", e.result(exec).err, nil)
	errIs(t, "attach", e.result(attach).err, nil)
	if a.tracer.Load() != b {
		t.Fatal("after the exec, the attach did not make b a's tracer")
	}
	e.check()
}

// blockedExecve starts an execve by p that must sleep (de_thread waiting
// for its killed siblings) and returns once it does.
func (e *env) blockedExecve(p *Task) <-chan callOut {
	e.t.Helper()
	return e.blocked(p, "execve", func() (WaitResult, error) { return WaitResult{}, p.Execve() })
}
