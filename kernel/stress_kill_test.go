package kernel

import (
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStressKillPgrpVsFork races kill(-pgrp) with a fatal signal against
// forks by the group's members (G3): a child forked concurrently joins the
// group under the group's lock, so it is either signalled with its parent
// or its fork fails (EINTR: the parent was killed first). No child of the
// group may survive the kill.
func TestStressKillPgrpVsFork(t *testing.T) {
	s := newStress(t, 2, Config{})
	for i := range s.rounds(200) {
		leader := s.fork(s.init)
		mustOK(t, leader.Setpgid(0, 0))
		members := []*Task{leader, s.fork(leader), s.fork(leader)}
		sig := int(unix.SIGKILL)
		if i%2 == 1 {
			sig = int(unix.SIGTERM)
		}
		var mu sync.Mutex
		var children []*Task
		fs := []func(){func() { expectOK(t, s.init.Kill(-leader.Getpid(), sig)) }}
		for _, m := range members {
			fs = append(fs, func() {
				for range 3 {
					c, err := m.Fork()
					switch {
					case err == nil:
						mu.Lock()
						children = append(children, c)
						mu.Unlock()
					case isOneOf(err, unix.EINTR, unix.ESRCH):
						s.count("fork refused")
						return
					default:
						t.Errorf("fork during kill(-pgrp): %v", err)
						return
					}
				}
			})
		}
		s.concurrently(fs...)
		s.k.Quiesce()
		for _, c := range append(members, children...) {
			if !c.Exited() {
				t.Fatalf("iteration %d: task %d of the group survived kill(-pgrp, %d)", i, c.Gettid(), sig)
			}
		}
		s.count("%d children killed", len(children))
		s.reapAll(s.init)
	}
	s.end()
}

// TestStressStopPgrpVsFork races kill(-pgrp, SIGSTOP) against forks by the
// group's members: a member with a stop pending forks only once continued
// (Linux restarts the fork), so once the stop has taken effect every
// process of the group, children included, is stopped.
func TestStressStopPgrpVsFork(t *testing.T) {
	s := newStress(t, 3, Config{})
	for i := range s.rounds(100) {
		leader := s.fork(s.init)
		mustOK(t, leader.Setpgid(0, 0))
		members := []*Task{leader, s.fork(leader)}
		var mu sync.Mutex
		var children []*Task
		var forks sync.WaitGroup
		stopped := make(chan struct{})
		fs := []func(){func() {
			expectOK(t, s.init.Kill(-leader.Getpid(), int(unix.SIGSTOP)))
			close(stopped)
		}}
		for _, m := range members {
			forks.Add(1)
			fs = append(fs, func() {
				// The forks run on: those that block while the group is
				// stopped finish after the SIGCONT below.
				go func() {
					defer forks.Done()
					for range 3 {
						c, err := m.Fork()
						if err != nil {
							if !isOneOf(err, unix.EINTR, unix.ESRCH) { // killed below
								t.Errorf("fork: %v", err)
							}
							return
						}
						mu.Lock()
						children = append(children, c)
						mu.Unlock()
					}
				}()
			})
		}
		s.concurrently(fs...)
		<-stopped
		s.k.Quiesce()
		mu.Lock()
		for _, c := range append(members, children...) {
			if !c.Stopped() {
				t.Fatalf("iteration %d: task %d of the group was not stopped", i, c.Gettid())
			}
		}
		mu.Unlock()
		mustOK(t, s.init.Kill(-leader.Getpid(), int(unix.SIGKILL)))
		forks.Wait()
		mustOK(t, s.init.Kill(-leader.Getpid(), int(unix.SIGKILL)))
		s.k.Quiesce()
		s.reapAll(s.init)
	}
	s.end()
}

// killAllPerForker is how many children each forker of the kill(-1)
// stress tests tries to fork.
const killAllPerForker = 4

// newKillAllStress makes a stress test's kernel for the kill(-1) tests,
// with more forkers than cores, which race for at most -stress.duration.
// Its root namespace's pid_max leaves just room for every forker and child
// above the 300 pids below which numbers are not reused, so pids wrap
// around at every round: a child's pid can be made lower than its
// parent's, and kill(-1)'s walk, in increasing pid order, then passes the
// child's pid before it reaches the parent.
func newKillAllStress(t *testing.T, stream uint64) (s *stress, nForkers, pidMax int) {
	s = newStress(t, stream, Config{})
	s.atMost = *stressDuration
	nForkers = 2*runtime.GOMAXPROCS(0) + 2
	pidMax = 300 + nForkers*(killAllPerForker+1) + 32
	mustOK(t, s.k.RootNamespace().SetPIDMax(pidMax))
	return s, nForkers, pidMax
}

// killAllForkers sets up one round of kill(-1) against forks: nForkers
// processes, children of init, that take the top pids of the range, so
// that the children they fork get wrapped-around pids below theirs. It
// returns the forkers.
func killAllForkers(s *stress, nForkers, pidMax int) []*Task {
	s.t.Helper()
	// Move the pid cursor until the forkers land on the last pids.
	for {
		p := s.fork(s.init)
		s.exitReaped(s.init, 0, p)
		if p.Getpid() >= pidMax-1-nForkers {
			break
		}
	}
	forkers := make([]*Task, nForkers)
	for i := range forkers {
		forkers[i] = s.fork(s.init)
	}
	return forkers
}

// forkDuringKillAll makes f fork up to n children, stopping at the first
// failure, which must be EINTR (f was killed first) or ESRCH (f is gone).
// It returns the children.
func forkDuringKillAll(t *testing.T, f *Task, n int) []*Task {
	var children []*Task
	for range n {
		c, err := f.Fork()
		if err != nil {
			if !isOneOf(err, unix.EINTR, unix.ESRCH) {
				t.Errorf("fork by pid %d during kill(-1): %v", f.Getpid(), err)
			}
			break
		}
		children = append(children, c)
		runtime.Gosched()
	}
	return children
}

// TestStressKillAllVsFork races kill(-1, SIGKILL) by init against forks by
// every other process of the namespace, with more forking goroutines than
// cores. The forkers exist before the kill, so it kills each of them. The
// property checked: every child a forker's Fork returned is dead once the
// kill and the forks are over, that is, a child whose parent kill(-1)
// killed was either killed by the same kill(-1) or never created (its
// fork failed with EINTR). Without the hand-over of kill(-1) to children
// forked during its walk, a child published after the walk passed its
// pid, by a parent the walk reaches later, survives.
func TestStressKillAllVsFork(t *testing.T) {
	s, nForkers, pidMax := newKillAllStress(t, 7)
	for i := range s.rounds(400) {
		forkers := killAllForkers(s, nForkers, pidMax)
		var mu sync.Mutex
		children := map[*Task][]*Task{}
		fs := []func(){func() { expectOK(t, s.init.Kill(-1, int(unix.SIGKILL))) }}
		for _, f := range forkers {
			fs = append(fs, func() {
				cs := forkDuringKillAll(t, f, killAllPerForker)
				mu.Lock()
				children[f] = cs
				mu.Unlock()
			})
		}
		s.concurrently(fs...)
		waitOrDump(t, "Quiesce", s.k.Quiesce)
		n := 0
		for _, f := range forkers {
			if !f.Exited() {
				t.Fatalf("iteration %d: forker %d survived kill(-1, SIGKILL)", i, f.Getpid())
			}
			for _, c := range children[f] {
				if !c.Exited() {
					t.Fatalf("iteration %d: child %d of forker %d survived the kill(-1, SIGKILL) that killed its parent",
						i, c.Getpid(), f.Getpid())
				}
				n++
			}
		}
		s.count("%d children", n)
		s.reapAll(s.init)
	}
	s.end()
}

// TestStressStopAllVsFork is TestStressKillAllVsFork with SIGSTOP: once
// kill(-1, SIGSTOP) has returned and the stops have taken effect, every
// forker and every child a forker's Fork returned by then is stopped. A
// forker with a stop pending forks only once continued, so a fork still
// in progress completes (or fails) after the SIGKILL that ends the round.
func TestStressStopAllVsFork(t *testing.T) {
	s, nForkers, pidMax := newKillAllStress(t, 8)
	for i := range s.rounds(200) {
		forkers := killAllForkers(s, nForkers, pidMax)
		var mu sync.Mutex
		var children []*Task
		var forks sync.WaitGroup
		stopped := make(chan struct{})
		fs := []func(){func() {
			expectOK(t, s.init.Kill(-1, int(unix.SIGSTOP)))
			close(stopped)
		}}
		for _, f := range forkers {
			forks.Add(1)
			fs = append(fs, func() {
				// Forks that block while f is stopped finish after the
				// SIGKILL below.
				go func() {
					defer forks.Done()
					cs := forkDuringKillAll(t, f, killAllPerForker)
					mu.Lock()
					children = append(children, cs...)
					mu.Unlock()
				}()
			})
		}
		s.concurrently(fs...)
		<-stopped
		waitOrDump(t, "Quiesce", s.k.Quiesce)
		mu.Lock()
		for _, c := range append(forkers, children...) {
			if !c.Stopped() {
				mu.Unlock()
				t.Fatalf("iteration %d: task %d was not stopped by kill(-1, SIGSTOP)", i, c.Getpid())
			}
		}
		mu.Unlock()
		mustOK(t, s.init.Kill(-1, int(unix.SIGKILL)))
		waitOrDump(t, "forks", forks.Wait)
		mustOK(t, s.init.Kill(-1, int(unix.SIGKILL)))
		waitOrDump(t, "Quiesce", s.k.Quiesce)
		s.reapAll(s.init)
	}
	s.end()
}
