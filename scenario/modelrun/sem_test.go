package modelrun

import (
	"strings"
	"testing"
)

// A join on a semtimedop that sleeps waits for its timeout (EAGAIN), as the
// kernel runner does; only an untimed sleep is a stall (EDEADLK).
func TestJoinTimedSemop(t *testing.T) {
	out, errOut, status := runText(t, `S = init.semget(IPC_PRIVATE, 1, 0600)
A = init.fork()
A.semtimedop(S, 30, {0, -1, 0}) &
join A == EAGAIN
init.semctl(S, 0, GETNCNT) == 0
A.semop(S, {0, -1, 0}) &
join A == EDEADLK
`)
	if status != 0 || errOut != "" {
		t.Fatalf("status %d, stderr %q\n%s", status, errOut, out)
	}
}

// Integer arguments reach the semaphore calls as C ints: the low 32 bits.
func TestSemArgumentsAreCInts(t *testing.T) {
	out, errOut, status := runText(t, `S = init.semget(IPC_PRIVATE, 0x100000002, 0600)
init.semctl(S, 0, SETVAL, 0x100000001) == 0
init.semctl(0x100000000, 0x100000000, 0x100000000|GETVAL) == 1
init.semop(0x100000000, {1, 1, 0}) == 0
init.semctl(S, 0, GETALL) == [1 1]
`)
	if status != 0 || errOut != "" {
		t.Fatalf("status %d, stderr %q\n%s", status, errOut, out)
	}
	if !strings.Contains(out, "1: S = init.semget(IPC_PRIVATE, 0x100000002, 0600) = S\n") {
		t.Errorf("unexpected output:\n%s", out)
	}
}
