package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

// de_thread ends with exit_signal = SIGCHLD for the thread that execs,
// the leader included: a child cloned with SIGUSR1 that execs itself
// leaves the __WCLONE class, and its exit sends its parent SIGCHLD, not
// SIGUSR1, whose default action would kill the parent (B7, C5; corpus
// x15).
func TestDeThreadResetsLeaderExitSignal_B7(t *testing.T) {
	e := newLCEnv(t, Config{})
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
	e.exit(w, 0)
	e.reap(e.init, -1, 0, w.Getpid(), exited(0))
	e.settle()
}
