package refmodel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"testing"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"tasklist/kernel"
)

// machine drives the kernel package and the model with the same calls.
type machine struct {
	k   *kernel.Kernel
	m   *Model
	cfg Config
	kt  map[int]*kernel.Task         // root tid → kernel task
	kns map[*kernel.PIDNamespace]int // kernel namespace → model namespace id
	t   *rapid.T
}

func newMachine(t *rapid.T) *machine {
	cfg := Config{
		PIDMax:      rapid.SampledFrom([]int{0, 0, 301, 305, 330}).Draw(t, "pidmax"),
		ThreadLimit: rapid.SampledFrom([]int{0, 0, 0, 14}).Draw(t, "threadlimit"),
	}
	k, err := kernel.New(kernel.Config{PIDMax: cfg.PIDMax, ThreadLimit: cfg.ThreadLimit})
	if err != nil {
		t.Fatal(err)
	}
	mt := &machine{k: k, m: New(cfg), cfg: cfg, kt: map[int]*kernel.Task{1: k.Init()},
		kns: map[*kernel.PIDNamespace]int{k.RootNamespace(): 0}, t: t}
	return mt
}

// apply runs f on the model.
func (mt *machine) apply(f func(*Model)) { f(mt.m) }

// actor picks a running task whose process is not stopped: a stopped
// task makes no calls.
func (mt *machine) actor(t *rapid.T) (int, *kernel.Task) {
	var tids []int
	for _, tid := range mt.m.Running() {
		if in, _ := mt.m.Info(tid); !in.Stopped {
			tids = append(tids, tid)
		}
	}
	tid := rapid.SampledFrom(tids).Draw(t, "actor")
	return tid, mt.kt[tid]
}

// somePid picks a number the actor could name: a task's tid or tgid or
// process group as the actor sees it, or an arbitrary number.
func (mt *machine) somePid(t *rapid.T, actor *kernel.Task) int {
	tids := mt.m.Tasks()
	kt := mt.kt[rapid.SampledFrom(tids).Draw(t, "target")]
	switch rapid.IntRange(0, 3).Draw(t, "pidkind") {
	case 0:
		return kt.PIDIn(actor.Namespace())
	case 1:
		return kt.TGIDIn(actor.Namespace())
	case 2:
		if nr := kt.PIDIn(actor.Namespace()); nr != 0 {
			if g, err := actor.Getpgid(nr); err == nil && g != 0 {
				return g
			}
		}
	}
	return rapid.IntRange(1, 400).Draw(t, "nr")
}

func sameErr(kerr, rerr error) bool {
	if errors.Is(kerr, kernel.ErrInitExit) || errors.Is(rerr, ErrInitExit) {
		return errors.Is(kerr, kernel.ErrInitExit) && errors.Is(rerr, ErrInitExit)
	}
	return errors.Is(kerr, rerr) || (kerr == nil && rerr == nil)
}

func (mt *machine) checkErr(what string, kerr, rerr error) {
	if !sameErr(kerr, rerr) {
		mt.t.Fatalf("%s: kernel %v, model %v", what, kerr, rerr)
	}
}

var (
	cloneFlags = []uint64{
		0, 0, 0,
		unix.CLONE_THREAD | unix.CLONE_SIGHAND | unix.CLONE_VM,
		unix.CLONE_THREAD | unix.CLONE_SIGHAND | unix.CLONE_VM,
		unix.CLONE_PARENT,
		unix.CLONE_PARENT | unix.CLONE_THREAD | unix.CLONE_SIGHAND | unix.CLONE_VM,
		unix.CLONE_SIGHAND | unix.CLONE_VM,
		unix.CLONE_NEWPID,
		unix.CLONE_THREAD, // EINVAL
		unix.CLONE_THREAD | unix.CLONE_SIGHAND | unix.CLONE_VM | unix.CLONE_NEWPID, // EINVAL
	}
	exitSignals = []int{int(unix.SIGCHLD), int(unix.SIGCHLD), int(unix.SIGCHLD), 0,
		int(unix.SIGUSR1), int(unix.SIGTERM), int(unix.SIGURG), int(unix.SIGKILL), int(unix.SIGHUP)}
	ids = []int{-1, 0, 1000, 1001}
)

func (mt *machine) clone(t *rapid.T, flags uint64, sig int) {
	tid, kt := mt.actor(t)
	if avoidCldstopToTraced && mt.traced(tid) {
		return // tracees have no children
	}
	kc, kerr := kt.Clone(kernel.CloneArgs{Flags: flags, ExitSignal: sig})
	var child, seen int
	var rerr error
	mt.apply(func(m *Model) { child, seen, rerr = m.Clone(tid, flags, sig) })
	mt.checkErr(fmt.Sprintf("clone(%d, %#x, %d)", tid, flags, sig), kerr, rerr)
	if kerr != nil {
		return
	}
	if got := kc.PIDIn(kt.Namespace()); got != seen {
		t.Fatalf("clone: kernel child pid %d, model %d", got, seen)
	}
	if got := kc.PIDIn(mt.k.RootNamespace()); got != child {
		t.Fatalf("clone: kernel child root pid %d, model %d", got, child)
	}
	mt.kt[child] = kc
	if flags&unix.CLONE_NEWPID != 0 {
		info, _ := mt.m.Info(child)
		mt.kns[kc.Namespace()] = info.NSID
	}
}

// Fork forks a process.
func (mt *machine) Fork(t *rapid.T) { mt.clone(t, 0, int(unix.SIGCHLD)) }

// Clone clones with random flags and exit signal.
func (mt *machine) Clone(t *rapid.T) {
	mt.clone(t, rapid.SampledFrom(cloneFlags).Draw(t, "flags"), rapid.SampledFrom(exitSignals).Draw(t, "exitsig"))
}

func (mt *machine) exit(t *rapid.T, group bool) {
	tid, kt := mt.actor(t)
	code := rapid.SampledFrom([]int{0, 1, 5, 255, 259}).Draw(t, "code")
	call := func(m *Model) error {
		if group {
			return m.ExitGroup(tid, code)
		}
		return m.Exit(tid, code)
	}
	var kerr, rerr error
	if group {
		kerr = kt.ExitGroup(code)
	} else {
		kerr = kt.Exit(code)
	}
	mt.apply(func(m *Model) { rerr = call(m) })
	mt.checkErr(fmt.Sprintf("exit(%d, group %v)", tid, group), kerr, rerr)
}

// Exit ends the calling thread.
func (mt *machine) Exit(t *rapid.T) { mt.exit(t, false) }

// ExitGroup ends the calling process.
func (mt *machine) ExitGroup(t *rapid.T) { mt.exit(t, true) }

// wait compares one wait call.
func (mt *machine) wait(what string, kr kernel.WaitResult, kerr error, call func(*Model) (WaitResult, error)) {
	var rr WaitResult
	var rerr error
	mt.apply(func(m *Model) { rr, rerr = call(m) })
	mt.t.Logf("%s = %+v %v", what, rr, rerr)
	if !sameErr(kerr, rerr) {
		mt.t.Fatalf("%s: kernel %v (%+v), model %v (%+v)", what, kerr, kr, rerr, rr)
	}
	if kr.Pid != rr.Pid || int(kr.Status) != rr.Status || (kr.Pid != 0 && kr.Code != rr.Code) {
		mt.t.Fatalf("%s: kernel pid %d status %#x code %d, model pid %d status %#x code %d",
			what, kr.Pid, int(kr.Status), kr.Code, rr.Pid, rr.Status, rr.Code)
	}
}

// Churn forks, exits and reaps children one after another, to move the
// pid cursors through their ranges and across the 300 wrap.
func (mt *machine) Churn(t *rapid.T) {
	tid, kt := mt.actor(t)
	if avoidCldstopToTraced && mt.traced(tid) {
		return // tracees have no children
	}
	for n := rapid.IntRange(1, 150).Draw(t, "churn"); n > 0; n-- {
		kc, kerr := kt.Fork()
		var child, seen int
		var rerr error
		mt.apply(func(m *Model) { child, seen, rerr = m.Clone(tid, 0, int(unix.SIGCHLD)) })
		mt.checkErr("churn fork", kerr, rerr)
		if kerr != nil {
			return
		}
		if got := kc.PIDIn(kt.Namespace()); got != seen {
			t.Fatalf("churn: kernel child pid %d, model %d", got, seen)
		}
		mt.kt[child] = kc
		kerr = kc.Exit(0)
		mt.apply(func(m *Model) { rerr = m.Exit(child, 0) })
		mt.checkErr("churn exit", kerr, rerr)
		kr, kerr := kt.Wait4(context.Background(), seen, unix.WNOHANG|unix.WALL)
		mt.wait("churn wait", kr, kerr, func(m *Model) (WaitResult, error) {
			return m.Wait4(tid, seen, unix.WNOHANG|unix.WALL)
		})
		mt.k.Quiesce()
	}
}

// Wait4 waits with WNOHANG and random selectors and options.
func (mt *machine) Wait4(t *rapid.T) {
	tid, kt := mt.actor(t)
	var pid int
	switch rapid.IntRange(0, 5).Draw(t, "sel") {
	case 0, 1:
		pid = -1
	case 2:
		pid = 0
	case 3:
		pid = -mt.somePid(t, kt)
	case 4:
		pid = mt.somePid(t, kt)
	default:
		pid = math.MinInt32
	}
	opts := unix.WNOHANG
	for _, o := range []int{unix.WUNTRACED, unix.WCONTINUED, unix.WNOTHREAD, unix.WCLONE, unix.WALL, unix.WNOWAIT} {
		if rapid.IntRange(0, 4).Draw(t, "opt") == 0 {
			opts |= o
		}
	}
	opts = mt.waitOptions(tid, opts)
	kr, kerr := kt.Wait4(context.Background(), pid, opts)
	mt.wait(fmt.Sprintf("wait4(%d, %d, %#x)", tid, pid, opts), kr, kerr,
		func(m *Model) (WaitResult, error) { return m.Wait4(tid, pid, opts) })
}

// Waitid waits with WNOHANG and random id types and options.
func (mt *machine) Waitid(t *rapid.T) {
	tid, kt := mt.actor(t)
	idtype := rapid.SampledFrom([]int{unix.P_ALL, unix.P_ALL, unix.P_PID, unix.P_PGID, 7}).Draw(t, "idtype")
	id := 0
	switch rapid.IntRange(0, 3).Draw(t, "idkind") {
	case 0:
		id = mt.somePid(t, kt)
	case 1:
		id = rapid.IntRange(-2, 2).Draw(t, "smallid")
	}
	opts := unix.WNOHANG
	if rapid.IntRange(0, 7).Draw(t, "wexited") != 0 {
		opts |= unix.WEXITED
	}
	for _, o := range []int{unix.WSTOPPED, unix.WCONTINUED, unix.WNOTHREAD, unix.WCLONE, unix.WALL, unix.WNOWAIT} {
		if rapid.IntRange(0, 4).Draw(t, "opt") == 0 {
			opts |= o
		}
	}
	opts = mt.waitOptions(tid, opts)
	kr, kerr := kt.Waitid(context.Background(), idtype, id, opts)
	mt.wait(fmt.Sprintf("waitid(%d, %d, %d, %#x)", tid, idtype, id, opts), kr, kerr,
		func(m *Model) (WaitResult, error) { return m.Waitid(tid, idtype, id, opts) })
}

// Setuid calls setuid.
func (mt *machine) Setuid(t *rapid.T) {
	tid, kt := mt.actor(t)
	uid := rapid.SampledFrom(ids).Draw(t, "uid")
	kerr := kt.Setuid(uid)
	var rerr error
	mt.apply(func(m *Model) { rerr = m.Setuid(tid, uid) })
	mt.checkErr("setuid", kerr, rerr)
}

// Setresuid calls setresuid.
func (mt *machine) Setresuid(t *rapid.T) {
	tid, kt := mt.actor(t)
	r, e, s := rapid.SampledFrom(ids).Draw(t, "r"), rapid.SampledFrom(ids).Draw(t, "e"), rapid.SampledFrom(ids).Draw(t, "s")
	kerr := kt.Setresuid(r, e, s)
	var rerr error
	mt.apply(func(m *Model) { rerr = m.Setresuid(tid, r, e, s) })
	mt.checkErr("setresuid", kerr, rerr)
}

// SetrlimitNPROC sets RLIMIT_NPROC.
func (mt *machine) SetrlimitNPROC(t *rapid.T) {
	tid, kt := mt.actor(t)
	vals := []uint64{0, 1, 2, 3, 4, 6, RLimInfinity}
	cur, max := rapid.SampledFrom(vals).Draw(t, "cur"), rapid.SampledFrom(vals).Draw(t, "max")
	kerr := kt.Setrlimit(unix.RLIMIT_NPROC, kernel.RLimit{Cur: cur, Max: max})
	var rerr error
	mt.apply(func(m *Model) { rerr = m.Setrlimit(tid, unix.RLIMIT_NPROC, RLimit{cur, max}) })
	mt.checkErr("setrlimit", kerr, rerr)
}

// Sigaction changes SIGCHLD's disposition, or another signal's.
func (mt *machine) Sigaction(t *rapid.T) {
	tid, kt := mt.actor(t)
	sig := rapid.SampledFrom([]int{int(unix.SIGCHLD), int(unix.SIGCHLD), int(unix.SIGUSR1),
		int(unix.SIGTERM), int(unix.SIGHUP), int(unix.SIGKILL)}).Draw(t, "sig")
	h := rapid.IntRange(SigDfl, SigHandler).Draw(t, "handler")
	fl := rapid.SampledFrom([]uint64{0, SaNoCldWait}).Draw(t, "saflags")
	kold, kerr := kt.Sigaction(sig, kernel.SigAction{Handler: h, Flags: fl})
	var rold SigAction
	var rerr error
	mt.apply(func(m *Model) { rold, rerr = m.Sigaction(tid, sig, SigAction{h, fl}) })
	mt.checkErr("sigaction", kerr, rerr)
	if kold.Handler != rold.Handler || kold.Flags != rold.Flags {
		t.Fatalf("sigaction old: kernel %+v, model %+v", kold, rold)
	}
}

// Subreaper sets or clears PR_SET_CHILD_SUBREAPER.
func (mt *machine) Subreaper(t *rapid.T) {
	tid, kt := mt.actor(t)
	on := rapid.IntRange(0, 3).Draw(t, "on") != 0
	kerr := kt.PrctlSetChildSubreaper(on)
	var rerr error
	mt.apply(func(m *Model) { rerr = m.PrctlSetChildSubreaper(tid, on) })
	mt.checkErr("subreaper", kerr, rerr)
}

// Pdeathsig sets PR_SET_PDEATHSIG.
func (mt *machine) Pdeathsig(t *rapid.T) {
	tid, kt := mt.actor(t)
	sig := rapid.SampledFrom([]int{0, int(unix.SIGKILL), int(unix.SIGKILL), int(unix.SIGTERM),
		int(unix.SIGUSR1), int(unix.SIGCHLD), int(unix.SIGHUP), 65}).Draw(t, "pdeath")
	kerr := kt.PrctlSetPdeathsig(sig)
	var rerr error
	mt.apply(func(m *Model) { rerr = m.PrctlSetPdeathsig(tid, sig) })
	mt.checkErr("pdeathsig", kerr, rerr)
}

// Setsid starts a new session.
func (mt *machine) Setsid(t *rapid.T) {
	tid, kt := mt.actor(t)
	kid, kerr := kt.Setsid()
	var rid int
	var rerr error
	mt.apply(func(m *Model) { rid, rerr = m.Setsid(tid) })
	mt.checkErr("setsid", kerr, rerr)
	if kid != rid {
		t.Fatalf("setsid: kernel %d, model %d", kid, rid)
	}
}

// Setpgid moves a process between process groups.
func (mt *machine) Setpgid(t *rapid.T) {
	tid, kt := mt.actor(t)
	pid, pgid := 0, 0
	if rapid.Bool().Draw(t, "otherpid") {
		pid = mt.somePid(t, kt)
	}
	switch rapid.IntRange(0, 3).Draw(t, "pgidkind") {
	case 0:
		pgid = mt.somePid(t, kt)
	case 1:
		pgid = -1
	}
	kerr := kt.Setpgid(pid, pgid)
	var rerr error
	mt.apply(func(m *Model) { rerr = m.Setpgid(tid, pid, pgid) })
	mt.checkErr(fmt.Sprintf("setpgid(%d, %d, %d)", tid, pid, pgid), kerr, rerr)
}

// prioArgs draws a which and a who for get/setpriority.
func (mt *machine) prioArgs(t *rapid.T, kt *kernel.Task) (int, int) {
	which := rapid.SampledFrom([]int{unix.PRIO_PROCESS, unix.PRIO_PGRP, unix.PRIO_USER, 3}).Draw(t, "which")
	who := 0
	if rapid.Bool().Draw(t, "whoset") {
		if which == unix.PRIO_USER {
			who = rapid.SampledFrom(ids).Draw(t, "uid")
		} else {
			who = mt.somePid(t, kt)
		}
	}
	return which, who
}

// Getpriority reads priorities.
func (mt *machine) Getpriority(t *rapid.T) {
	tid, kt := mt.actor(t)
	which, who := mt.prioArgs(t, kt)
	kv, kerr := kt.Getpriority(which, who)
	var rv int
	var rerr error
	mt.apply(func(m *Model) { rv, rerr = m.Getpriority(tid, which, who) })
	mt.checkErr(fmt.Sprintf("getpriority(%d, %d, %d)", tid, which, who), kerr, rerr)
	if kv != rv {
		t.Fatalf("getpriority(%d, %d, %d): kernel %d, model %d", tid, which, who, kv, rv)
	}
}

// Setpriority changes priorities.
func (mt *machine) Setpriority(t *rapid.T) {
	tid, kt := mt.actor(t)
	which, who := mt.prioArgs(t, kt)
	nice := rapid.SampledFrom([]int{-30, -5, 0, 3, 10, 19, 40}).Draw(t, "nice")
	kerr := kt.Setpriority(which, who, nice)
	var rerr error
	mt.apply(func(m *Model) { rerr = m.Setpriority(tid, which, who, nice) })
	mt.checkErr(fmt.Sprintf("setpriority(%d, %d, %d, %d)", tid, which, who, nice), kerr, rerr)
}

var killSignals = []int{0, int(unix.SIGKILL), int(unix.SIGSTOP), int(unix.SIGSTOP), int(unix.SIGCONT),
	int(unix.SIGCONT), int(unix.SIGTERM), int(unix.SIGTSTP), int(unix.SIGHUP), int(unix.SIGUSR1), 65}

// Kill sends a signal to a process, a group or everyone.
func (mt *machine) Kill(t *rapid.T) {
	tid, kt := mt.actor(t)
	var pid int
	switch rapid.IntRange(0, 5).Draw(t, "killsel") {
	case 0, 1:
		pid = mt.somePid(t, kt)
	case 2:
		pid = -mt.somePid(t, kt)
	case 3:
		pid = 0
	case 4:
		pid = -1
	default:
		pid = math.MinInt32
	}
	sig := rapid.SampledFrom(killSignals).Draw(t, "sig")
	if sig > 0 && sig <= nSig && !mt.signalAllowed(sig) {
		return
	}
	kerr := kt.Kill(pid, sig)
	var rerr error
	mt.apply(func(m *Model) { rerr = m.Kill(tid, pid, sig) })
	mt.checkErr(fmt.Sprintf("kill(%d, %d, %d)", tid, pid, sig), kerr, rerr)
}

// Tgkill sends a signal to one thread.
func (mt *machine) Tgkill(t *rapid.T) {
	tid, kt := mt.actor(t)
	ttid := mt.somePid(t, kt)
	tgid := ttid
	if target := kt.Namespace().Lookup(ttid); target != nil && rapid.Bool().Draw(t, "righttgid") {
		tgid = target.TGIDIn(kt.Namespace())
	}
	sig := rapid.SampledFrom(killSignals).Draw(t, "sig")
	if sig > 0 && sig <= nSig && !mt.signalAllowed(sig) {
		return
	}
	kerr := kt.Tgkill(tgid, ttid, sig)
	var rerr error
	mt.apply(func(m *Model) { rerr = m.Tgkill(tid, tgid, ttid, sig) })
	mt.checkErr(fmt.Sprintf("tgkill(%d, %d, %d, %d)", tid, tgid, ttid, sig), kerr, rerr)
}

// Execve execs in the calling thread.
func (mt *machine) Execve(t *rapid.T) {
	tid, kt := mt.actor(t)
	in, _ := mt.m.Info(tid)
	if st := mt.m.Ptraced(tid); avoidExecTrap && st.Tracer != 0 && !st.Seized {
		return
	}
	kerr := kt.Execve()
	var rerr error
	mt.apply(func(m *Model) { rerr = m.Execve(tid) })
	mt.checkErr(fmt.Sprintf("execve(%d)", tid), kerr, rerr)
	if kerr == nil {
		mt.kt[in.Tgid] = kt // a non-leader took the leader's pid
	}
}

// Check compares the two systems after every step.
func (mt *machine) Check(t *rapid.T) {
	mt.k.Quiesce()
	mt.checkTracers(t)
	if err := mt.k.CheckInvariants(); err != nil {
		t.Fatalf("kernel invariants: %v", err)
	}
	root := mt.k.RootNamespace()
	for tid, kt := range mt.kt {
		if root.Lookup(tid) != kt {
			delete(mt.kt, tid)
		}
	}
	ktids := make([]int, 0, len(mt.kt))
	for tid := range mt.kt {
		ktids = append(ktids, tid)
	}
	sort.Ints(ktids)
	if rtids := mt.m.Tasks(); !slices.Equal(ktids, rtids) {
		for _, tid := range rtids {
			if !slices.Contains(ktids, tid) {
				info, _ := mt.m.Info(tid)
				t.Logf("model only: %+v", info)
			}
		}
		t.Fatalf("tasks: kernel %v, model %v", ktids, rtids)
	}
	for _, tid := range ktids {
		want, _ := mt.m.Info(tid)
		if got := mt.kernelInfo(mt.kt[tid]); !equalInfo(got, want) {
			t.Fatalf("task %d: kernel %+v, model %+v", tid, got, want)
		}
	}
	for kns, id := range mt.kns {
		if got, want := kns.Allocated(), mt.m.Allocated(id); got != want {
			t.Fatalf("namespace %d: kernel holds %d pids, model %d", id, got, want)
		}
		if want := mt.m.ChildReaper(id); want != 0 {
			if r := kns.ChildReaper(); r == nil || r.PIDIn(root) != want {
				t.Fatalf("namespace %d: child reaper differs, model %d", id, want)
			}
		}
	}
}

// kernelInfo builds the model's TaskInfo from the kernel's public API.
func (mt *machine) kernelInfo(kt *kernel.Task) TaskInfo {
	root := mt.k.RootNamespace()
	ns := kt.Namespace()
	in := TaskInfo{
		Tid: kt.PIDIn(root), Tgid: kt.TGIDIn(root), Running: !kt.Exited(), NSID: mt.kns[ns],
		Getpid: kt.Getpid(), Gettid: kt.Gettid(), Getppid: kt.Getppid(), Getpgrp: kt.Getpgrp(),
		Pdeath: kt.PrctlGetPdeathsig(), UID: uint32(kt.Creds().UID), EUID: uint32(kt.Creds().EUID),
		IsLeader: kt.ThreadGroup().Leader() == kt, Subreaper: kt.PrctlGetChildSubreaper(),
		Stopped: kt.Stopped(),
	}
	// An exited task makes no calls; a live thread of the root init
	// sees every task not yet released, zombies included (F6).
	if prio, err := mt.rootViewer().Getpriority(unix.PRIO_PROCESS, kt.PIDIn(root)); err == nil {
		in.Nice = 20 - prio
	}
	in.Getsid = kt.ThreadGroup().SessionID(ns)
	for at := ns; at != nil; at = at.Parent() {
		in.PIDs = append([]int{kt.PIDIn(at)}, in.PIDs...)
	}
	if p := kt.Parent(); p != nil {
		in.ParentTid = p.PIDIn(root)
		in.PPid = p.TGIDIn(root)
	}
	return in
}

// rootViewer returns a live thread of the root init's process: there is
// always one, since its last thread may not exit.
func (mt *machine) rootViewer() *kernel.Task {
	for _, kt := range mt.kt {
		if kt.ThreadGroup() == mt.k.Init().ThreadGroup() && !kt.Exited() {
			return kt
		}
	}
	mt.t.Fatalf("the root init has no live thread")
	return nil
}

// equalInfo compares what both sides expose (the kernel does not show a
// process's exit signal or whether a task is a zombie rather than exiting).
func equalInfo(k, r TaskInfo) bool {
	r.Zombie, r.ExitSignal = false, 0
	return fmt.Sprint(k) == fmt.Sprint(r)
}

func actions(mt *machine) map[string]func(*rapid.T) {
	acts := map[string]func(*rapid.T){
		"Fork": mt.Fork, "Fork2": mt.Fork, "Clone": mt.Clone, "Clone2": mt.Clone, "Clone3": mt.Clone,
		"Exit": mt.Exit, "Exit2": mt.Exit, "ExitGroup": mt.ExitGroup,
		"Wait4": mt.Wait4, "Wait4b": mt.Wait4, "Waitid": mt.Waitid,
		"Setuid": mt.Setuid, "Setresuid": mt.Setresuid, "SetrlimitNPROC": mt.SetrlimitNPROC,
		"Sigaction": mt.Sigaction, "Subreaper": mt.Subreaper, "Pdeathsig": mt.Pdeathsig,
		"Setsid": mt.Setsid, "Churn": mt.Churn, "Setpgid": mt.Setpgid, "Setpgid2": mt.Setpgid,
		"Getpriority": mt.Getpriority, "Setpriority": mt.Setpriority, "Kill": mt.Kill, "Kill2": mt.Kill,
		"Tgkill": mt.Tgkill, "Execve": mt.Execve, "Ptrace": mt.Ptrace, "Ptrace2": mt.Ptrace,
		"PtraceRequest": mt.PtraceRequest, "PtraceRequest2": mt.PtraceRequest, "PtraceRequest3": mt.PtraceRequest,
		"Sigprocmask": mt.Sigprocmask, "Sigprocmask2": mt.Sigprocmask, "Sigpending": mt.Sigpending,
		"Sigtimedwait": mt.Sigtimedwait, "Tkill": mt.Tkill,
	}
	for name, f := range acts {
		if name == "Wait4" || name == "Wait4b" || name == "Waitid" {
			continue // waits see the reports the previous step left
		}
		acts[name] = func(t *rapid.T) {
			mt.collectTraceReports()
			f(t)
		}
	}
	acts[""] = mt.Check
	return acts
}

// TestStateMachine runs random call sequences on the kernel package and on
// the model and requires identical results and identical process trees
// after every step.
func TestStateMachine(t *testing.T) {
	hits := map[string]int{}
	rapid.Check(t, func(t *rapid.T) {
		mt := newMachine(t)
		defer func() {
			for k, v := range mt.m.hits {
				hits[k] += v
			}
		}()
		t.Repeat(actions(mt))
	})
	t.Logf("rules exercised: %v", hits)
}
