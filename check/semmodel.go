package check

import (
	"errors"
	"maps"
	"slices"

	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
)

// The sequential model of the semaphore calls the checker makes (ipc/sem.c
// with Linux's default limits, as root): sets by the kernel's ids, their
// values, and which ids are removed. A semop that would sleep takes effect
// when it can proceed, so the model takes it only in a state where it can;
// one that times out takes effect in a state where it cannot. A sleeper
// seen asleep (kSemAsleep) is on its set's queue from then on, as in
// Linux: the call that lets it proceed completes it (update_queue), a
// removal fails it with EIDRM (freeary), and its own return must say so.

// semVMX is SEMVMX, Linux's largest semaphore value.
const semVMX = 32767

// semSet is one set: its key and values, whether it was removed, and its
// sleepers seen asleep, in the order they queued.
type semSet struct {
	key     int
	vals    []int
	removed bool
	queue   []queued
}

// queued is a sleeper on a set's queue: its semop's seq and operations.
type queued struct {
	seq  int64
	sops []sem.Sembuf
}

// semState is every set a round knows of. It is never changed once made.
type semState struct {
	sets map[int]semSet // by id
	keys map[int]int    // key → id of its live set
	// woken holds the result of each queued sleeper that a call
	// completed or a removal failed, by seq, until its semop returns.
	woken map[int64]error
}

func (s semState) equal(o semState) bool {
	return maps.Equal(s.keys, o.keys) && maps.Equal(s.woken, o.woken) && maps.EqualFunc(s.sets, o.sets, func(a, b semSet) bool {
		return a.key == b.key && a.removed == b.removed && slices.Equal(a.vals, b.vals) &&
			slices.EqualFunc(a.queue, b.queue, func(x, y queued) bool { return x.seq == y.seq })
	})
}

func (s semState) hash() uint64 {
	h := uint64(len(s.sets)) + uint64(len(s.woken))<<32
	for id, set := range s.sets { // order-free: a sum of per-set hashes
		x := uint64(id) * 0x9e3779b97f4a7c15
		for _, v := range set.vals {
			x = (x ^ uint64(v)) * 0x100000001b3
		}
		x += uint64(len(set.queue))
		if set.removed {
			x = ^x
		}
		h += x
	}
	return h
}

// with returns s with set id replaced by set; woken, if not nil, replaces
// s.woken.
func (s semState) with(id int, set semSet, woken map[int64]error) semState {
	n := semState{sets: maps.Clone(s.sets), keys: maps.Clone(s.keys), woken: s.woken}
	if woken != nil {
		n.woken = woken
	}
	if n.sets == nil {
		n.sets = map[int]semSet{}
	}
	if n.keys == nil {
		n.keys = map[int]int{}
	}
	n.sets[id] = set
	if set.key != unix.IPC_PRIVATE {
		if set.removed {
			delete(n.keys, set.key)
		} else {
			n.keys[set.key] = id
		}
	}
	return n
}

// gone reports whether err is what a call on a removed set returns: EINVAL
// once the id is unpublished, EIDRM when the call found the set before.
func gone(err error) bool { return err == unix.EINVAL || err == unix.EIDRM }

// step applies c and reports whether the model can return o.
func (s semState) step(c call, o outcome) (bool, semState) {
	if o.hung {
		return true, s // drawn only: a hang is reported on its own
	}
	if c.kind == kSemget {
		return s.semget(c, o)
	}
	if c.kind == kSemop && c.sleeps {
		if res, done := s.woken[c.seq]; done {
			// Seen asleep, then completed or failed by another call.
			woken := maps.Clone(s.woken)
			delete(woken, c.seq)
			return sameErr(o.err, res), semState{sets: s.sets, keys: s.keys, woken: woken}
		}
		if s.queued(c.seq) {
			return false, s // still asleep: it cannot have returned
		}
	}
	set, known := s.sets[c.id]
	switch {
	case !known:
		return o.err == unix.EINVAL, s
	case set.removed:
		return c.kind != kSemAsleep && gone(o.err), s
	}
	switch {
	case c.kind == kSemAsleep:
		if _, err := applySemop(set.vals, c.sops); err != errWouldSleep {
			return false, s
		}
		set.queue = append(slices.Clone(set.queue), queued{seq: c.seq, sops: c.sops})
		return true, s.with(c.id, set, nil)
	case c.kind == kSemop:
		vals, err := applySemop(set.vals, c.sops)
		switch {
		case err == nil:
			set.vals = vals
			return o.err == nil, s.changed(c.id, set)
		case err == errWouldSleep:
			// A call that sleeps returns only once a waker completes it or
			// the set goes; one with a timeout may time out here.
			return c.timed && o.err == unix.EAGAIN, s
		default:
			return o.err == err, s
		}
	case c.arg == sem.GETALL:
		return o.err == nil && slices.Equal(o.vals, set.vals), s
	case c.arg == sem.SETVAL:
		set.vals = slices.Clone(set.vals)
		set.vals[c.arg2] = c.arg3
		return o.err == nil, s.changed(c.id, set)
	default: // IPC_RMID fails every sleeper with EIDRM
		woken := maps.Clone(s.woken)
		for _, q := range set.queue {
			woken = withResult(woken, q.seq, unix.EIDRM)
		}
		set.removed, set.queue = true, nil
		return o.err == nil, s.with(c.id, set, woken)
	}
}

// changed returns s with set id's values changed to set's, and the
// sleepers that can now proceed completed in queue order, each one's
// operations applied, as update_queue does.
func (s semState) changed(id int, set semSet) semState {
	woken := s.woken
	for i := 0; i < len(set.queue); {
		q := set.queue[i]
		vals, err := applySemop(set.vals, q.sops)
		if err != nil {
			i++
			continue
		}
		set.vals = vals
		set.queue = slices.Delete(slices.Clone(set.queue), i, i+1)
		woken = withResult(maps.Clone(woken), q.seq, nil)
		i = 0 // a completed sleeper's change may let an earlier one proceed
	}
	return s.with(id, set, woken)
}

// queued reports whether the sleeper seq is on a set's queue.
func (s semState) queued(seq int64) bool {
	for _, set := range s.sets {
		for _, q := range set.queue {
			if q.seq == seq {
				return true
			}
		}
	}
	return false
}

func withResult(m map[int64]error, seq int64, err error) map[int64]error {
	if m == nil {
		m = map[int64]error{}
	}
	m[seq] = err
	return m
}

// semget is ipcget: a private key or IPC_CREAT of an unused key makes a
// set with a new id; an existing key's set is returned unless IPC_EXCL.
func (s semState) semget(c call, o outcome) (bool, semState) {
	if id, ok := s.keys[c.arg]; ok && c.arg != unix.IPC_PRIVATE {
		switch {
		case c.arg3&unix.IPC_CREAT != 0 && c.arg3&unix.IPC_EXCL != 0:
			return o.err == unix.EEXIST, s
		case c.arg2 > len(s.sets[id].vals):
			return o.err == unix.EINVAL, s
		}
		return o.err == nil && o.val == id, s
	}
	if c.arg != unix.IPC_PRIVATE && c.arg3&unix.IPC_CREAT == 0 {
		return o.err == unix.ENOENT, s
	}
	if _, used := s.sets[o.val]; used || o.err != nil {
		return false, s
	}
	return true, s.with(o.val, semSet{key: c.arg, vals: make([]int, c.arg2)}, nil)
}

// errWouldSleep is applySemop's verdict on a call that must wait.
var errWouldSleep = errors.New("would sleep")

// applySemop applies ops in order, all or nothing, as perform_atomic_semop
// does: it returns the new values, or errWouldSleep, EAGAIN (the blocking
// operation has IPC_NOWAIT) or ERANGE.
func applySemop(vals []int, ops []sem.Sembuf) ([]int, error) {
	vals = slices.Clone(vals)
	for _, op := range ops {
		v := vals[op.Num] + int(op.Op)
		switch {
		case op.Op == 0 && vals[op.Num] != 0 || v < 0:
			if op.Flg&unix.IPC_NOWAIT != 0 {
				return nil, unix.EAGAIN
			}
			return nil, errWouldSleep
		case v > semVMX:
			return nil, unix.ERANGE
		}
		vals[op.Num] = v
	}
	return vals, nil
}
