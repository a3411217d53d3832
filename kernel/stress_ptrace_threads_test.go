package kernel

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Races around tracers of single threads (D5–D10, C5–C11). Each round ends
// with every task reaped by init, no pid left and a clean invariant check
// (no tracer link to a dead task, no zombie thread left behind).

// reportLog collects what a tracer's waits report, from any goroutine.
type reportLog struct {
	mu      sync.Mutex
	reports []WaitResult
}

func (l *reportLog) add(r WaitResult) {
	l.mu.Lock()
	l.reports = append(l.reports, r)
	l.mu.Unlock()
}

// seizedSet is the set of tids a tracer has seized.
type seizedSet struct {
	mu   sync.Mutex
	tids map[int]bool
}

func (s *seizedSet) add(tid int) {
	s.mu.Lock()
	s.tids[tid] = true
	s.mu.Unlock()
}

// TestStressPtraceThreadSeizeVsExit races a tracer seizing several threads
// of a process (sometimes its leader too) against those threads' exits,
// the process's exit_group, the tracer's __WALL waits from a sibling
// thread and the tracer's own death. The tracer reaps only threads it
// seized, each once, with the thread's own code or the group's; whatever
// it had not reaped when it died is released (D8, D9), and init reaps the
// process exactly once, with exit_group's code.
func TestStressPtraceThreadSeizeVsExit(t *testing.T) {
	s := newStress(t, 21, Config{})
	s.checkEvery = 1
	const nThreads = 3
	for i := range s.rounds(300) {
		a := s.fork(s.init)
		waiter := s.thread(a)
		killer := s.thread(a)
		keep := s.fork(a) // a child, so that the waiter never gets ECHILD
		b := s.fork(s.init)
		threads := make([]*Task, nThreads)
		for j := range threads {
			threads[j] = s.thread(b)
		}
		targets := threads
		if i%2 == 1 {
			targets = append([]*Task{b}, threads...)
		}
		exitKill := i%4 == 3
		killTracer := i%3 == 0 // by SIGKILL from init rather than a sibling's exit_group
		opts := uint64(0)
		if exitKill {
			opts = unix.PTRACE_O_EXITKILL
		}
		seized := &seizedSet{tids: map[int]bool{}}
		var log reportLog
		order := s.rng.Perm(len(targets))
		delay := s.rng.IntN(3 * len(targets)) // lets the tracer seize a few before it dies
		fs := []func(){
			func() { // the tracer
				for _, th := range order {
					tid := targets[th].Gettid()
					err := a.Ptrace(unix.PTRACE_SEIZE, tid, 0, opts)
					switch {
					case err == nil:
						seized.add(tid)
					case !isOneOf(err, unix.EPERM, unix.ESRCH, unix.EINTR):
						t.Errorf("iteration %d: SEIZE of %d: %v", i, tid, err)
					}
				}
			},
			func() { // its sibling thread waits with __WALL until killed
				ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
				defer cancel()
				for {
					r, err := waiter.Wait4(ctx, -1, unix.WALL)
					if err != nil {
						if !isOneOf(err, unix.EINTR, unix.ESRCH) || ctx.Err() != nil {
							t.Errorf("iteration %d: tracer's wait4(-1, __WALL): %v", i, err)
						}
						return
					}
					log.add(r)
				}
			},
			func() { // the tracer's death
				for range delay {
					runtime.Gosched()
				}
				if killTracer {
					expectOK(t, s.init.Kill(a.Getpid(), int(unix.SIGKILL)))
				} else if err := killer.ExitGroup(9); err != nil && !errors.Is(err, unix.ESRCH) {
					t.Errorf("iteration %d: exit_group of the tracer: %v", i, err)
				}
			},
			func() {
				if err := b.ExitGroup(2); err != nil && !(exitKill && errors.Is(err, unix.ESRCH)) {
					t.Errorf("iteration %d: exit_group of the tracee's process: %v", i, err)
				}
			},
		}
		for j, th := range threads {
			fs = append(fs, func() {
				if err := th.Exit(10 + j); err != nil && !errors.Is(err, unix.ESRCH) {
					t.Errorf("iteration %d: exit of thread %d: %v", i, th.Gettid(), err)
				}
			})
		}
		s.concurrently(fs...)
		if t.Failed() {
			t.FailNow()
		}
		s.k.Quiesce()
		// What the tracer reaped: seized threads, each once, with its own
		// code or the group's (or SIGKILL from EXITKILL).
		codes := map[int]int{b.Gettid(): 2}
		for j, th := range threads {
			codes[th.Gettid()] = 10 + j
		}
		seen := map[int]bool{}
		for _, r := range log.reports {
			own, ok := codes[r.Pid]
			switch {
			case !ok || !seized.tids[r.Pid]:
				t.Fatalf("iteration %d: the tracer reaped pid %d, which it never seized (seized %v)", i, r.Pid, seized.tids)
			case seen[r.Pid]:
				t.Fatalf("iteration %d: the tracer reaped %d twice", i, r.Pid)
			case r.Status == exited(own) && r.Code == CLDExited,
				r.Status == exited(2) && r.Code == CLDExited,
				exitKill && r.Status == killed(unix.SIGKILL) && r.Code == CLDKilled:
			default:
				t.Fatalf("iteration %d: tracer's report of %d: status %#x code %d", i, r.Pid, uint32(r.Status), r.Code)
			}
			seen[r.Pid] = true
		}
		s.count("%d seized, %d reaped by the tracer", len(seized.tids), len(log.reports))
		s.exit(keep, 0)
		got := s.reapAll(s.init)
		wantA := exited(9)
		if killTracer {
			wantA = killed(unix.SIGKILL)
		}
		if st, ok := got[a.Getpid()]; !ok || st != wantA {
			t.Fatalf("iteration %d: init reaped the tracer with %#x (found %v), want %#x", i, uint32(st), ok, uint32(wantA))
		}
		if st, ok := got[b.Getpid()]; !ok || !(st == exited(2) || exitKill && st == killed(unix.SIGKILL)) {
			t.Fatalf("iteration %d: init reaped the tracee's process with %#x (found %v)", i, uint32(st), ok)
		}
		if st, ok := got[keep.Getpid()]; !ok || st != 0 || len(got) != 3 {
			t.Fatalf("iteration %d: init reaped %v, want the tracer, the tracee's process and the tracer's child", i, got)
		}
	}
	s.end()
}

// TestStressPtraceThreadStopContVsTracer races SIGSTOP and SIGCONT to a
// process with traced threads (attached or seized) against the tracer's
// waits, CONTs and DETACHes of the stops it is told of, and the tracer's
// death. A stop the tracer is told of is a ptrace stop of one of its
// threads, and CONT or DETACH of it succeeds unless the tracer is dying.
// Once the tracer is gone and a last SIGCONT delivered, no thread of the
// process is stopped (D9: exit_ptrace resumes its tracees).
func TestStressPtraceThreadStopContVsTracer(t *testing.T) {
	s := newStress(t, 22, Config{})
	s.checkEvery = 1
	evStop := func(sig unix.Signal) unix.WaitStatus { return stopped(sig, ptraceEventStop) }
	allowed := map[unix.WaitStatus]bool{
		stopped(unix.SIGSTOP, 0): true, stopped(unix.SIGCONT, 0): true,
		evStop(unix.SIGSTOP): true, evStop(unix.SIGTRAP): true,
	}
	for i := range s.rounds(300) {
		a := s.fork(s.init)
		killer := s.thread(a)
		b := s.fork(s.init)
		threads := []*Task{s.thread(b), s.thread(b)}
		seize := i%2 == 0
		for _, th := range threads {
			if seize {
				s.ptrace(a, unix.PTRACE_SEIZE, th, 0)
				continue
			}
			s.ptrace(a, unix.PTRACE_ATTACH, th, 0)
			if r := s.waitOne(a, th.Gettid(), unix.WALL); r.Status != stopped(unix.SIGSTOP, 0) {
				t.Fatalf("iteration %d: ATTACH reported %#x", i, uint32(r.Status))
			}
			s.ptrace(a, unix.PTRACE_CONT, th, 0)
		}
		tracerDies := i%3 != 2
		var detached int
		tracerRng := s.subRand()
		fs := []func(){
			func() { // job control from init
				for range 3 {
					expectOK(t, s.init.Kill(b.Getpid(), int(unix.SIGSTOP)))
					runtime.Gosched()
					expectOK(t, s.init.Kill(b.Getpid(), int(unix.SIGCONT)))
				}
			},
			func() { // the tracer resumes or detaches what it is told of
				for range 40 {
					r, err := a.Wait4(context.Background(), -1, unix.WALL|unix.WNOHANG)
					if errors.Is(err, unix.ECHILD) && detached == len(threads) {
						return // it detached them all
					}
					if err != nil {
						if !isOneOf(err, unix.ESRCH, unix.EINTR) || !a.Exited() {
							t.Errorf("iteration %d: tracer's wait4: %v", i, err)
						}
						return
					}
					if r.Pid == 0 {
						runtime.Gosched()
						continue
					}
					if !allowed[r.Status] || r.Code != CLDTrapped {
						t.Errorf("iteration %d: tracer told of %d: status %#x code %d", i, r.Pid, uint32(r.Status), r.Code)
						return
					}
					req := unix.PTRACE_CONT
					if tracerRng.IntN(4) == 0 {
						req = unix.PTRACE_DETACH
					}
					err = a.Ptrace(req, r.Pid, 0, 0)
					switch {
					case err == nil && req == unix.PTRACE_DETACH:
						detached++
					case err == nil:
					case !isOneOf(err, unix.ESRCH, unix.EINTR) || !a.Exited():
						t.Errorf("iteration %d: ptrace(%#x, %d) after its stop was reported: %v", i, req, r.Pid, err)
						return
					}
				}
			},
		}
		if tracerDies {
			fs = append(fs, func() {
				if i%2 == 1 {
					expectOK(t, s.init.Kill(a.Getpid(), int(unix.SIGKILL)))
				} else if err := killer.ExitGroup(0); err != nil && !errors.Is(err, unix.ESRCH) {
					t.Errorf("iteration %d: exit_group of the tracer: %v", i, err)
				}
			})
		}
		s.concurrently(fs...)
		if t.Failed() {
			t.FailNow()
		}
		if !tracerDies {
			s.kill(s.init, a, unix.SIGKILL)
		}
		s.check()
		s.kill(s.init, b, unix.SIGCONT)
		s.k.Quiesce()
		for _, th := range append([]*Task{b}, threads...) {
			if th.Exited() || th.Stopped() {
				t.Fatalf("iteration %d: after the tracer's death and SIGCONT, tid %d: exited %v stopped %v",
					i, th.Gettid(), th.Exited(), th.Stopped())
			}
		}
		s.count("seize %v, %d detached", seize, detached)
		s.kill(s.init, b, unix.SIGKILL)
		got := s.reapAll(s.init)
		if st, ok := got[b.Getpid()]; !ok || st != killed(unix.SIGKILL) || len(got) != 2 {
			t.Fatalf("iteration %d: init reaped %v, want the tracer and the process killed by SIGKILL", i, got)
		}
	}
	s.end()
}

// TestStressPtraceThreadInterruptStorm has one tracer thread per seized
// thread of a process run INTERRUPT, wait and CONT over and over, while
// signals to the threads and job control of the process race them. Every
// INTERRUPT is followed by a report (D6: it is never lost, whether the
// thread runs, stops for a signal or for its group), every report is a
// trap of that thread, and CONT of it succeeds. In the end SIGKILL makes
// each thread a zombie that its tracer reaps once (D8, C11).
func TestStressPtraceThreadInterruptStorm(t *testing.T) {
	s := newStress(t, 23, Config{})
	s.checkEvery = 1
	const nThreads = 3
	evStop := func(sig unix.Signal) unix.WaitStatus { return stopped(sig, ptraceEventStop) }
	allowed := map[unix.WaitStatus]bool{
		evStop(unix.SIGTRAP): true, evStop(unix.SIGSTOP): true,
		stopped(unix.SIGUSR1, 0): true, stopped(unix.SIGSTOP, 0): true, stopped(unix.SIGCONT, 0): true,
		// A process-directed signal goes to a traced thread when the
		// leader does not want it (stopped: wants_signal).
		stopped(unix.SIGUSR2, 0): true,
	}
	for i := range s.rounds(150) {
		a := s.fork(s.init)
		b := s.fork(s.init)
		_, err := b.Sigaction(int(unix.SIGUSR2), SigAction{Handler: SigHandler})
		mustOK(t, err)
		tracers := []*Task{a}
		threads := make([]*Task, nThreads)
		for j := range threads {
			threads[j] = s.thread(b)
			if j > 0 {
				tracers = append(tracers, s.thread(a))
			}
			mustOK(t, tracers[j].Ptrace(unix.PTRACE_SEIZE, threads[j].Gettid(), 0, 0))
		}
		var fs []func()
		for j, th := range threads {
			tr, tid := tracers[j], th.Gettid()
			fs = append(fs, func() {
				ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
				defer cancel()
				for n := range 8 {
					if err := tr.Ptrace(unix.PTRACE_INTERRUPT, tid, 0, 0); err != nil {
						t.Errorf("iteration %d: INTERRUPT %d of %d: %v", i, n, tid, err)
						return
					}
					r, err := tr.Wait4(ctx, tid, unix.WALL)
					if err != nil || r.Pid != tid || !allowed[r.Status] || r.Code != CLDTrapped {
						t.Errorf("iteration %d: wait4(%d) after INTERRUPT %d = {pid %d status %#x code %d}, %v",
							i, tid, n, r.Pid, uint32(r.Status), r.Code, err)
						return
					}
					s.count("report of status %#x", uint32(r.Status))
					if err := tr.Ptrace(unix.PTRACE_CONT, tid, 0, 0); err != nil {
						t.Errorf("iteration %d: CONT of %d after its report: %v", i, tid, err)
						return
					}
				}
			})
		}
		for range 2 {
			r := s.subRand()
			fs = append(fs, func() {
				for range 6 {
					th := threads[r.IntN(nThreads)]
					switch r.IntN(4) {
					case 0:
						expectOK(t, s.init.Tgkill(b.Getpid(), th.Gettid(), int(unix.SIGUSR1)))
					case 1:
						expectOK(t, s.init.Kill(b.Getpid(), int(unix.SIGSTOP)))
					case 2:
						expectOK(t, s.init.Kill(b.Getpid(), int(unix.SIGCONT)))
					default:
						expectOK(t, s.init.Kill(b.Getpid(), int(unix.SIGUSR2)))
					}
				}
			})
		}
		s.concurrently(fs...)
		if t.Failed() {
			t.FailNow()
		}
		s.check()
		s.kill(s.init, b, unix.SIGKILL)
		s.k.Quiesce()
		reaped := map[int]bool{}
		for range threads {
			r, err := a.Wait4(context.Background(), -1, unix.WALL|unix.WNOHANG)
			if err != nil || r.Status != killed(unix.SIGKILL) || r.Code != CLDKilled || reaped[r.Pid] {
				t.Fatalf("iteration %d: tracer's wait4 after SIGKILL = {pid %d status %#x code %d}, %v; want each thread killed once",
					i, r.Pid, uint32(r.Status), r.Code, err)
			}
			reaped[r.Pid] = true
		}
		if r, err := a.Wait4(context.Background(), -1, unix.WALL|unix.WNOHANG); !errors.Is(err, unix.ECHILD) {
			t.Fatalf("iteration %d: tracer's wait4 after reaping its tracees = %+v, %v; want ECHILD", i, r, err)
		}
		if r := s.waitOne(s.init, b.Getpid(), 0); r.Status != killed(unix.SIGKILL) {
			t.Fatalf("iteration %d: init reaped the process with %#x, want SIGKILL", i, uint32(r.Status))
		}
		s.exitGroup(a, 0)
		if r := s.waitOne(s.init, a.Getpid(), 0); r.Status != 0 {
			t.Fatalf("iteration %d: init reaped the tracer with %#x, want 0", i, uint32(r.Status))
		}
	}
	s.end()
}
