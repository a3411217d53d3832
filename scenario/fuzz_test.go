package scenario

import (
	"errors"
	"io"
	"testing"

	"golang.org/x/sys/unix"
)

func FuzzParse(f *testing.F) {
	f.Add(specExample)
	f.Add("S = init.semget(IPC_PRIVATE, 2, IPC_CREAT|0600)\nA = init.fork()\n" +
		"A.semop(S, {0, -1, SEM_UNDO}, {1, 1, IPC_NOWAIT}) &\ninit.semctl(S, 0, SETALL, [1, 2])\njoin A == 0\n")
	f.Add("N = init.clone(CLONE_NEWPID|SIGCHLD, SIGCHLD)\nN.kill(-1, SIGKILL) # all\ninit.waitid(P_PID, N, WEXITED|__WALL)\n")
	f.Add("init.setrlimit(RLIMIT_NPROC, 0x10, RLIM_INFINITY) == 0\ninit.exit(-0600)\n")
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse("f.scn", []byte(src))
		if err != nil {
			var perr *Error
			if !errors.As(err, &perr) || perr.Line < 1 || perr.Col < 1 || perr.File != "f.scn" {
				t.Fatalf("bad error %#v", err)
			}
			return
		}
		// Whatever parses must run without panicking on a backend that fails every call.
		Run(s, failingBackend{}, io.Discard, io.Discard)
	})
}

// failingBackend answers every call with ENOSYS.
type failingBackend struct{}

func (failingBackend) PidIn(viewer, target TaskRef) int { return int(target) + 1 }
func (failingBackend) Do(TaskRef, Call) Result          { return errno(unix.ENOSYS) }
func (failingBackend) Start(TaskRef, Call) error        { return nil }
func (failingBackend) Join(TaskRef) Result              { return errno(unix.ENOSYS) }
func (failingBackend) Made(TaskRef) (TaskRef, bool)     { return 0, false }
func (failingBackend) Close() error                     { return nil }
