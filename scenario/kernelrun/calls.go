package kernelrun

import (
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/internal/abi"
	"tasklist/scenario"
)

// agentCall is how the runner makes one call of the language on the agent: encode gives the
// words of its command after the opcode, decode reads the agent's reply to it once the reply
// is known to be a success (a non-negative return value).
type agentCall struct {
	encode func(a callArgs) []int64
	decode func(b *Backend, t *task, c scenario.Call, m message) (scenario.Result, error)
}

// agentCalls is every call of the language as the agent makes it, keyed by the call table
// (scenario.Calls); TestAgentCallsCoverTheCallTable holds the two to each other, and
// TestAgentServesEveryCall the agent's own command list (agent.c) to both.
var agentCalls = map[string]agentCall{
	"clone":             {encodeClone, decodeCreated},
	"clone3":            {plainArgs, decodeCreated},
	"close":             {plainArgs, decodeInt},
	"execve":            {plainArgs, decodeExecve},
	"exit":              {plainArgs, decodeDone},
	"exit_group":        {plainArgs, decodeDone},
	"fork":              {plainArgs, decodeCreated},
	"getpgid":           {plainArgs, decodePid},
	"getpgrp":           {plainArgs, decodePid},
	"getpid":            {plainArgs, decodePid},
	"getppid":           {plainArgs, decodePid},
	"getpriority":       {plainArgs, decodeNice},
	"getrlimit":         {plainArgs, decodeLimit},
	"getsid":            {plainArgs, decodePid},
	"gettid":            {plainArgs, decodePid},
	"kill":              {plainArgs, decodeInt},
	"pidfd_open":        {plainArgs, decodeOpened},
	"pidfd_send_signal": {plainArgs, decodeInt},
	"poll":              {plainArgs, decodeInt},
	"prctl":             {func(a callArgs) []int64 { return []int64{a.word(0), a.word(1)} }, decodeInt},
	"prlimit": {func(a callArgs) []int64 { return []int64{a.word(0), a.word(1), a.given(2), a.word(2), a.word(3)} },
		decodeLimit},
	"ptrace": {func(a callArgs) []int64 { return []int64{a.word(0), a.word(1), a.word(2), a.word(3)} },
		decodeInt},
	"semctl":      {encodeSemctl, decodeSemctl},
	"semget":      {plainArgs, decodeSemget},
	"semop":       {encodeSemop, decodeInt},
	"semtimedop":  {encodeSemop, decodeInt},
	"setgid":      {plainArgs, decodeInt},
	"setpgid":     {plainArgs, decodeInt},
	"setpriority": {plainArgs, decodeInt},
	"setresgid":   {plainArgs, decodeInt},
	"setresuid":   {plainArgs, decodeInt},
	"setrlimit": {func(a callArgs) []int64 { return []int64{a.word(0), a.word(1), a.word(2), a.given(2)} },
		decodeInt},
	"setsid":       {plainArgs, decodePid},
	"setuid":       {plainArgs, decodeInt},
	"sigaction":    {plainArgs, decodeInt},
	"signal":       {func(a callArgs) []int64 { return []int64{a.word(0), a.word(1), 0} }, decodeInt},
	"sigpending":   {plainArgs, decodeSigset},
	"sigprocmask":  {plainArgs, decodeSigset},
	"sigsuspend":   {plainArgs, decodeInt},
	"sigtimedwait": {plainArgs, decodeSignal},
	"tgkill":       {plainArgs, decodeInt},
	"tkill":        {plainArgs, decodeInt},
	"unshare":      {plainArgs, decodeInt},
	"wait4":        {plainArgs, decodeWait4},
	"waitid":       {plainArgs, decodeWaitid},
	"vfork":        {plainArgs, decodeCreated},
}

// callArgs are a call's arguments as the agent gets them.
type callArgs struct {
	b     *Backend
	actor scenario.TaskRef
	c     scenario.Call
}

// word is argument i as a word: a task is its pid as the actor sees it, a set its id, a pidfd
// the number it is open at in the actor's table (one open nowhere when it is not there), and
// an argument the call was not given 0.
func (a callArgs) word(i int) int64 {
	if i >= len(a.c.Args) {
		return 0
	}
	switch v := a.c.Args[i]; v.Kind {
	case scenario.ValueSet:
		return int64(a.b.sets[v.Set])
	case scenario.ValueList:
		return sigsetWord(v.List)
	case scenario.ValueTask:
		return int64(v.Pid(a.b, a.actor))
	case scenario.ValueFile:
		return int64(a.b.fdIn(a.b.tasks[a.actor], v.File))
	default:
		return v.Int
	}
}

// given is 1 if the call was given argument i, else 0.
func (a callArgs) given(i int) int64 {
	if i < len(a.c.Args) {
		return 1
	}
	return 0
}

// plainArgs is every argument as a word, in order.
func plainArgs(a callArgs) []int64 {
	w := make([]int64, len(a.c.Args))
	for i := range w {
		w[i] = a.word(i)
	}
	return w
}

// encode turns a call into the agent's command words.
func (b *Backend) encode(actor scenario.TaskRef, c scenario.Call) ([]int64, error) {
	op, ok := ops[c.Name]
	call, known := agentCalls[c.Name]
	if !ok || !known {
		return nil, fmt.Errorf("unknown call %s", c.Name)
	}
	if n := len(c.Args) - 2; c.Name == "clone3" && n > 0 {
		if levels := b.childLevels(b.tasks[actor], uint64(c.Args[0].Int)); n > levels {
			return nil, scenario.SetTIDBeyondInit(n, levels)
		}
	}
	w := append([]int64{int64(op)}, call.encode(callArgs{b, actor, c})...)
	if len(w) > maxWords {
		return nil, fmt.Errorf("%s: %d words of arguments do not fit in the runner's message (%d at most)", c.Name, len(w), maxWords)
	}
	return w, nil
}

// encodeClone gives the flags, the exit signal and 1 for clone(2), 0 for clone3, as
// scenario.CloneCall decides.
func encodeClone(a callArgs) []int64 {
	flags, sig, clone3 := scenario.CloneCall(a.c.Args)
	if clone3 {
		return []int64{int64(flags), sig, 0}
	}
	return []int64{int64(flags &^ 0xff), sig, 1}
}

// encodeSemop gives the set, the timeout of a semtimedop and the sembufs. More sembufs than a
// command carries are more than SEMOPM: Linux refuses them (E2BIG) by their count, which is
// all the agent passes then.
func encodeSemop(a callArgs) []int64 {
	timeout, hasTimeout, ops := int64(0), int64(0), a.c.Args[len(a.c.Args)-1].Sembufs
	if spec, _ := scenario.LookupCall(a.c.Name); spec.Args[len(spec.Args)-1] == scenario.ArgTimeout {
		timeout, hasTimeout = a.word(1), 1
	}
	carried := ops
	if len(ops) > semopCarry {
		carried = nil
	}
	w := []int64{a.word(0), timeout, hasTimeout, int64(len(ops)), int64(len(carried))}
	for _, s := range carried {
		w = append(w, s.Num, s.Op, s.Flags)
	}
	return w
}

// encodeSemctl gives the set, the number, the command, and the fourth argument's kind (0 none,
// 1 an integer, 2 a list) and value.
func encodeSemctl(a callArgs) []int64 {
	w := []int64{a.word(0), a.word(1), a.word(2)}
	switch {
	case len(a.c.Args) < 4:
		return append(w, 0)
	case a.c.Args[3].Kind == scenario.ValueList:
		// Linux reads as many values as the set has, at most SEMMSL: the rest of a longer
		// list is never read and need not be carried.
		list := a.c.Args[3].List
		list = list[:min(len(list), valuesCarry)]
		w = append(w, 2, int64(len(list)))
		return append(w, packValues(list)...)
	}
	return append(w, 1, a.word(3))
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
	if ret := m.words[0]; ret < 0 {
		closeFds(m)
		return errnoResult(syscall.Errno(-ret)), nil
	}
	return agentCalls[c.Name].decode(b, t, c, m)
}

func decodeInt(_ *Backend, _ *task, _ scenario.Call, m message) (scenario.Result, error) {
	return scenario.Result{Kind: scenario.ResultInt, Int: m.words[0]}, nil
}

// sigsetWord is a list of signals as the kernel's sigset_t: bit sig-1 for signal sig. Only
// a signal set is passed as a list in a plain argument (semctl's value list has an encoder of
// its own).
func sigsetWord(sigs []int64) int64 {
	var set uint64
	for _, sig := range sigs {
		set |= 1 << (sig - 1)
	}
	return int64(set)
}

// decodeSigset is the reply of a call that writes a sigset_t: the set after the return value.
func decodeSigset(_ *Backend, _ *task, _ scenario.Call, m message) (scenario.Result, error) {
	return scenario.Result{Kind: scenario.ResultSigset, Int: m.words[1]}, nil
}

func decodeSignal(_ *Backend, _ *task, _ scenario.Call, m message) (scenario.Result, error) {
	return scenario.Result{Kind: scenario.ResultSignal, Int: m.words[0]}, nil
}

func decodePid(_ *Backend, _ *task, _ scenario.Call, m message) (scenario.Result, error) {
	return scenario.Result{Kind: scenario.ResultPid, Pid: int(m.words[0])}, nil
}

// decodeDone is the reply of a call that ends its task, which it sends only if the call
// returned after all.
func decodeDone(*Backend, *task, scenario.Call, message) (scenario.Result, error) {
	return scenario.Result{Kind: scenario.ResultDone}, nil
}

func decodeCreated(b *Backend, t *task, _ scenario.Call, m message) (scenario.Result, error) {
	return b.created(t, int(m.words[0]), m)
}

// decodeOpened keeps the runner's descriptor of the pidfd the call opened, which names it.
func decodeOpened(b *Backend, _ *task, _ scenario.Call, m message) (scenario.Result, error) {
	if len(m.fds) != 1 {
		closeFds(m)
		return scenario.Result{}, fmt.Errorf("pidfd_open: the agent passed %d descriptors of the pidfd, not 1", len(m.fds))
	}
	return scenario.Result{Kind: scenario.ResultNewFile, NewFile: b.keepFile(m.fds[0])}, nil
}

// decodeLimit reads the limits that follow the return value.
func decodeLimit(_ *Backend, _ *task, _ scenario.Call, m message) (scenario.Result, error) {
	return scenario.Result{Kind: scenario.ResultLimit, Soft: uint64(m.words[1]), Hard: uint64(m.words[2])}, nil
}

// decodeExecve follows a non-leader that took its leader's tid: the reply carries the tid
// the caller has now.
func decodeExecve(b *Backend, t *task, c scenario.Call, m message) (scenario.Result, error) {
	if len(m.words) > 1 {
		b.execed(t, int(m.words[1]))
	}
	return decodeInt(b, t, c, m)
}

// decodeNice turns getpriority's 40..1 back into the nice value, as the C library does.
func decodeNice(_ *Backend, _ *task, _ scenario.Call, m message) (scenario.Result, error) {
	return scenario.Result{Kind: scenario.ResultInt, Int: 20 - m.words[0]}, nil
}

func decodeWait4(_ *Backend, _ *task, _ scenario.Call, m message) (scenario.Result, error) {
	if m.words[0] == 0 {
		return scenario.Result{Kind: scenario.ResultInt}, nil
	}
	return waitStatus(int(m.words[0]), int(m.words[1])), nil
}

func decodeWaitid(_ *Backend, _ *task, _ scenario.Call, m message) (scenario.Result, error) {
	return waitInfo(m.words[1:]), nil
}

// decodeSemget names the set the id stands for, binding a new name for an id not seen before.
func decodeSemget(b *Backend, _ *task, _ scenario.Call, m message) (scenario.Result, error) {
	id := int(m.words[0])
	for ref, known := range b.sets {
		if known == id {
			return scenario.Result{Kind: scenario.ResultNewSet, NewSet: scenario.SetRef(ref), SetID: id}, nil
		}
	}
	b.sets = append(b.sets, id)
	return scenario.Result{Kind: scenario.ResultNewSet, NewSet: scenario.SetRef(len(b.sets) - 1), SetID: id}, nil
}

// decodeSemctl reads GETALL's values, which follow the return value, and GETPID's pid.
func decodeSemctl(_ *Backend, _ *task, c scenario.Call, m message) (scenario.Result, error) {
	switch c.Args[2].Int {
	case abi.GETALL:
		return scenario.Result{Kind: scenario.ResultList, List: unpackValues(m.words[2:], int(m.words[1]))}, nil
	case abi.GETPID:
		return scenario.Result{Kind: scenario.ResultPid, Pid: int(m.words[0])}, nil
	}
	return scenario.Result{Kind: scenario.ResultInt, Int: m.words[0]}, nil
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
	fds := m.fds
	var cloned *scenario.FileRef // the pidfd CLONE_PIDFD opened, the last descriptor passed
	if len(m.words) > 2 && m.words[2] >= 0 && len(fds) > 0 {
		f := b.keepFile(fds[len(fds)-1])
		cloned, fds = &f, fds[:len(fds)-1]
	}
	for _, fd := range fds {
		if tid == 0 {
			tid, _ = pidfdTid(fd)
		}
		unix.Close(fd)
	}
	released := len(m.words) > 1 && m.words[1] == -int64(unix.ESRCH)
	pidfd := len(fds) > 0 || released
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
	res := scenario.Result{Kind: scenario.ResultNewTask, NewTask: b.record(id, err != nil), NewPid: pid}
	if cloned != nil {
		res.NewFile, res.HasFile = *cloned, true
	}
	return res, nil
}

// record returns the task the runner knows as id, recording it if it is new: a child named
// while its vfork parent waited (Made) is recorded before the clone returns.
func (b *Backend) record(id identity, gone bool) scenario.TaskRef {
	for ref, t := range b.tasks {
		if id.tid != 0 && t.tid == id.tid && t.start == id.start {
			return scenario.TaskRef(ref)
		}
	}
	b.tasks = append(b.tasks, &task{identity: id, gone: gone})
	return scenario.TaskRef(len(b.tasks) - 1)
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
