package refmodel

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

// The Ptrace action keeps no ptrace link across steps: the other actions
// (wait, kill, exit) do not model what a tracer changes about them (C5,
// C10, C11), so every link an action makes it also ends, by DETACH or by
// the tracer's exit (exit_ptrace). Requests outside TRACEME, ATTACH and
// DETACH, and the cases Model.Ptrace answers ErrNotModelled, are not sent.
// The kernel package exposes no task's tracer, so the tree comparison
// checks the model's tracer links against the links the action left open
// (none), and the kernel's side through the calls' errnos.

func (mt *machine) ptrace(tid, request, pid int, data uint64) (error, bool) {
	var rerr error
	mt.apply(func(m *Model) { rerr = m.Ptrace(tid, request, pid, 0, data) })
	if errors.Is(rerr, ErrNotModelled) {
		return nil, false
	}
	kerr := mt.kt[tid].Ptrace(request, pid, 0, data)
	mt.checkErr(fmt.Sprintf("ptrace(%d, %d, %d, %d)", tid, request, pid, data), kerr, rerr)
	mt.k.Quiesce()
	return rerr, true
}

// Ptrace attaches to a process or asks to be traced, probes the link with
// requests that must fail, and ends it again.
func (mt *machine) Ptrace(t *rapid.T) {
	tid, kt := mt.actor(t)
	if rapid.Bool().Draw(t, "traceme") {
		mt.traceme(t, tid)
		return
	}
	pid := mt.somePid(t, kt)
	err, ok := mt.ptrace(tid, unix.PTRACE_ATTACH, pid, 0)
	if !ok || err != nil {
		return
	}
	// The tracee sits in its SIGSTOP stop: it cannot call; the tracer
	// and others probe the link.
	tracee := kt.Namespace().Lookup(pid).PIDIn(mt.k.RootNamespace())
	mt.ptrace(tid, unix.PTRACE_ATTACH, pid, 0) // EPERM: already traced
	// Another thread, of any process but the tracee's: ATTACH and DETACH
	// fail (EPERM, ESRCH), or for a thread of the tracer's own process
	// ATTACH fails and DETACH is refused too (the tracer is a thread).
	other, okt := mt.actor(t)
	if other != tid && mt.tgidOf(other) != mt.tgidOf(tracee) {
		if nr := mt.kt[tracee].PIDIn(okt.Namespace()); nr != 0 {
			mt.ptrace(other, unix.PTRACE_ATTACH, nr, 0)
			mt.ptrace(other, unix.PTRACE_DETACH, nr, 0)
		}
	}
	mt.ptrace(tid, unix.PTRACE_DETACH, pid, nSig+1) // EIO
	if rapid.Bool().Draw(t, "tracerexits") && mt.canExit(tid) {
		var rerr error
		kerr := kt.Exit(0)
		mt.apply(func(m *Model) { rerr = m.Exit(tid, 0) })
		mt.checkErr("tracer exit", kerr, rerr)
		return
	}
	if err, _ := mt.ptrace(tid, unix.PTRACE_DETACH, pid, 0); err != nil {
		t.Fatalf("detach of a stopped tracee: %v", err)
	}
}

// traceme has the actor ask to be traced; a link made ends with the
// tracer's exit, since the tracee is not stopped and cannot be detached.
func (mt *machine) traceme(t *rapid.T, tid int) {
	in, _ := mt.m.Info(tid)
	parent := in.ParentTid
	if parent == 0 || !mt.canExit(parent) {
		return // a link could not be ended in this step
	}
	if pin, _ := mt.m.Info(parent); pin.Stopped {
		return
	}
	if err, _ := mt.ptrace(tid, unix.PTRACE_TRACEME, 0, 0); err != nil || mt.m.Tracer(tid) == 0 {
		return
	}
	mt.ptrace(tid, unix.PTRACE_TRACEME, 0, 0) // EPERM: already traced
	pk := mt.kt[parent]
	nr := mt.kt[tid].PIDIn(pk.Namespace())
	mt.ptrace(parent, unix.PTRACE_ATTACH, nr, 0) // EPERM: already traced
	mt.ptrace(parent, unix.PTRACE_DETACH, nr, 0) // ESRCH: not stopped
	var rerr error
	kerr := pk.Exit(0)
	mt.apply(func(m *Model) { rerr = m.Exit(parent, 0) })
	mt.checkErr("tracer exit", kerr, rerr)
}

// canExit reports whether tid may end by exit(2) now: it runs and is not
// the root init's last thread.
func (mt *machine) canExit(tid int) bool {
	in, ok := mt.m.Info(tid)
	if !ok || !in.Running {
		return false
	}
	if in.Tgid != 1 {
		return true
	}
	live := 0
	for _, o := range mt.m.Running() {
		if mt.tgidOf(o) == 1 {
			live++
		}
	}
	return live > 1
}

func (mt *machine) tgidOf(tid int) int {
	in, _ := mt.m.Info(tid)
	return in.Tgid
}

// checkNoTracer requires that no link outlives the step that made it.
func (mt *machine) checkNoTracer(t *rapid.T) {
	for _, tid := range mt.m.Tasks() {
		if tr := mt.m.Tracer(tid); tr != 0 {
			t.Fatalf("task %d still traced by %d", tid, tr)
		}
	}
}
