package kernel_test

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"

	"tasklist/kernel"
)

// A process forks a child that starts a thread; the child's leader exits
// first and stays a silent zombie until its last thread is gone, whose
// exit code becomes the process's.
func Example() {
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		panic(err)
	}
	init := k.Init()
	child, _ := init.Fork()
	thread, _ := child.Clone(kernel.CloneArgs{Flags: unix.CLONE_THREAD | unix.CLONE_SIGHAND | unix.CLONE_VM})
	fmt.Println("child", child.Getpid(), "thread", thread.Gettid(), "of", thread.Getpid())

	child.Exit(0)
	r, _ := init.Wait4(context.Background(), -1, unix.WNOHANG)
	fmt.Println("while a thread lives:", r.Pid)

	thread.Exit(5)
	r, _ = init.Wait4(context.Background(), -1, 0)
	fmt.Println("reaped", r.Pid, "exit status", r.Status.ExitStatus())

	_, err = init.Wait4(context.Background(), -1, 0)
	fmt.Println(err == unix.ECHILD)
	// Output:
	// child 2 thread 3 of 2
	// while a thread lives: 0
	// reaped 2 exit status 5
	// true
}

// A subreaper adopts the orphans of its descendants before the namespace's
// init does.
func ExampleTask_PrctlSetChildSubreaper() {
	k, _ := kernel.New(kernel.Config{})
	a, _ := k.Init().Fork()
	a.PrctlSetChildSubreaper(true)
	b, _ := a.Fork()
	c, _ := b.Fork()
	b.Exit(7)
	fmt.Println("orphan's parent:", c.Getppid())
	r, _ := a.Wait4(context.Background(), -1, 0)
	fmt.Println(r.Pid, "exited", r.Status.ExitStatus())
	// Output:
	// orphan's parent: 2
	// 3 exited 7
}
