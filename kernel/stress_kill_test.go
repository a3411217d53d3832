package kernel

import (
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
