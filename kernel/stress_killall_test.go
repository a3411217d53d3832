package kernel

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// killAllPerForker is how many children each forker of the kill(-1)
// stress tests tries to fork.
const killAllPerForker = 4

// killAllSetup makes a kernel for the kill(-1) stress tests with
// more forkers than cores. Its root namespace's pid_max leaves just room
// for every forker and child above the 300 pids below which numbers are
// not reused, so pids wrap around at every round: a child's pid can be
// made lower than its parent's, and kill(-1)'s walk, in increasing pid
// order, then passes the child's pid before it reaches the parent.
func killAllSetup(t *testing.T) (k *Kernel, init *Task, nForkers, pidMax int) {
	k, init = newKernel(t)
	nForkers = 2*runtime.GOMAXPROCS(0) + 2
	pidMax = 300 + nForkers*(killAllPerForker+1) + 32
	mustOK(t, k.RootNamespace().SetPIDMax(pidMax))
	return k, init, nForkers, pidMax
}

// killAllRace sets up one round of kill(-1) against forks: nForkers
// processes, children of init, that take the top pids of the range, so
// that the children they fork get wrapped-around pids below theirs. It
// returns the forkers.
func killAllRace(t *testing.T, init *Task, nForkers, pidMax int) []*Task {
	t.Helper()
	// Move the pid cursor until the forkers land on the last pids.
	for {
		p := fork(t, init)
		pid := p.Getpid()
		mustOK(t, p.Exit(0))
		waitChild(t, init, pid, 0)
		if pid >= pidMax-1-nForkers {
			break
		}
	}
	forkers := make([]*Task, nForkers)
	for i := range forkers {
		forkers[i] = fork(t, init)
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
	rng := rand.New(rand.NewPCG(seedFor(t), 7))
	k, init, nForkers, pidMax := killAllSetup(t)
	outcomes := map[string]int{}
	start := time.Now()
	for i := 0; i < iterations(400) && (i < 8 || time.Since(start) < *stressDuration); i++ {
		forkers := killAllRace(t, init, nForkers, pidMax)
		var mu sync.Mutex
		children := map[*Task][]*Task{}
		fs := []func(){func() { mustOK(t, init.Kill(-1, int(unix.SIGKILL))) }}
		for _, f := range forkers {
			fs = append(fs, func() {
				cs := forkDuringKillAll(t, f, killAllPerForker)
				mu.Lock()
				children[f] = cs
				mu.Unlock()
			})
		}
		concurrently(t, rng, fs...)
		waitOrDump(t, "Quiesce", k.Quiesce)
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
		outcomes[fmt.Sprintf("%d children", n)]++
		reapAll(t, init)
		expectOnlyInit(t, k, i)
		if i%16 == 0 {
			checkInvariants(t, k, fmt.Sprintf("iteration %d", i))
		}
	}
	t.Logf("outcomes: %v", outcomes)
	finish(t, k)
}

// TestStressStopAllVsFork is TestStressKillAllVsFork with SIGSTOP: once
// kill(-1, SIGSTOP) has returned and the stops have taken effect, every
// forker and every child a forker's Fork returned by then is stopped. A
// forker with a stop pending forks only once continued, so a fork still
// in progress completes (or fails) after the SIGKILL that ends the round.
func TestStressStopAllVsFork(t *testing.T) {
	rng := rand.New(rand.NewPCG(seedFor(t), 8))
	k, init, nForkers, pidMax := killAllSetup(t)
	start := time.Now()
	for i := 0; i < iterations(200) && (i < 8 || time.Since(start) < *stressDuration); i++ {
		forkers := killAllRace(t, init, nForkers, pidMax)
		var mu sync.Mutex
		var children []*Task
		var forks sync.WaitGroup
		stopped := make(chan struct{})
		fs := []func(){func() {
			mustOK(t, init.Kill(-1, int(unix.SIGSTOP)))
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
		concurrently(t, rng, fs...)
		<-stopped
		waitOrDump(t, "Quiesce", k.Quiesce)
		mu.Lock()
		for _, c := range append(forkers, children...) {
			if !c.Stopped() {
				mu.Unlock()
				t.Fatalf("iteration %d: task %d was not stopped by kill(-1, SIGSTOP)", i, c.Getpid())
			}
		}
		mu.Unlock()
		mustOK(t, init.Kill(-1, int(unix.SIGKILL)))
		waitOrDump(t, "forks", forks.Wait)
		mustOK(t, init.Kill(-1, int(unix.SIGKILL)))
		waitOrDump(t, "Quiesce", k.Quiesce)
		reapAll(t, init)
		expectOnlyInit(t, k, i)
		if i%16 == 0 {
			checkInvariants(t, k, fmt.Sprintf("iteration %d", i))
		}
	}
	finish(t, k)
}
