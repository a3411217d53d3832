package kernel

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"tasklist/kernel/pid"
)

// TestSharedPIDSpace: kernels given one pid.Space draw their root pids in
// one cyclic order and never the same number, while each finds, counts
// and checks only its own tasks.
func TestSharedPIDSpace(t *testing.T) {
	space, err := pid.NewSpace(pid.DefaultMax)
	if err != nil {
		t.Fatal(err)
	}
	a := newEnv(t, Config{PIDSpace: space})
	b := newEnv(t, Config{PIDSpace: space})
	if a.init.Getpid() != 1 || b.init.Getpid() != 2 {
		t.Fatalf("inits are pids %d and %d, want 1 and 2", a.init.Getpid(), b.init.Getpid())
	}
	ca := a.fork(a.init)
	cb := b.fork(b.init)
	ca2 := a.fork(a.init)
	if ca.Getpid() != 3 || cb.Getpid() != 4 || ca2.Getpid() != 5 {
		t.Fatalf("children are %d, %d, %d; want 3, 4, 5", ca.Getpid(), cb.Getpid(), ca2.Getpid())
	}
	if a.k.RootNamespace().Lookup(4) != nil || b.k.RootNamespace().Lookup(3) != nil {
		t.Fatal("a kernel finds another's task")
	}
	if b.k.RootNamespace().Lookup(4) != cb {
		t.Fatal("a kernel does not find its own task")
	}
	if a.k.RootNamespace().Allocated() != 3 || b.k.RootNamespace().Allocated() != 2 {
		t.Fatalf("allocated %d and %d, want 3 and 2", a.k.RootNamespace().Allocated(), b.k.RootNamespace().Allocated())
	}
	a.exit(ca, 0)
	a.reap(a.init, ca.Getpid(), 0, 3, exited(0))
	if c := b.fork(b.init); c.Getpid() != 6 {
		t.Fatalf("next pid %d after another kernel freed 3, want 6", c.Getpid())
	}
	a.check()
	b.check()

	if _, err := New(Config{PIDSpace: space, PIDMax: 4096}); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("New with a pid_max other than the space's: %v, want EINVAL", err)
	}
}
