package modelrun

import (
	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
	"tasklist/kernel"
	"tasklist/scenario"
)

// The semaphore calls. Sets are named by their ids, as the kernel runner
// names them: a semget that finds a set already seen returns its name.
// Integer arguments reach the calls as the system calls' C int parameters
// hold them: the low 32 bits, sign-extended.

// cint converts an integer argument as a C int parameter holds it.
func cint(v scenario.Value) int { return int(int32(v.Int)) }

func (b *Backend) semget(t *kernel.Task, args []scenario.Value) scenario.Result {
	id, err := t.Semget(int32(args[0].Int), cint(args[1]), cint(args[2]))
	if err != nil {
		return errno(err)
	}
	b.mu.Lock() // for sets
	defer b.mu.Unlock()
	for ref, known := range b.sets {
		if known == id {
			return scenario.Result{Kind: scenario.ResultNewSet, NewSet: scenario.SetRef(ref), SetID: id}
		}
	}
	b.sets = append(b.sets, id)
	return scenario.Result{Kind: scenario.ResultNewSet, NewSet: scenario.SetRef(len(b.sets) - 1), SetID: id}
}

// setID resolves a set argument: a bound set's id, or an integer.
func (b *Backend) setID(v scenario.Value) int {
	if v.Kind == scenario.ValueSet {
		b.mu.Lock() // for sets
		defer b.mu.Unlock()
		return b.sets[v.Set]
	}
	return cint(v)
}

// sembufs converts the scenario's sembufs as C's struct sembuf would hold
// them.
func sembufs(v scenario.Value) []sem.Sembuf {
	ops := make([]sem.Sembuf, len(v.Sembufs))
	for i, s := range v.Sembufs {
		ops[i] = sem.Sembuf{Num: uint16(s.Num), Op: int16(s.Op), Flg: int16(s.Flags)}
	}
	return ops
}

func (b *Backend) semop(t *kernel.Task, args []scenario.Value) scenario.Result {
	return zero(t.Semop(b.ctx, b.setID(args[0]), sembufs(args[1])))
}

func (b *Backend) semtimedop(t *kernel.Task, args []scenario.Value) scenario.Result {
	ms := args[1].Int
	ts := unix.Timespec{Sec: ms / 1000, Nsec: ms % 1000 * 1e6}
	return zero(t.Semtimedop(b.ctx, b.setID(args[0]), sembufs(args[2]), &ts))
}

// semctl makes the call as the kernel runner's agent does: IPC_SET changes
// the mode of what IPC_STAT read, GETALL learns the set's size from
// IPC_STAT first.
func (b *Backend) semctl(t *kernel.Task, args []scenario.Value) scenario.Result {
	id, num, cmd := b.setID(args[0]), cint(args[1]), cint(args[2])
	var arg scenario.Value
	if len(args) > 3 {
		arg = args[3]
	}
	switch cmd {
	case unix.IPC_STAT:
		var ds sem.SemidDS
		return semctlResult(t.Semctl(id, num, cmd, sem.Semun{Buf: &ds}))
	case unix.IPC_SET:
		var ds sem.SemidDS
		if _, err := t.Semctl(id, 0, unix.IPC_STAT, sem.Semun{Buf: &ds}); err != nil {
			return errno(err)
		}
		if len(args) > 3 {
			ds.Perm.Mode = uint16(arg.Int)
		}
		return semctlResult(t.Semctl(id, num, cmd, sem.Semun{Buf: &ds}))
	case sem.GETALL:
		var ds sem.SemidDS
		if _, err := t.Semctl(id, 0, unix.IPC_STAT, sem.Semun{Buf: &ds}); err != nil {
			return errno(err)
		}
		vals := make([]uint16, ds.Nsems)
		if _, err := t.Semctl(id, num, cmd, sem.Semun{Array: vals}); err != nil {
			return errno(err)
		}
		list := make([]int64, len(vals))
		for i, v := range vals {
			list[i] = int64(v)
		}
		return scenario.Result{Kind: scenario.ResultList, List: list}
	case sem.SETALL:
		vals := make([]uint16, len(arg.List))
		for i, v := range arg.List {
			vals[i] = uint16(v)
		}
		return semctlResult(t.Semctl(id, num, cmd, sem.Semun{Array: vals}))
	case sem.GETPID:
		return pid(t.Semctl(id, num, cmd, sem.Semun{}))
	}
	return semctlResult(t.Semctl(id, num, cmd, sem.Semun{Val: cint(arg)}))
}

func semctlResult(v int, err error) scenario.Result {
	if err != nil {
		return errno(err)
	}
	return scenario.Result{Kind: scenario.ResultInt, Int: int64(v)}
}
