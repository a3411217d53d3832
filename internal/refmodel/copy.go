package refmodel

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"maps"
	"reflect"
	"slices"
)

// Copy returns a deep copy of m: calls on either leave the other as it
// was. A linearizability checker uses it to try several orders of the
// same calls from one state.
func (m *Model) Copy() *Model {
	c := &copier{
		nss:   map[*namespace]*namespace{},
		pids:  map[*pid]*pid{},
		tasks: map[*task]*task{},
		procs: map[*process]*process{},
		hands: map[*sighand]*sighand{},
	}
	n := &Model{
		cfg: m.cfg, nproc: maps.Clone(m.nproc), nthreads: m.nthreads, seq: m.seq,
		hits: maps.Clone(m.hits), PdeathDenied: m.PdeathDenied,
	}
	for _, ns := range m.nss {
		n.nss = append(n.nss, c.namespace(ns))
	}
	n.root, n.init = c.namespace(m.root), c.task(m.init)
	n.tasks = make(map[int]*task, len(m.tasks))
	for tid, t := range m.tasks {
		n.tasks[tid] = c.task(t)
	}
	n.queue = mapSlice(m.queue, c.task)
	n.stoppers = mapSlice(m.stoppers, c.process)
	n.zappers = mapSlice(m.zappers, c.process)
	return n
}

// copier copies the model's object graph, each object once, so that
// sharing (a thread group's sighand, a pid named by several processes as
// their group) is kept.
type copier struct {
	nss   map[*namespace]*namespace
	pids  map[*pid]*pid
	tasks map[*task]*task
	procs map[*process]*process
	hands map[*sighand]*sighand
}

// memo returns the copy of x in seen, making it first if there is none:
// a shallow copy whose pointers fill then redirects into the new graph.
func memo[T any](seen map[*T]*T, x *T, fill func(n *T)) *T {
	if x == nil {
		return nil
	}
	if n, ok := seen[x]; ok {
		return n
	}
	n := new(T)
	*n = *x
	seen[x] = n // before fill, so that cycles end here
	fill(n)
	return n
}

func (c *copier) namespace(ns *namespace) *namespace {
	return memo(c.nss, ns, func(n *namespace) {
		n.parent = c.namespace(ns.parent)
		n.pids = make(map[int]*pid, len(ns.pids))
		for nr, p := range ns.pids {
			n.pids[nr] = c.pid(p)
		}
		n.reaper = c.task(ns.reaper)
	})
}

func (c *copier) pid(p *pid) *pid {
	return memo(c.pids, p, func(n *pid) {
		n.ns = c.namespace(p.ns)
		n.nrs = slices.Clone(p.nrs)
		n.task = c.task(p.task)
	})
}

func (c *copier) task(t *task) *task {
	return memo(c.tasks, t, func(n *task) {
		n.pid = c.pid(t.pid)
		n.proc = c.process(t.proc)
		n.children = mapSlice(t.children, c.process)
	})
}

func (c *copier) process(pr *process) *process {
	return memo(c.procs, pr, func(n *process) {
		n.leader = c.task(pr.leader)
		n.threads = mapSlice(pr.threads, c.task)
		n.ns = c.namespace(pr.ns)
		n.parent = c.task(pr.parent)
		n.sighand = c.sighand(pr.sighand)
		n.pgrp, n.sess = c.pid(pr.pgrp), c.pid(pr.sess)
		n.zapping = c.task(pr.zapping)
		n.tracer = c.task(pr.tracer)
	})
}

// sighand copies a handler table; act is an array, copied by value.
func (c *copier) sighand(h *sighand) *sighand {
	return memo(c.hands, h, func(*sighand) {})
}

func mapSlice[T any](s []T, f func(T) T) []T {
	if s == nil {
		return nil
	}
	out := make([]T, len(s))
	for i, x := range s {
		out[i] = f(x)
	}
	return out
}

// Equal reports whether m and o are in the same state: every task,
// process, pid and namespace alike, with the same sharing between them,
// so that any call made on both returns the same result. The counts of
// which rules fired (which do not affect results) are not compared.
func (m *Model) Equal(o *Model) bool {
	return slices.Equal(m.fingerprint(), o.fingerprint())
}

// Hash returns a hash of m's state; models that are Equal have the same
// hash. It reads a few fields of each task, so that it is cheap next to
// Equal, which compares everything.
func (m *Model) Hash() uint64 {
	h := mix(uint64(m.seq), uint64(m.nthreads), uint64(len(m.queue)), uint64(len(m.nss)))
	nr := func(p *pid) uint64 {
		if p == nil {
			return 0
		}
		return uint64(p.nrs[0])
	}
	tid := func(t *task) uint64 {
		if t == nil {
			return 0
		}
		return nr(t.pid)
	}
	for id, t := range m.tasks {
		pr := t.proc
		// A sum: the map's order does not matter.
		h += mix(uint64(id), uint64(t.state), uint64(t.exitCode), uint64(t.nice), uint64(len(t.children)),
			uint64(t.serial), tid(pr.leader), tid(pr.parent), tid(pr.tracer), nr(pr.pgrp), nr(pr.sess),
			uint64(pr.exitState), uint64(pr.live), uint64(pr.ptStop), uint64(pr.exitCode))
	}
	return h
}

// mix hashes a few words (FNV-1a over their bytes).
func mix(words ...uint64) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, w := range words {
		binary.LittleEndian.PutUint64(b[:], w)
		h.Write(b[:])
	}
	return h.Sum64()
}

// fingerprint encodes the whole state canonically: the object graph is
// walked from the model in a fixed order (maps by sorted key), every
// field is written, and an object met again is written as a reference to
// its first visit. Two models have the same fingerprint exactly when
// their graphs are the same up to the identity of their objects.
func (m *Model) fingerprint() []byte {
	e := &encoder{seen: map[uintptr]int{}}
	e.value(reflect.ValueOf(m).Elem(), true)
	return e.buf
}

type encoder struct {
	buf  []byte
	seen map[uintptr]int
}

func (e *encoder) int(x int64) { e.buf = binary.AppendVarint(e.buf, x) }

// value encodes v; top is set for the Model itself, whose rule counts
// are skipped.
func (e *encoder) value(v reflect.Value, top bool) {
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			e.int(1)
		} else {
			e.int(0)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.int(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.buf = binary.AppendUvarint(e.buf, v.Uint())
	case reflect.String:
		e.int(int64(v.Len()))
		e.buf = append(e.buf, v.String()...)
	case reflect.Pointer:
		if v.IsNil() {
			e.int(-1)
			return
		}
		if id, ok := e.seen[v.Pointer()]; ok {
			e.int(int64(id))
			return
		}
		e.seen[v.Pointer()] = len(e.seen)
		e.int(-2)
		e.value(v.Elem(), false)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			e.int(-1)
			return
		}
		e.int(int64(v.Len()))
		for i := range v.Len() {
			e.value(v.Index(i), false)
		}
	case reflect.Map:
		if v.IsNil() {
			e.int(-1)
			return
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, compareKeys)
		e.int(int64(len(keys)))
		for _, k := range keys {
			e.value(k, false)
			e.value(v.MapIndex(k), false)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if top && v.Type().Field(i).Name == "hits" {
				continue
			}
			e.value(v.Field(i), false)
		}
	default:
		panic(fmt.Sprintf("refmodel: fingerprint cannot encode %s", v.Type()))
	}
}

// compareKeys orders map keys, which are integers or strings in the model.
func compareKeys(a, b reflect.Value) int {
	switch a.Kind() {
	case reflect.String:
		return cmp.Compare(a.String(), b.String())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return cmp.Compare(a.Uint(), b.Uint())
	}
	return cmp.Compare(a.Int(), b.Int())
}
