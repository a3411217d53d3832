package kernel

import (
	"fmt"
	"math/rand/v2"
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
	rng := rand.New(rand.NewPCG(seedFor(t), 2))
	k, init := newKernel(t)
	outcomes := map[string]int{}
	for i := range iterations(200) {
		leader := fork(t, init)
		mustOK(t, leader.Setpgid(0, 0))
		members := []*Task{leader, fork(t, leader), fork(t, leader)}
		sig := int(unix.SIGKILL)
		if i%2 == 1 {
			sig = int(unix.SIGTERM)
		}
		var mu sync.Mutex
		var children []*Task
		fs := []func(){func() { mustOK(t, init.Kill(-leader.Getpid(), sig)) }}
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
						mu.Lock()
						outcomes["fork refused"]++
						mu.Unlock()
						return
					default:
						t.Errorf("fork during kill(-pgrp): %v", err)
						return
					}
				}
			})
		}
		concurrently(t, rng, fs...)
		k.Quiesce()
		for _, c := range append(members, children...) {
			if !c.Exited() {
				t.Fatalf("iteration %d: task %d of the group survived kill(-pgrp, %d)", i, c.Gettid(), sig)
			}
		}
		outcomes[fmt.Sprintf("%d children killed", len(children))]++
		reapAll(t, init)
		expectOnlyInit(t, k, i)
		if i%16 == 0 {
			checkInvariants(t, k, fmt.Sprintf("iteration %d", i))
		}
	}
	t.Logf("outcomes: %v", outcomes)
	finish(t, k)
}

// TestStressStopPgrpVsFork races kill(-pgrp, SIGSTOP) against forks by the
// group's members: a member with a stop pending forks only once continued
// (Linux restarts the fork), so once the stop has taken effect every
// process of the group, children included, is stopped.
func TestStressStopPgrpVsFork(t *testing.T) {
	rng := rand.New(rand.NewPCG(seedFor(t), 3))
	k, init := newKernel(t)
	for i := range iterations(100) {
		leader := fork(t, init)
		mustOK(t, leader.Setpgid(0, 0))
		members := []*Task{leader, fork(t, leader)}
		var mu sync.Mutex
		var children []*Task
		var forks sync.WaitGroup
		stopped := make(chan struct{})
		fs := []func(){func() {
			mustOK(t, init.Kill(-leader.Getpid(), int(unix.SIGSTOP)))
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
		concurrently(t, rng, fs...)
		<-stopped
		k.Quiesce()
		mu.Lock()
		for _, c := range append(members, children...) {
			if !c.Stopped() {
				t.Fatalf("iteration %d: task %d of the group was not stopped", i, c.Gettid())
			}
		}
		mu.Unlock()
		mustOK(t, init.Kill(-leader.Getpid(), int(unix.SIGKILL)))
		forks.Wait()
		mustOK(t, init.Kill(-leader.Getpid(), int(unix.SIGKILL)))
		k.Quiesce()
		reapAll(t, init)
		expectOnlyInit(t, k, i)
		if i%16 == 0 {
			checkInvariants(t, k, fmt.Sprintf("iteration %d", i))
		}
	}
	finish(t, k)
}
