package check

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"golang.org/x/sys/unix"

	"tasklist/internal/refmodel"
)

// record is one operation of a history: who made it, what it returned,
// and when it began and ended on the round's logical clock.
type record struct {
	client     int
	c          call
	o          outcome
	start, end int64
	// race is the step's rendezvous: the other call of the race started
	// with it.
	race int
	// final marks the steps made after the burst: removing the sets,
	// observing the table.
	final bool
}

func (r record) String() string {
	s := fmt.Sprintf("[%4d,%4d] %s", r.start, r.end, describe(r.c, r.o))
	if r.race != 0 {
		s += fmt.Sprintf("   (race %d)", r.race)
	}
	return s
}

// describe writes an operation as "call = result"; the sightings that are
// not calls have no result.
func describe(c call, o outcome) string {
	if c.kind == kSemAsleep || c.kind == kCloneNice {
		return c.String()
	}
	return fmt.Sprintf("%s = %s", c, o)
}

// sortedByStart returns rs in the order the calls began.
func sortedByStart(rs []record) []record {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b record) int { return int(a.start - b.start) })
	return rs
}

// state is the model's state for porcupine: the task model and the
// semaphore model, which the partitions step separately.
type state struct {
	tasks *taskState
	sems  semState
}

func (s *state) step(c call, o outcome) (bool, *state) {
	if c.kind.semaphore() {
		ok, sems := s.sems.step(c, o)
		return ok, &state{tasks: s.tasks, sems: sems}
	}
	ok, tasks := s.tasks.step(c, o)
	return ok, &state{tasks: tasks, sems: s.sems}
}

// initialState steps the setup's records, which ran one at a time, through
// the model; it fails at the first the model cannot return. The task
// calls are made on one model, which no other state shares.
func initialState(setup []record) (*state, error) {
	tasks := &taskState{m: refmodel.New(refmodel.Config{}), toModel: map[int]int{1: 1}, toKernel: map[int]int{1: 1}}
	s := &state{tasks: tasks}
	for _, op := range operations(setup) {
		c, o := op.Input.(call), op.Output.(outcome)
		ok := true
		if c.kind.semaphore() {
			ok, s.sems = s.sems.step(c, o)
		} else {
			ok = o.matches(c, tasks.applyTo(tasks, c, o))
		}
		if !ok {
			return nil, fmt.Errorf("the setup's %s = %s differs from the model's", c, o)
		}
	}
	return s, nil
}

// porcupineModel is the model of a round whose setup left init.
func porcupineModel(init *state) porcupine.Model {
	return porcupine.Model{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation { return partition(init, h) },
		Init:      func() any { return init },
		Step: func(st, in, out any) (bool, any) {
			return st.(*state).step(in.(call), out.(outcome))
		},
		Equal: func(a, b any) bool {
			x, y := a.(*state), b.(*state)
			return x.tasks.equal(y.tasks) && x.sems.equal(y.sems)
		},
		Hash: func(st any) uint64 {
			s := st.(*state)
			return s.tasks.digest() ^ s.sems.hash()
		},
		DescribeOperation: func(in, out any) string { return describe(in.(call), out.(outcome)) },
		DescribeState: func(st any) string {
			s := st.(*state)
			var b strings.Builder
			if o, ok := observeModel(s.tasks, nil); ok {
				b.WriteString(o.String())
			}
			for _, id := range slices.Sorted(maps.Keys(s.sems.sets)) {
				set := s.sems.sets[id]
				fmt.Fprintf(&b, "; set %d %v", id, set.vals)
				if set.removed {
					b.WriteString(" removed")
				}
			}
			return b.String()
		},
	}
}

// partition splits a history into partitions whose calls commute with
// every other partition's: the task calls of each part of the table (the
// workers' tasks, and each race's own), and the calls on each family of
// semaphore sets (the sets of one key, or one private set). Each part has
// its own final observation, of its own tasks. init holds the sets the
// setup made.
func partition(init *state, h []porcupine.Operation) [][]porcupine.Operation {
	family := map[int]string{} // set id → family
	for id, set := range init.sems.sets {
		family[id] = semFamily(set.key, id)
	}
	for _, op := range h {
		c, o := op.Input.(call), op.Output.(outcome)
		if c.kind == kSemget && o.err == nil {
			family[o.val] = semFamily(c.arg, o.val)
		}
	}
	tasks := map[int][]porcupine.Operation{}
	sems := map[string][]porcupine.Operation{}
	var order []string
	for _, op := range h {
		c := op.Input.(call)
		if !c.kind.semaphore() {
			tasks[c.part] = append(tasks[c.part], op)
			continue
		}
		var f string
		if c.kind == kSemget {
			f = semFamily(c.arg, op.Output.(outcome).val)
		} else if f = family[c.id]; f == "" {
			f = semFamily(unix.IPC_PRIVATE, c.id)
		}
		if sems[f] == nil {
			order = append(order, f)
		}
		sems[f] = append(sems[f], op)
	}
	var out [][]porcupine.Operation
	for _, part := range slices.Sorted(maps.Keys(tasks)) {
		out = append(out, tasks[part])
	}
	for _, f := range order {
		out = append(out, sems[f])
	}
	return out
}

func semFamily(key, id int) string {
	if key == unix.IPC_PRIVATE {
		return fmt.Sprintf("id %d", id)
	}
	return fmt.Sprintf("key %#x", key)
}

// linearizable checks the burst's records against the model from init.
// It returns porcupine's verdict and what the visualisation needs; ok is
// false when ctx ended first, and the check is then left to run out its
// timeout in the background.
func linearizable(ctx context.Context, init *state, burst []record, timeout time.Duration) (
	porcupine.CheckResult, porcupine.Model, porcupine.LinearizationInfo, bool) {
	model := porcupineModel(init)
	type verdict struct {
		res  porcupine.CheckResult
		info porcupine.LinearizationInfo
	}
	done := make(chan verdict, 1)
	go func() {
		res, info := porcupine.CheckOperationsVerbose(model, operations(burst), timeout)
		done <- verdict{res, info}
	}()
	select {
	case v := <-done:
		return v.res, model, v.info, true
	case <-ctx.Done():
		return porcupine.Unknown, model, porcupine.LinearizationInfo{}, false
	}
}

// operations makes records porcupine's operations: one each, and for a
// clone a second one, its copy of the caller's nice value, over the same
// interval. An operation's metadata is its race (record.race).
func operations(rs []record) []porcupine.Operation {
	var ops []porcupine.Operation
	for _, r := range rs {
		c := r.c
		if c.kind == kSemop && c.sleeps {
			c.seq = r.start
		}
		if c.kind == kClone {
			c.seq = r.start
			copy := call{kind: kCloneNice, caller: c.caller, seq: r.start}
			ops = append(ops, porcupine.Operation{ClientId: r.client, Input: copy, Output: outcome{}, Call: r.start, Return: r.end,
				Metadata: r.race})
		}
		ops = append(ops, porcupine.Operation{ClientId: r.client, Input: c, Output: r.o, Call: r.start, Return: r.end,
			Metadata: r.race})
	}
	return ops
}
