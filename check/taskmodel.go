package check

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"maps"
	"slices"
	"sync"

	"golang.org/x/sys/unix"

	"tasklist/internal/refmodel"
)

// taskState is the reference model of the task calls, with the pids the
// kernel and the model gave each task. Concurrent clones take pids in
// the order they allocate them, which need not be the order in which they
// take effect, so the model's pids are its own and every pid of a call or
// a result is translated. A taskState is never changed once made.
type taskState struct {
	m        *refmodel.Model
	toModel  map[int]int // kernel pid → model tid
	toKernel map[int]int // model tid → kernel pid
	// nices holds the nice values clones in flight copied, by clone.
	nices map[int64]int

	once sync.Once
	hash uint64
}

// unusedPID stands for a kernel pid the model has not heard of: a number
// no round allocates.
const unusedPID = 32000

func (s *taskState) copy() *taskState {
	return &taskState{m: s.m.Copy(), toModel: maps.Clone(s.toModel), toKernel: maps.Clone(s.toKernel), nices: maps.Clone(s.nices)}
}

func (s *taskState) equal(o *taskState) bool {
	return s == o || s.digest() == o.digest() && maps.Equal(s.toModel, o.toModel) && maps.Equal(s.nices, o.nices) && s.m.Equal(o.m)
}

// digest is a hash of the state, computed once.
func (s *taskState) digest() uint64 {
	s.once.Do(func() {
		var b []byte
		for _, k := range slices.Sorted(maps.Keys(s.toModel)) {
			b = binary.AppendVarint(binary.AppendVarint(b, int64(k)), int64(s.toModel[k]))
		}
		for _, k := range slices.Sorted(maps.Keys(s.nices)) {
			b = binary.AppendVarint(binary.AppendVarint(b, k), int64(s.nices[k]))
		}
		h := fnv.New64a()
		h.Write(b)
		s.hash = h.Sum64() ^ s.m.Hash()
	})
	return s.hash
}

// tid translates a kernel pid; 0 and negative numbers stay.
func (s *taskState) tid(nr int) int {
	if nr <= 0 {
		return nr
	}
	if t, ok := s.toModel[nr]; ok {
		return t
	}
	return unusedPID
}

// selector translates a pid argument that names a group when negative;
// -1 (everyone) stays.
func (s *taskState) selector(nr int) int {
	if nr < -1 {
		return -s.tid(-nr)
	}
	if nr == -1 {
		return -1
	}
	return s.tid(nr)
}

// pid translates a model tid back to the kernel's number; ok is false
// for a task the kernel never made.
func (s *taskState) pid(tid int) (int, bool) {
	if tid == 0 {
		return 0, true
	}
	nr, ok := s.toKernel[tid]
	return nr, ok
}

// step applies c to the model and reports whether the model can return
// what the kernel returned, o, with the state after.
func (s *taskState) step(c call, o outcome) (bool, *taskState) {
	if o.hung {
		return true, s // drawn only: a hang is reported on its own
	}
	want, n := s.apply(c, o)
	if !o.matches(c, want) {
		return false, s
	}
	return true, n
}

// matches reports whether the kernel's result o is the model's, want.
func (o outcome) matches(c call, want outcome) bool {
	switch {
	case !sameErr(o.err, want.err):
		return false
	case c.kind == kObserve:
		return slices.Equal(o.obs, want.obs)
	case c.kind == kWait4 || c.kind == kWaitid:
		return o.val == want.val && o.status == want.status && (o.val == 0 || o.code == want.code)
	case c.kind == kClone, c.kind == kCloneNice:
		return true // the kernel's pid is the model's by translation
	}
	return o.val == want.val
}

// apply makes c on a copy of the model and returns what the model
// returns, with pids translated to the kernel's, and the state after. The
// kernel's result o gives a clone's pid; a pid the model gives that the
// kernel never made is returned as -1.
func (s *taskState) apply(c call, o outcome) (outcome, *taskState) {
	if c.kind == kObserve {
		return s.applyTo(s, c, o), s
	}
	n := s.copy()
	return s.applyTo(n, c, o), n
}

// applyTo makes c on n, which is s or a copy of it, and returns what the
// model returns.
func (s *taskState) applyTo(n *taskState, c call, o outcome) outcome {
	var want outcome
	if c.kind == kObserve {
		var ok bool
		if want.obs, ok = observeModel(s, c.pids); !ok {
			want.err = errUnknownTask
		}
		return want
	}
	m := n.m
	tid := n.tid(c.caller)
	pid := func(tid int) int {
		if nr, ok := n.pid(tid); ok {
			return nr
		}
		return -1
	}
	switch c.kind {
	case kCloneNice:
		if n.nices == nil {
			n.nices = map[int64]int{}
		}
		in, _ := m.Info(tid)
		n.nices[c.seq] = in.Nice
	case kClone:
		nice, copied := n.nices[c.seq]
		if !copied {
			want.err = errNotCopied
			break
		}
		delete(n.nices, c.seq)
		var child int
		child, _, want.err = m.Clone(tid, c.flags, c.arg)
		if want.err == nil && o.err == nil {
			if _, used := n.toModel[o.val]; used {
				want.err = errUnknownTask // the kernel gave a pid twice
				break
			}
			n.toModel[o.val], n.toKernel[child] = child, o.val
			// The child has the nice value the clone copied earlier,
			// set as init (which may set any) would set it.
			m.Setpriority(1, unix.PRIO_PROCESS, child, nice)
		}
	case kExit:
		want.err = m.Exit(tid, c.arg)
	case kExitGroup:
		want.err = m.ExitGroup(tid, c.arg)
	case kWait4, kWaitid:
		var r refmodel.WaitResult
		if c.kind == kWait4 {
			r, want.err = m.Wait4(tid, n.selector(c.pid), c.opts)
		} else {
			id := c.pid
			if c.arg != unix.P_ALL {
				id = n.tid(id)
			}
			r, want.err = m.Waitid(tid, c.arg, id, c.opts)
		}
		want.val, want.status, want.code = pid(r.Pid), r.Status, r.Code
	case kSetpgid:
		want.err = m.Setpgid(tid, n.tid(c.pid), n.tid(c.pgid))
	case kSetsid:
		var sid int
		sid, want.err = m.Setsid(tid)
		want.val = pid(sid)
	case kKill:
		want.err = m.Kill(tid, n.selector(c.pid), c.arg)
	case kGetpriority, kSetpriority:
		who := c.pid
		if c.arg != unix.PRIO_USER {
			who = n.tid(who)
		}
		if c.kind == kSetpriority {
			want.err = m.Setpriority(tid, c.arg, who, c.arg2)
		} else {
			want.val, want.err = m.Getpriority(tid, c.arg, who)
		}
	case kTraceme:
		want.err = m.Ptrace(tid, unix.PTRACE_TRACEME, 0, 0, 0)
	case kSetresuid:
		want.err = m.Setresuid(tid, c.arg, c.arg, c.arg)
	}
	if errors.Is(want.err, refmodel.ErrInitExit) {
		want.err = errInitExit
	}
	return want
}

// errNotCopied is the model's result for a clone ordered before its copy
// of nice, which cannot be.
var errNotCopied = errors.New("a clone before its copy of nice")

// errUnknownTask is the model's result where the kernel names a task the
// model does not know.
var errUnknownTask = errors.New("a task the model does not know")

// sameErr reports whether the kernel's error and the model's are the
// same result.
func sameErr(kerr, merr error) bool {
	if kerr == nil || merr == nil {
		return kerr == nil && merr == nil
	}
	return errors.Is(kerr, merr)
}
