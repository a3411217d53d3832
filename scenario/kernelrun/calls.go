package kernelrun

import (
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/internal/abi"
	"tasklist/scenario"
)

// encode turns a call into the agent's command words. Task arguments become pids as the actor
// sees them, set arguments the sets' ids.
func (b *Backend) encode(actor scenario.TaskRef, c scenario.Call) ([]int64, error) {
	op, ok := ops[c.Name]
	if !ok {
		return nil, fmt.Errorf("unknown call %s", c.Name)
	}
	arg := func(i int) int64 {
		if i >= len(c.Args) {
			return 0
		}
		switch v := c.Args[i]; v.Kind {
		case scenario.ValueSet:
			return int64(b.sets[v.Set])
		case scenario.ValueTask:
			return int64(v.Pid(b, actor))
		default:
			return v.Int
		}
	}
	has := func(i int) int64 {
		if i < len(c.Args) {
			return 1
		}
		return 0
	}
	w := []int64{int64(op)}
	switch c.Name {
	case "clone":
		// Legacy clone(2) takes the exit signal in the flags' low byte and only 32 bits of
		// flags; clone3 is used only for what clone(2) cannot say.
		flags, sig := uint64(arg(0)), int64(arg(0)&0xff)
		if has(1) == 1 {
			sig = arg(1)
		}
		legacy := flags>>32 == 0 && (has(1) == 0 || flags&0xff == 0 && sig >= 0 && sig <= 0xff)
		if legacy {
			w = append(w, int64(flags&^0xff), sig, 1)
		} else {
			w = append(w, int64(flags&^0xff|flags&0xff*uint64(has(1))), sig, 0)
		}
	case "signal":
		w = append(w, arg(0), arg(1), 0)
	case "setrlimit":
		w = append(w, arg(0), arg(1), arg(2), has(2))
	case "prctl":
		w = append(w, arg(0), arg(1))
	case "ptrace":
		w = append(w, arg(0), arg(1), arg(2), arg(3))
	case "semop", "semtimedop":
		timeout, hasTimeout, ops := int64(0), int64(0), c.Args[len(c.Args)-1].Sembufs
		if c.Name == "semtimedop" {
			timeout, hasTimeout = arg(1), 1
		}
		// More sembufs than a command carries are more than SEMOPM: Linux refuses them
		// (E2BIG) by their count, which is all the agent passes then.
		carried := ops
		if len(ops) > semopCarry {
			carried = nil
		}
		w = append(w, arg(0), timeout, hasTimeout, int64(len(ops)), int64(len(carried)))
		for _, s := range carried {
			w = append(w, s.Num, s.Op, s.Flags)
		}
	case "semctl":
		w = append(w, arg(0), arg(1), arg(2))
		switch {
		case len(c.Args) < 4:
			w = append(w, 0)
		case c.Args[3].Kind == scenario.ValueList:
			// Linux reads as many values as the set has, at most SEMMSL: the rest of a
			// longer list is never read and need not be carried.
			list := c.Args[3].List
			list = list[:min(len(list), valuesCarry)]
			w = append(w, 2, int64(len(list)))
			w = append(w, packValues(list)...)
		default:
			w = append(w, 1, arg(3))
		}
	default:
		for i := range c.Args {
			w = append(w, arg(i))
		}
	}
	if len(w) > maxWords {
		return nil, fmt.Errorf("%s: %d words of arguments do not fit in the runner's message (%d at most)", c.Name, len(w), maxWords)
	}
	return w, nil
}

// packValues packs 16-bit semaphore values (the unsigned shorts of SETALL's array, to which
// Linux's C type cuts each value) four to a word.
func packValues(vals []int64) []int64 {
	w := make([]int64, (len(vals)+3)/4)
	for i, v := range vals {
		w[i/4] |= int64(uint64(uint16(v)) << (16 * (i % 4)))
	}
	return w
}

// unpackValues is packValues' inverse for n values.
func unpackValues(w []int64, n int) []int64 {
	vals := make([]int64, n)
	for i := range vals {
		vals[i] = int64(uint16(uint64(w[i/4]) >> (16 * (i % 4))))
	}
	return vals
}

// decode turns t's reply to a call into a Result. It fails when the agent could not carry
// the result.
func (b *Backend) decode(t *task, c scenario.Call, m message) (scenario.Result, error) {
	if m.tooBig {
		return scenario.Result{}, fmt.Errorf("%s: the result does not fit in the agent's reply", c.Name)
	}
	if (c.Name == "fork" || c.Name == "clone") && m.words[0] >= 0 {
		return b.created(t, int(m.words[0]), m)
	}
	return b.decodeReply(t, c, m), nil
}

func (b *Backend) decodeReply(t *task, c scenario.Call, m message) scenario.Result {
	ret := m.words[0]
	if ret < 0 {
		closeFds(m)
		return errnoResult(syscall.Errno(-ret))
	}
	switch c.Name {
	case "exit", "exit_group":
		return scenario.Result{Kind: scenario.ResultDone}
	case "execve":
		if len(m.words) > 1 {
			b.execed(t, int(m.words[1]))
		}
	case "wait4":
		if ret == 0 {
			break
		}
		return waitStatus(int(ret), int(m.words[1]))
	case "waitid":
		return waitInfo(m.words[1:])
	case "getpriority":
		return scenario.Result{Kind: scenario.ResultInt, Int: 20 - ret}
	case "semget":
		for ref, id := range b.sets {
			if id == int(ret) {
				return scenario.Result{Kind: scenario.ResultNewSet, NewSet: scenario.SetRef(ref), SetID: id}
			}
		}
		b.sets = append(b.sets, int(ret))
		return scenario.Result{Kind: scenario.ResultNewSet, NewSet: scenario.SetRef(len(b.sets) - 1), SetID: int(ret)}
	case "semctl":
		switch c.Args[2].Int {
		case abi.GETALL:
			return scenario.Result{Kind: scenario.ResultList, List: unpackValues(m.words[2:], int(m.words[1]))}
		case abi.GETPID:
			return scenario.Result{Kind: scenario.ResultPid, Pid: int(ret)}
		}
		return scenario.Result{Kind: scenario.ResultInt, Int: ret}
	}
	if spec, _ := scenario.LookupCall(c.Name); spec.Results[0] == scenario.ResultPid {
		return scenario.Result{Kind: scenario.ResultPid, Pid: int(ret)} // getpid, setsid, ...
	}
	return scenario.Result{Kind: scenario.ResultInt, Int: ret}
}

// waitStatus decodes a wait4 status word.
func waitStatus(pid, status int) scenario.Result {
	res := scenario.Result{Kind: scenario.ResultWait, WaitPid: pid}
	switch {
	case status&0x7f == 0:
		res.How, res.Code = scenario.Exited, status>>8&0xff
	case status == 0xffff:
		res.How = scenario.Continued
	case status&0xff == 0x7f:
		res.How, res.Code = scenario.Stopped, status>>8&0xffff
	case status&0x80 != 0:
		res.How, res.Code = scenario.Dumped, status&0x7f
	default:
		res.How, res.Code = scenario.Killed, status&0x7f
	}
	return res
}

// waitInfo decodes what waitid wrote: si_pid, si_code, si_status.
func waitInfo(w []int64) scenario.Result {
	pid, code, status := int(w[0]), w[1], int(w[2])
	if pid == 0 {
		return scenario.Result{Kind: scenario.ResultInt}
	}
	res := scenario.Result{Kind: scenario.ResultWait, WaitPid: pid, Code: status}
	switch code {
	case abi.CLD_EXITED:
		res.How = scenario.Exited
	case abi.CLD_KILLED:
		res.How = scenario.Killed
	case abi.CLD_DUMPED:
		res.How = scenario.Dumped
	case abi.CLD_TRAPPED:
		res.How = scenario.Trapped
	case abi.CLD_STOPPED:
		res.How = scenario.Stopped
	case abi.CLD_CONTINUED:
		res.How, res.Code = scenario.Continued, 0
	}
	return res
}

// created records the task a fork or clone made; pid is its pid in the creator's namespace.
// The pidfd in the reply names it; without one (a kernel without pidfds of threads) the
// child's hello, whose tid has pid at the creator's level, does. A child the pidfd shows gone,
// or that was released before the clone returned (pidfd_open's ESRCH, the reply's second
// word), is known by its pid alone; one that neither a pidfd nor a hello names and that was
// not seen gone cannot be told from a slow one, and the runner says so rather than call it
// gone.
func (b *Backend) created(creator *task, pid int, m message) (scenario.Result, error) {
	tid := 0
	for _, fd := range m.fds {
		if tid == 0 {
			tid, _ = pidfdTid(fd)
		}
		unix.Close(fd)
	}
	released := len(m.words) > 1 && m.words[1] == -int64(unix.ESRCH)
	pidfd := len(m.fds) > 0 || released
	level := len(creator.ns) - 1
	var id identity
	var err error
	if tid > 0 {
		id, err = readIdentity(tid)
	}
	if tid <= 0 || err != nil {
		id, err = b.findHello(level, creator.ns[level], pid)
	}
	if err != nil && !pidfd {
		return scenario.Result{}, fmt.Errorf("the new task %d sent no hello and the kernel gave no pidfd of it: the runner cannot find it", pid)
	}
	if err != nil {
		// The child is gone before it could be looked at: it is known only by its pid.
		id = identity{nspid: make([]int, level+1), ns: append([]uint64{}, creator.ns...)}
		id.nspid[level] = pid
	}
	b.tasks = append(b.tasks, &task{identity: id, gone: err != nil})
	return scenario.Result{Kind: scenario.ResultNewTask, NewTask: scenario.TaskRef(len(b.tasks) - 1), NewPid: pid}, nil
}

// findHello finds the new task whose pid at level, in namespace ns, is pid among those that
// have said hello, waiting a little for its hello.
func (b *Backend) findHello(level int, ns uint64, pid int) (identity, error) {
	deadline := time.Now().Add(time.Second)
	for {
		for _, tid := range b.hellos.tids() {
			id, err := readIdentity(tid)
			if err == nil && level < len(id.ns) && id.ns[level] == ns && id.nspid[level] == pid {
				return id, nil
			}
		}
		if time.Now().After(deadline) {
			return identity{}, errGone
		}
		select {
		case <-b.hellos.notify:
		case <-time.After(time.Millisecond):
		}
	}
}

// execed updates t after its execve: a non-leader took its leader's pid, and every other
// thread of its process is gone.
func (b *Backend) execed(t *task, tid int) {
	for _, u := range b.tasks {
		if u != t && u.tgid == t.tgid {
			u.gone = true
			u.closeStat()
		}
	}
	if id, err := readIdentity(tid); err == nil {
		t.identity = id
		t.closeStat()
	}
}
