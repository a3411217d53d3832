package kernelrun

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"tasklist/scenario"
)

// A pidfd is named by the open file, not by its number: the agent's tables hold its sockets
// too, so the numbers are not the model's, and fork copies a table, CLONE_FILES shares one and
// exec closes pidfds, so a name may be open at a number in one task's table and nowhere in
// another's. The runner keeps a descriptor of its own for every pidfd a call opened, passed
// by the agent as SCM_RIGHTS (the same open file), and finds the number a task's table has it
// at by comparing that file with each of the task's with kcmp(KCMP_FILE).

// keepFile records fd, the runner's descriptor of a pidfd a call opened.
func (b *Backend) keepFile(fd int) scenario.FileRef {
	b.files = append(b.files, fd)
	return scenario.FileRef(len(b.files) - 1)
}

// closeFiles closes the runner's descriptors of the scenario's pidfds.
func (b *Backend) closeFiles() {
	for _, fd := range b.files {
		unix.Close(fd)
	}
	b.files = nil
}

// fdIn returns the number at which t's table has the pidfd f open, or a number open in no
// table (the kernel then says EBADF) when the table does not hold it.
func (b *Backend) fdIn(t *task, f scenario.FileRef) int {
	dir := "/proc/" + strconv.Itoa(t.tid) + "/fd/"
	ents, err := os.ReadDir(dir)
	if err != nil || t.gone {
		return math.MaxInt32
	}
	self := os.Getpid()
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if link, err := os.Readlink(dir + e.Name()); err != nil || strings.HasPrefix(link, "socket:") {
			continue
		}
		if same, _, _ := unix.Syscall6(unix.SYS_KCMP, uintptr(self), uintptr(t.tid), kcmpFile,
			uintptr(b.files[f]), uintptr(n), 0); same == 0 {
			return n
		}
	}
	return math.MaxInt32
}

// kcmpFile is KCMP_FILE: kcmp compares two descriptors' open files.
const kcmpFile = 0

// Made implements scenario.Backend: the task the actor's background call has made, once it
// exists. A call whose reply has come says so in the reply; one still in progress, a vfork
// waiting for its child, has made the child if the actor has a child (a thread, for
// CLONE_THREAD; a sibling, for CLONE_PARENT) that the runner does not know yet, said hello or
// not: a child that starts stopped under a tracer says nothing until it is resumed.
func (b *Backend) Made(actor scenario.TaskRef) (scenario.TaskRef, bool) {
	t := b.tasks[actor]
	bg := t.bg
	switch {
	case bg == nil:
		return 0, false
	case bg.msg != nil:
		res, err := b.decode(t, bg.c, *bg.msg)
		if err != nil {
			res = scenario.Result{Kind: scenario.ResultFatal, Err: err}
		}
		bg.res, bg.msg = &res, nil
	}
	if bg.res != nil {
		return bg.res.NewTask, bg.res.Kind == scenario.ResultNewTask
	}
	var flags uint64
	switch bg.c.Name {
	case "clone":
		flags, _, _ = scenario.CloneCall(bg.c.Args)
	case "clone3":
		flags = uint64(bg.c.Args[0].Int)
	}
	tids := b.unknownNear(t, flags)
	if len(tids) != 1 {
		return 0, false
	}
	id, err := readIdentity(tids[0])
	if err != nil {
		return 0, false
	}
	return b.record(id, false), true
}

// unknownNear lists the tasks the runner does not know where a clone by t with flags puts its
// child: among t's process's threads (CLONE_THREAD), the children of its parent's threads
// (CLONE_PARENT), or t's own children.
func (b *Backend) unknownNear(t *task, flags uint64) []int {
	var near []int
	switch {
	case flags&unix.CLONE_THREAD != 0:
		near = threadsOf(t.tgid)
	case flags&unix.CLONE_PARENT != 0:
		for _, th := range threadsOf(parentOf(t.tid)) {
			near = append(near, childrenOf(th)...)
		}
	default:
		near = childrenOf(t.tid)
	}
	var unknown []int
	for _, tid := range near {
		start := readStat(tid).start // a zombie the runner knows is still known
		if !slices.ContainsFunc(b.tasks, func(u *task) bool { return u.tid == tid && u.start == start }) {
			unknown = append(unknown, tid)
		}
	}
	return unknown
}

// threadsOf lists the tids of process tgid's threads.
func threadsOf(tgid int) []int {
	ents, _ := os.ReadDir("/proc/" + strconv.Itoa(tgid) + "/task")
	var tids []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids
}

// childrenOf lists the children of thread tid.
func childrenOf(tid int) []int {
	s := strconv.Itoa(tid)
	raw, _ := os.ReadFile("/proc/" + s + "/task/" + s + "/children")
	var pids []int
	for _, f := range strings.Fields(string(raw)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// parentOf returns the process id of tid's parent, 0 when it cannot be read.
func parentOf(tid int) int {
	raw, _ := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			pid, _ := strconv.Atoi(strings.TrimSpace(v))
			return pid
		}
	}
	return 0
}

// childLevels returns how many pid namespace levels a child of t made with flags has, from its
// own up to the scenario's init's: t's, one more when t has unshared its children's namespace
// (pid_for_children, which cannot be opened before that namespace has an init), one more for
// CLONE_NEWPID.
func (b *Backend) childLevels(t *task, flags uint64) int {
	levels := len(t.ns) - len(b.tasks[scenario.Init].ns) + 1
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(t.tid)+"/ns/pid_for_children", &st); err != nil || st.Ino != t.ns[len(t.ns)-1] {
		levels++
	}
	if flags&unix.CLONE_NEWPID != 0 {
		levels++
	}
	return levels
}
