package kernel

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// Behaviours marked "host" were checked on Linux 6.18 with small C
// programs (thread exits through syscall(SYS_exit), waitpid, sigaction).

// TestExitEndsOnlyThread_B1: exit(2) ends the calling thread; the process
// lives on, and the code is masked to 8 bits (host: exit(259) → 3).
func TestExitEndsOnlyThread_B1(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	th := e.thread(p)
	tid := th.Gettid()
	before := e.k.RootNamespace().Allocated()
	e.exit(th, 300)
	if !th.Exited() || p.Exited() {
		t.Fatal("exit must end the thread only")
	}
	if e.k.RootNamespace().Lookup(tid) != nil || e.k.RootNamespace().Allocated() != before-1 {
		t.Fatal("an exited thread is released at once (B5)")
	}
	errIs(t, "exit twice", th.Exit(0), unix.ESRCH)
	errIs(t, "clone by an exited thread", func() error { _, err := th.Fork(); return err }(), unix.ESRCH)
	e.wantWait(e.init, -1, unix.WNOHANG|unix.WALL, nil)
	e.exit(p, 259)
	r := e.reap(e.init, -1, 0, p.Getpid(), exited(3))
	if r.Code != CLDExited || r.Task != p {
		t.Fatalf("waitid code %d, want CLD_EXITED", r.Code)
	}
	e.settle()
}

// TestExitGroupKillsOtherThreads_B2: exit_group kills every other thread,
// and its code is what the parent sees, whichever thread calls it.
func TestExitGroupKillsOtherThreads_B2(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	t1, t2 := e.thread(p), e.thread(p)
	c := e.fork(t2) // t2's child goes to the reaper (init)
	e.exitGroup(t1, 7)
	for _, x := range []*Task{p, t1, t2} {
		if !x.Exited() {
			t.Fatalf("thread %d survived exit_group", x.Gettid())
		}
	}
	errIs(t, "exit_group by a killed thread", t2.ExitGroup(1), unix.ESRCH)
	errIs(t, "exit by a killed thread", p.Exit(1), unix.ESRCH)
	if c.Parent() != e.init {
		t.Fatal("the child of a dead process goes to init")
	}
	e.reap(e.init, p.Getpid(), 0, p.Getpid(), exited(7))
	e.exitReaped(e.init, 0, c)
	e.settle()
}

// TestExitLastThreadCode_B3 (host): leader exits 0, the last thread exits
// 5: the parent sees 5<<8.
func TestExitLastThreadCode_B3(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	th := e.thread(p)
	e.exit(p, 0)
	e.exit(th, 5)
	e.reap(e.init, -1, 0, p.Getpid(), exited(5))
	// The other order: a thread exits 5, the leader last with 0.
	p = e.fork(e.init)
	th = e.thread(p)
	e.exit(th, 5)
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestExitRootInit_B4: the root init's last live thread cannot exit (Linux
// panics); a non-last thread of init may, and init keeps working with its
// remaining thread as the child reaper.
func TestExitRootInit_B4(t *testing.T) {
	e := newEnv(t, Config{})
	init := e.init
	if err := init.Exit(0); !errors.Is(err, ErrInitExit) {
		t.Fatalf("init exit: %v, want ErrInitExit", err)
	}
	if err := init.ExitGroup(0); !errors.Is(err, ErrInitExit) {
		t.Fatalf("init exit_group: %v, want ErrInitExit", err)
	}
	if init.Exited() {
		t.Fatal("init must still run after a refused exit")
	}
	c := e.fork(init)
	g := e.fork(c)
	th := e.thread(init)
	if err := init.ExitGroup(1); !errors.Is(err, ErrInitExit) || th.Exited() {
		t.Fatalf("init exit_group with two threads: %v; it must kill nothing", err)
	}
	e.exit(init, 0) // not the last thread: allowed
	if e.k.RootNamespace().ChildReaper() != th {
		t.Fatal("init's live thread must become the child reaper")
	}
	if c.Parent() != th || c.Getppid() != 1 {
		t.Fatal("the exited init thread's children go to its live thread")
	}
	if err := th.Exit(0); !errors.Is(err, ErrInitExit) {
		t.Fatalf("last init thread exit: %v, want ErrInitExit", err)
	}
	e.exit(c, 0)
	e.reap(th, -1, 0, c.Getpid(), exited(0))
	if g.Parent() != th {
		t.Fatal("orphans go to the live init thread")
	}
	e.exit(g, 0)
	e.reap(th, -1, 0, g.Getpid(), exited(0))
	e.k.Quiesce()
	mustOK(t, e.k.CheckInvariants())
	// init's zombie leader still holds pid 1 and its process group's
	// numbers; nothing else is left.
	if n := e.k.RootNamespace().Allocated(); n != e.base+1 {
		t.Fatalf("root namespace holds %d pids, want %d", n, e.base+1)
	}
}

// TestExitThreadNeverWaitable_B5: an exiting non-leader thread reaps itself
// and is never visible to wait, even with __WALL.
func TestExitThreadNeverWaitable_B5(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	out := e.blockedWait(e.init, -1, unix.WALL)
	th := e.thread(p)
	e.exit(th, 4)
	e.stillBlocked(out)
	e.exit(p, 1)
	if o := e.result(out); o.err != nil || o.r.Pid != p.Getpid() || o.r.Status != exited(1) {
		t.Fatalf("wait %+v %v", o.r, o.err)
	}
	e.settle()
}

// TestExitZombieLeaderWithThreads_B6_C9 (host): a leader with live threads
// is a silent zombie; WNOHANG says 0, a blocking wait keeps sleeping, and
// the last thread's exit notifies the parent.
func TestExitZombieLeaderWithThreads_B6_C9(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	t1, t2 := e.thread(p), e.thread(p)
	e.exit(p, 0)
	e.wantWait(e.init, -1, unix.WNOHANG, nil)
	e.wantWait(e.init, p.Getpid(), unix.WNOHANG, nil)
	if r, err := e.init.Waitid(t.Context(), unix.P_PID, p.Getpid(), unix.WEXITED|unix.WNOHANG|unix.WNOWAIT); err != nil || r.Pid != 0 {
		t.Fatalf("waitid WNOWAIT on a zombie leader with threads: %+v %v", r, err)
	}
	out := e.blockedWait(e.init, p.Getpid(), 0)
	e.exit(t1, 6)
	e.stillBlocked(out)
	e.exit(t2, 5)
	if o := e.result(out); o.err != nil || o.r.Pid != p.Getpid() || o.r.Status != exited(5) {
		t.Fatalf("wait %+v %v; want pid %d exited 5", o.r, o.err, p.Getpid())
	}
	e.settle()
}

// TestExitZombieLeaderAutoreap_B6 (host): under SIG_IGN for SIGCHLD the
// zombie leader is reaped when its last thread goes; until then WNOHANG
// says 0.
func TestExitZombieLeaderAutoreap_B6(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	if _, err := p.Sigaction(int(unix.SIGCHLD), SigAction{Handler: SigIgn}); err != nil {
		t.Fatal(err)
	}
	c := e.fork(p)
	th := e.thread(c)
	e.exit(c, 0)
	e.wantWait(p, -1, unix.WNOHANG, nil)
	e.exit(th, 5)
	e.wantWait(p, -1, unix.WNOHANG, unix.ECHILD)
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestExitSignalNotSIGCHLD_B7 (host): a child whose exit signal is SIGUSR1
// kills a parent that leaves SIGUSR1 at its default; one that ignores
// SIGCHLD still has to wait for it (with __WCLONE): only SIGCHLD children
// are autoreaped.
func TestExitSignalNotSIGCHLD_B7(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	c := e.clone(p, 0, unix.SIGUSR1)
	e.exit(c, 0)
	e.k.Quiesce()
	if !p.Exited() {
		t.Fatal("SIGUSR1 with the default action must kill the parent")
	}
	r := e.reap(e.init, p.Getpid(), 0, p.Getpid(), killed(unix.SIGUSR1))
	if r.Code != CLDKilled {
		t.Fatalf("si_code %d, want CLD_KILLED", r.Code)
	}
	// The zombie went to init with SIGCHLD as its exit signal (B9).
	e.reap(e.init, c.Getpid(), 0, c.Getpid(), exited(0))

	p = e.fork(e.init)
	for sig, h := range map[unix.Signal]int{unix.SIGCHLD: SigIgn, unix.SIGUSR1: SigIgn} {
		if _, err := p.Sigaction(int(sig), SigAction{Handler: h}); err != nil {
			t.Fatal(err)
		}
	}
	u := e.clone(p, 0, unix.SIGUSR1)
	f := e.fork(p)
	e.exit(u, 3)
	e.exit(f, 4)
	e.wantWait(p, f.Getpid(), unix.WNOHANG, unix.ECHILD) // autoreaped
	e.reap(p, u.Getpid(), unix.WCLONE|unix.WNOHANG, u.Getpid(), exited(3))
	e.wantWait(p, -1, 0, unix.ECHILD)
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestExitSignalZero_B7 (host): exit signal 0 sends nothing; the child is
// a __WCLONE child, invisible to a default wait, and not autoreaped.
func TestExitSignalZero_B7(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	if _, err := p.Sigaction(int(unix.SIGCHLD), SigAction{Handler: SigIgn}); err != nil {
		t.Fatal(err)
	}
	c := e.clone(p, 0, 0)
	e.exit(c, 2)
	e.wantWait(p, -1, unix.WNOHANG, unix.ECHILD)
	e.reap(p, -1, unix.WCLONE|unix.WNOHANG, c.Getpid(), exited(2))
	e.exitReaped(e.init, 0, p)
	e.settle()
}

// TestExitAutoreap_B7 (host): SIG_IGN and SA_NOCLDWAIT (with a handler or
// SIG_DFL) both autoreap SIGCHLD children; a blocked waiter is woken and
// gets ECHILD once nothing is left.
func TestExitAutoreap_B7(t *testing.T) {
	e := newEnv(t, Config{})
	for _, act := range []SigAction{
		{Handler: SigIgn},
		{Handler: SigHandler, Flags: SaNoCldWait},
		{Handler: SigDfl, Flags: SaNoCldWait},
	} {
		p := e.fork(e.init)
		if _, err := p.Sigaction(int(unix.SIGCHLD), act); err != nil {
			t.Fatal(err)
		}
		c := e.fork(p)
		out := e.blockedWait(p, -1, 0)
		e.exit(c, 1)
		if o := e.result(out); !errors.Is(o.err, unix.ECHILD) {
			t.Fatalf("%+v: blocked wait got %+v %v, want ECHILD", act, o.r, o.err)
		}
		// A SIGCHLD handler without SA_NOCLDWAIT does not autoreap.
		if _, err := p.Sigaction(int(unix.SIGCHLD), SigAction{Handler: SigHandler}); err != nil {
			t.Fatal(err)
		}
		c = e.fork(p)
		e.exit(c, 1)
		e.reap(p, -1, 0, c.Getpid(), exited(1))
		e.exitReaped(e.init, 0, p)
	}
	e.settle()
}

// TestExitKilledByPdeathSignal_C8: a process killed by a signal reports the
// signal number; a core-dumping signal with RLIMIT_CORE 0 has no core bit.
func TestExitKilledByPdeathSignal_C8(t *testing.T) {
	e := newEnv(t, Config{})
	mustOK(t, e.init.PrctlSetChildSubreaper(true))
	for _, sig := range []unix.Signal{unix.SIGKILL, unix.SIGTERM, unix.SIGQUIT} {
		p := e.fork(e.init)
		c := e.fork(p)
		mustOK(t, c.PrctlSetPdeathsig(int(sig)))
		e.exitReaped(e.init, 0, p)
		r := e.reap(e.init, c.Getpid(), 0, c.Getpid(), killed(sig))
		if r.Code != CLDKilled {
			t.Fatalf("si_code %d, want CLD_KILLED", r.Code)
		}
	}
	errIs(t, "bad pdeath signal", e.init.PrctlSetPdeathsig(65), unix.EINVAL)
	e.settle()
}

// TestExitRaces: threads of one process end it, or clone, at once, over
// and over. Each case runs its two calls concurrently on threads t1 and
// t2 of a process p, checks what they returned, and says what p's parent
// must reap.
func TestExitRaces(t *testing.T) {
	for n, tc := range []struct {
		name   string
		rounds int
		race   func(s *stress, i int, p, t1, t2 *Task) unix.WaitStatus
	}{
		{"B2 two exit_groups: exactly one wins and its code is the group's", 200,
			func(s *stress, _ int, _, t1, t2 *Task) unix.WaitStatus {
				var errs [2]error
				s.concurrently(func() { errs[0] = t1.ExitGroup(1) }, func() { errs[1] = t2.ExitGroup(2) })
				switch {
				case errs[0] == nil && errors.Is(errs[1], unix.ESRCH):
					return exited(1)
				case errs[1] == nil && errors.Is(errs[0], unix.ESRCH):
					return exited(2)
				}
				s.t.Fatalf("exit_group results %v, %v: exactly one must win", errs[0], errs[1])
				return 0
			}},
		// Linux sets SIGNAL_GROUP_EXIT either way; with the leader gone
		// the same holds through B3 when the exiting thread goes first.
		{"B2 B3 exit_group against another thread's exit: the group's code", 300,
			func(s *stress, i int, p, t1, t2 *Task) unix.WaitStatus {
				if i%2 == 1 {
					s.exit(p, 9) // zombie leader: t1 and t2 are the last threads
				}
				var err1, err2 error
				s.concurrently(func() { err1 = t1.Exit(3) }, func() { err2 = t2.ExitGroup(7) })
				if err2 != nil || (err1 != nil && !errors.Is(err1, unix.ESRCH)) {
					s.t.Fatalf("exit %v, exit_group %v", err1, err2)
				}
				return exited(7)
			}},
		{"B6 the last two threads beside a zombie leader: one notification", 300,
			func(s *stress, _ int, p, t1, t2 *Task) unix.WaitStatus {
				s.exit(p, 0)
				s.concurrently(func() { _ = t1.Exit(1) }, func() { _ = t2.Exit(1) })
				return exited(1)
			}},
		// The clone either fails (EINTR, or ESRCH once the caller itself
		// was killed) or made a task before the group exit: a new thread
		// is killed with its siblings, a new process goes to init.
		{"B2 exit_group against a clone by another thread", 300,
			func(s *stress, i int, p, th, _ *Task) unix.WaitStatus {
				flags := uint64(threadFlags)
				if i%2 == 1 {
					flags = 0
				}
				var c *Task
				var cerr error
				s.concurrently(
					func() { c, cerr = th.Clone(CloneArgs{Flags: flags, ExitSignal: int(unix.SIGCHLD)}) },
					func() { expectOK(s.t, p.ExitGroup(2)) })
				s.k.Quiesce()
				switch {
				case cerr == nil && flags != 0:
					if !c.Exited() {
						s.t.Fatal("a thread cloned before exit_group survived it")
					}
				case cerr == nil:
					if c.Parent() != s.init {
						s.t.Fatal("the new process must go to init")
					}
					s.exitReaped(s.init, 0, c)
				case !errors.Is(cerr, unix.EINTR) && !errors.Is(cerr, unix.ESRCH):
					s.t.Fatalf("clone racing exit_group: %v", cerr)
				}
				return exited(2)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStress(t, uint64(20+n), Config{})
			for i := range s.rounds(tc.rounds) {
				p := s.fork(s.init)
				t1, t2 := s.thread(p), s.thread(p)
				s.reap(s.init, -1, 0, p.Getpid(), tc.race(s, i, p, t1, t2))
			}
			s.end()
		})
	}
}
