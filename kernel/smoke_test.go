package kernel

import (
	"context"
	"testing"

	"golang.org/x/sys/unix"
)

func TestSmoke(t *testing.T) {
	k, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	init := k.Init()
	a, err := init.Fork()
	if err != nil {
		t.Fatal(err)
	}
	if a.Getpid() != 2 || a.Getppid() != 1 {
		t.Fatalf("pid %d ppid %d", a.Getpid(), a.Getppid())
	}
	th, err := a.Clone(CloneArgs{Flags: unix.CLONE_THREAD | unix.CLONE_SIGHAND | unix.CLONE_VM})
	if err != nil {
		t.Fatal(err)
	}
	if th.Getpid() != 2 || th.Gettid() != 3 {
		t.Fatal("thread ids")
	}
	a.Exit(0)
	r, err := init.Wait4(context.Background(), -1, unix.WNOHANG)
	if err != nil || r.Pid != 0 {
		t.Fatalf("%v %v", r, err)
	}
	th.Exit(5)
	r, err = init.Wait4(context.Background(), -1, 0)
	if err != nil || r.Pid != 2 || r.Status != 5<<8 {
		t.Fatalf("%+v %v", r, err)
	}
	_, err = init.Wait4(context.Background(), -1, 0)
	if err != unix.ECHILD {
		t.Fatal(err)
	}
	if k.RootNamespace().Allocated() != 1 {
		t.Fatal("leak", k.RootNamespace().Allocated())
	}
}
