package scenario

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"tasklist/internal/abi"
)

// fakeBackend is a toy process table with made-up pids, enough to drive the driver: nested pid
// namespaces (a task has a pid in its own namespace and each one above), fork and clone,
// exit, kill with SIGKILL, wait4 on exited children, and semaphore sets whose background semop
// completes at its join. It models no kernel faithfully and need not.
type fakeBackend struct {
	tasks    []*fakeTask
	nsParent []int // namespace -> its parent, -1 for the root
	nextPid  []int // namespace -> next pid to hand out
	sets     []*fakeSet
	pending  map[TaskRef]Call
	made     map[TaskRef]TaskRef // the child a background vfork made at its start
	files    int
	log      []string
	closed   bool
}

type fakeTask struct {
	parent TaskRef
	ns     int
	pids   map[int]int // namespace -> pid
	exited bool
	killed int
	code   int
	reaped bool
	noFork bool // RLIMIT_NPROC was set to 0: fork fails
}

type fakeSet struct {
	key    int64
	vals   []int64
	lastOp TaskRef
}

func newFakeBackend() *fakeBackend {
	return &fakeBackend{
		tasks:    []*fakeTask{{ns: 0, pids: map[int]int{0: 1}}},
		nsParent: []int{-1},
		nextPid:  []int{2},
		pending:  map[TaskRef]Call{},
		made:     map[TaskRef]TaskRef{},
	}
}

func (b *fakeBackend) PidIn(viewer, target TaskRef) int {
	return b.tasks[target].pids[b.tasks[viewer].ns]
}

// byPid finds a task that caller sees with pid and that is not yet reaped.
func (b *fakeBackend) byPid(caller TaskRef, pid int) (TaskRef, bool) {
	for i, t := range b.tasks {
		if !t.reaped && pid > 0 && b.PidIn(caller, TaskRef(i)) == pid {
			return TaskRef(i), true
		}
	}
	return 0, false
}

func (b *fakeBackend) newTask(parent TaskRef, newNS bool) TaskRef {
	t := &fakeTask{parent: parent, ns: b.tasks[parent].ns, pids: map[int]int{}}
	if newNS {
		b.nsParent = append(b.nsParent, t.ns)
		b.nextPid = append(b.nextPid, 1)
		t.ns = len(b.nsParent) - 1
	}
	for ns := t.ns; ns >= 0; ns = b.nsParent[ns] {
		t.pids[ns] = b.nextPid[ns]
		b.nextPid[ns]++
	}
	b.tasks = append(b.tasks, t)
	return TaskRef(len(b.tasks) - 1)
}

func errno(e syscall.Errno) Result { return Result{Kind: ResultErrno, Errno: e} }

func (b *fakeBackend) Do(actor TaskRef, c Call) Result {
	b.log = append(b.log, fmt.Sprintf("do %d %s", actor, c.Name))
	return b.do(actor, c)
}

func (b *fakeBackend) do(actor TaskRef, c Call) Result {
	me := b.tasks[actor]
	arg := func(i int) int64 { return c.Args[i].Int }
	switch c.Name {
	case "fork", "clone":
		if me.noFork {
			return errno(unix.EAGAIN)
		}
		child := b.newTask(actor, c.Name == "clone" && arg(0)&unix.CLONE_NEWPID != 0)
		res := Result{Kind: ResultNewTask, NewTask: child, NewPid: b.PidIn(actor, child)}
		if c.Name == "clone" && arg(0)&unix.CLONE_PIDFD != 0 {
			res.NewFile, res.HasFile = b.newFile(), true
		}
		return res
	case "vfork":
		child, ok := b.made[actor]
		if !ok {
			child = b.newTask(actor, false)
		}
		delete(b.made, actor)
		return Result{Kind: ResultNewTask, NewTask: child, NewPid: b.PidIn(actor, child)}
	case "pidfd_open":
		return Result{Kind: ResultNewFile, NewFile: b.newFile()}
	case "close":
		if c.Args[0].Kind != ValueFile {
			return errno(unix.EBADF)
		}
		return Result{Kind: ResultInt}
	case "getrlimit":
		return Result{Kind: ResultLimit, Soft: 1024, Hard: ^uint64(0)}
	case "exit":
		me.exited, me.code = true, int(arg(0))
		return Result{Kind: ResultDone}
	case "getpid":
		return Result{Kind: ResultPid, Pid: b.PidIn(actor, actor)}
	case "getppid":
		return Result{Kind: ResultPid, Pid: b.PidIn(actor, me.parent)}
	case "kill":
		target, ok := b.byPid(actor, c.Args[0].Pid(b, actor))
		if !ok {
			return errno(unix.ESRCH)
		}
		if arg(1) == int64(unix.SIGKILL) {
			b.tasks[target].exited, b.tasks[target].killed = true, int(unix.SIGKILL)
		}
		return Result{Kind: ResultInt}
	case "wait4":
		return b.wait4(actor, c.Args[0].Pid(b, actor), arg(1))
	case "setrlimit":
		me.noFork = arg(0) == unix.RLIMIT_NPROC && arg(1) == 0
		return Result{Kind: ResultInt}
	case "semget":
		return b.semget(arg(0), arg(1))
	case "semop":
		return b.semop(actor, c.Args[0], c.Args[1].Sembufs)
	case "semctl":
		return b.semctl(actor, c.Args)
	}
	return errno(unix.ENOSYS)
}

func (b *fakeBackend) wait4(actor TaskRef, pid int, opts int64) Result {
	found := false
	for i, t := range b.tasks {
		ref := TaskRef(i)
		if t.parent != actor || ref == actor || t.reaped || (pid > 0 && b.PidIn(actor, ref) != pid) {
			continue
		}
		found = true
		if !t.exited {
			continue
		}
		t.reaped = true
		res := Result{Kind: ResultWait, WaitPid: b.PidIn(actor, ref), How: Exited, Code: t.code}
		if t.killed != 0 {
			res.How, res.Code = Killed, t.killed
		}
		return res
	}
	switch {
	case !found:
		return errno(unix.ECHILD)
	case opts&unix.WNOHANG != 0:
		return Result{Kind: ResultInt}
	}
	return errno(unix.EDEADLK) // would block forever: nothing else runs
}

func (b *fakeBackend) semget(key, nsems int64) Result {
	for i, s := range b.sets {
		if key != 0 && s.key == key {
			return Result{Kind: ResultNewSet, NewSet: SetRef(i), SetID: 100 + i}
		}
	}
	b.sets = append(b.sets, &fakeSet{key: key, vals: make([]int64, nsems)})
	i := len(b.sets) - 1
	return Result{Kind: ResultNewSet, NewSet: SetRef(i), SetID: 100 + i}
}

func (b *fakeBackend) set(v Value) (*fakeSet, bool) {
	i := int(v.Int) - 100
	if v.Kind == ValueSet {
		i = int(v.Set)
	}
	if i < 0 || i >= len(b.sets) {
		return nil, false
	}
	return b.sets[i], true
}

func (b *fakeBackend) semop(actor TaskRef, sv Value, ops []Sembuf) Result {
	s, ok := b.set(sv)
	if !ok {
		return errno(unix.EINVAL)
	}
	for _, op := range ops {
		if s.vals[op.Num]+op.Op < 0 {
			return errno(unix.EAGAIN)
		}
	}
	for _, op := range ops {
		s.vals[op.Num] += op.Op
	}
	s.lastOp = actor
	return Result{Kind: ResultInt}
}

func (b *fakeBackend) semctl(actor TaskRef, args []Value) Result {
	s, ok := b.set(args[0])
	if !ok {
		return errno(unix.EINVAL)
	}
	switch args[2].Int {
	case abi.GETALL:
		return Result{Kind: ResultList, List: append([]int64(nil), s.vals...)}
	case abi.SETALL:
		copy(s.vals, args[3].List)
		return Result{Kind: ResultInt}
	case abi.GETVAL:
		return Result{Kind: ResultInt, Int: s.vals[args[1].Int]}
	case abi.GETPID:
		return Result{Kind: ResultPid, Pid: b.PidIn(actor, s.lastOp)}
	}
	return errno(unix.EINVAL)
}

func (b *fakeBackend) newFile() FileRef {
	b.files++
	return FileRef(b.files)
}

func (b *fakeBackend) Start(actor TaskRef, c Call) error {
	b.log = append(b.log, fmt.Sprintf("start %d %s", actor, c.Name))
	b.pending[actor] = c
	if c.Name == "vfork" {
		b.made[actor] = b.newTask(actor, false)
	}
	return nil
}

func (b *fakeBackend) Made(actor TaskRef) (TaskRef, bool) {
	child, ok := b.made[actor]
	return child, ok
}

func (b *fakeBackend) Join(actor TaskRef) Result {
	b.log = append(b.log, fmt.Sprintf("join %d", actor))
	c := b.pending[actor]
	delete(b.pending, actor)
	return b.do(actor, c)
}

func (b *fakeBackend) Close() error {
	b.closed = true
	return nil
}
