package refmodel

import (
	"fmt"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"tasklist/kernel"
)

// maskSignals are what the machine's masks and waits are drawn from: a
// few of each kind of default action, a real-time signal, and SIGKILL and
// SIGSTOP, which no mask holds.
var maskSignals = []int{int(unix.SIGUSR1), int(unix.SIGTERM), int(unix.SIGCHLD), int(unix.SIGTSTP),
	int(unix.SIGCONT), int(unix.SIGHUP), 34, int(unix.SIGKILL), int(unix.SIGSTOP)}

func drawSigset(t *rapid.T, label string) uint64 {
	var set uint64
	for _, sig := range rapid.SliceOfN(rapid.SampledFrom(maskSignals), 0, 3).Draw(t, label) {
		set |= 1 << (sig - 1)
	}
	return set
}

// Sigprocmask changes a thread's mask and compares the old one.
func (mt *machine) Sigprocmask(t *rapid.T) {
	tid, kt := mt.actor(t)
	how := rapid.SampledFrom([]int{unix.SIG_BLOCK, unix.SIG_BLOCK, unix.SIG_UNBLOCK, unix.SIG_SETMASK, 7}).Draw(t, "how")
	set := drawSigset(t, "set")
	kset := kernel.SigSet(set)
	kold, kerr := kt.Sigprocmask(how, &kset)
	var rold uint64
	var rerr error
	mt.apply(func(m *Model) { rold, rerr = m.Sigprocmask(tid, how, set) })
	what := fmt.Sprintf("sigprocmask(%d, %d, %#x)", tid, how, set)
	mt.checkErr(what, kerr, rerr)
	if kerr == nil && uint64(kold) != rold {
		t.Fatalf("%s: old mask kernel %#x, model %#x", what, uint64(kold), rold)
	}
}

// Sigpending compares what a thread has pending and blocks.
func (mt *machine) Sigpending(t *rapid.T) {
	tid, kt := mt.actor(t)
	kset, kerr := kt.Sigpending()
	var rset uint64
	var rerr error
	mt.apply(func(m *Model) { rset, rerr = m.Sigpending(tid) })
	what := fmt.Sprintf("sigpending(%d)", tid)
	mt.checkErr(what, kerr, rerr)
	if kerr == nil && uint64(kset) != rset {
		t.Fatalf("%s: kernel %#x, model %#x", what, uint64(kset), rset)
	}
}

// Sigtimedwait takes a pending signal of a set without sleeping.
func (mt *machine) Sigtimedwait(t *rapid.T) {
	tid, kt := mt.actor(t)
	set := drawSigset(t, "set")
	ksig, kerr := kt.Sigtimedwait(nil, kernel.SigSet(set), 0)
	var rsig int
	var rerr error
	mt.apply(func(m *Model) { rsig, rerr = m.Sigtimedwait(tid, set) })
	what := fmt.Sprintf("sigtimedwait(%d, %#x, 0)", tid, set)
	mt.checkErr(what, kerr, rerr)
	if kerr == nil && ksig != rsig {
		t.Fatalf("%s: kernel took %d, model %d", what, ksig, rsig)
	}
}

// Tkill sends a signal to one thread of any process.
func (mt *machine) Tkill(t *rapid.T) {
	tid, kt := mt.actor(t)
	ttid := mt.somePid(t, kt)
	sig := rapid.SampledFrom(append([]int{0, 65}, maskSignals...)).Draw(t, "sig")
	if sig > 0 && sig <= nSig && !mt.signalAllowed(sig) {
		return
	}
	kerr := kt.Tkill(ttid, sig)
	var rerr error
	mt.apply(func(m *Model) { rerr = m.Tkill(tid, ttid, sig) })
	mt.checkErr(fmt.Sprintf("tkill(%d, %d, %d)", tid, ttid, sig), kerr, rerr)
}
