package kernel

import (
	"testing"

	"golang.org/x/sys/unix"

	"tasklist/plan"
)

// TestIPCNamespacesFollowThePlan checks that every IPC namespace, init's
// and those that clone and unshare make with CLONE_NEWIPC, locks its
// semaphore sets as the kernel's plan says.
func TestIPCNamespacesFollowThePlan(t *testing.T) {
	for _, spec := range []string{"scalable", "linux-2.6.35", "gvisor", "linux-2.6.35,sem-lockless-perm"} {
		t.Run(spec, func(t *testing.T) {
			p := plan.MustParse(spec, false)
			e := newEnv(t, Config{Plan: p})
			cloned := e.clone(e.init, unix.CLONE_NEWIPC, unix.SIGCHLD)
			unshared := e.fork(e.init)
			if err := unshared.Unshare(unix.CLONE_NEWIPC); err != nil {
				t.Fatalf("unshare(CLONE_NEWIPC): %v", err)
			}
			want := p.SemLocking()
			for name, task := range map[string]*Task{"init": e.init, "cloned": cloned, "unshared": unshared} {
				if got := task.IPCNamespace().Locking(); got != want {
					t.Errorf("%s's IPC namespace locks as %+v, want %+v", name, got, want)
				}
			}
			for _, c := range []*Task{cloned, unshared} {
				e.exitReaped(e.init, 0, c)
			}
			e.settle()
		})
	}
}
