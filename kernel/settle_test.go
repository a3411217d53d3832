package kernel

import (
	"context"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// awaitOrFail runs Await with a stop that closes after callTimeout, so that
// a missed event fails the test instead of hanging it.
func awaitOrFail(t *testing.T, k *Kernel, what string, cond func() bool) {
	t.Helper()
	stop := make(chan struct{})
	timer := time.AfterFunc(callTimeout, func() { close(stop) })
	defer timer.Stop()
	if !k.Await(stop, cond) {
		t.Fatalf("Await(%s) was never woken", what)
	}
}

// TestAwaitWakesWhenTaskSleeps checks that a task beginning to sleep in
// wait4 wakes a watcher, many times over and with more goroutines than
// processors, so that an event racing the watcher's test is not lost.
func TestAwaitWakesWhenTaskSleeps(t *testing.T) {
	atEachGOMAXPROCS(t, func(t *testing.T) {
		e := newEnv(t, Config{})
		for range 200 {
			parent := e.fork(e.init)
			child := e.fork(parent)
			res := make(chan error, 1)
			go func() {
				_, err := parent.Wait4(context.Background(), child.Getpid(), 0)
				res <- err
			}()
			awaitOrFail(t, e.k, "parent sleeps in wait4", func() bool { return e.k.Quiescent() && parent.Sleeping() })
			e.exit(child, 0)
			if err := <-res; err != nil {
				t.Fatalf("wait4: %v", err)
			}
			e.exitReaped(e.init, 0, parent)
		}
		e.settle()
	})
}

// TestAwaitWakesWhenAsyncWorkEnds checks that Quiesce returns once the
// exits of killed tasks, which run on goroutines of their own, are done:
// every victim is then a zombie its parent can reap without waiting.
func TestAwaitWakesWhenAsyncWorkEnds(t *testing.T) {
	e := newEnv(t, Config{})
	for range 100 {
		var pids []int
		for range 8 {
			c := e.fork(e.init)
			e.thread(c)
			pids = append(pids, c.Getpid())
		}
		for _, pid := range pids {
			if err := e.init.Kill(pid, int(unix.SIGKILL)); err != nil {
				t.Fatalf("kill %d: %v", pid, err)
			}
		}
		e.k.Quiesce()
		for _, pid := range pids {
			e.reap(e.init, pid, unix.WNOHANG, pid, killed(unix.SIGKILL))
		}
	}
	e.settle()
}

// TestAwaitStop checks that a closed stop ends Await, before cond is
// tested, and that a condition already true returns at once.
func TestAwaitStop(t *testing.T) {
	k := newEnv(t, Config{}).k
	stop := make(chan struct{})
	close(stop)
	tested := false
	if k.Await(stop, func() bool { tested = true; return true }) || tested {
		t.Fatal("Await with a closed stop tested its condition or reported it true")
	}
	if !k.Await(nil, func() bool { return true }) {
		t.Fatal("Await of a true condition reported false")
	}
}
