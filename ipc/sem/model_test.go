package sem

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"golang.org/x/sys/unix"

	"tasklist/plan"
)

// The porcupine model of one set: modelSems semaphores and the undo
// adjustments of modelClients processes. Small SEMVMX and SEMAEM make
// ERANGE reachable.
const (
	modelSems    = 3
	modelClients = 4
	modelVMX     = 4
	modelAEM     = 3
)

type modelState struct {
	vals [modelSems]int
	adj  [modelClients][modelSems]int
}

type modelKind int

const (
	kSemop      modelKind = iota // IPC_NOWAIT on every op
	kSemtimedop                  // sleeps, with a short timeout
	kSetval
	kGetall
	kExit // the client's undo list is released and replaced
)

type modelInput struct {
	kind     modelKind
	client   int
	ops      []Sembuf
	num, val int
}

type modelOutput struct {
	err  error
	vals [modelSems]int
}

// apply evaluates ops sequentially on st for client, as perform does.
// It returns the new state and nil, errBlocks, or ERANGE.
func (st modelState) apply(client int, ops []Sembuf) (modelState, error) {
	for _, o := range ops {
		v := st.vals[o.Num] + int(o.Op)
		if o.Op == 0 && st.vals[o.Num] != 0 || v < 0 {
			return st, errBlocks
		}
		if v > modelVMX {
			return st, unix.ERANGE
		}
		if o.Flg&SEM_UNDO != 0 {
			a := st.adj[client][o.Num] - int(o.Op)
			if a < -modelAEM-1 || a > modelAEM {
				return st, unix.ERANGE
			}
			st.adj[client][o.Num] = a
		}
		st.vals[o.Num] = v
	}
	return st, nil
}

var errBlocks = errors.New("blocks")

var semModel = porcupine.Model{
	Init: func() any { return modelState{} },
	Step: func(state, input, output any) (bool, any) {
		st, in, out := state.(modelState), input.(modelInput), output.(modelOutput)
		switch in.kind {
		case kSemop, kSemtimedop:
			next, err := st.apply(in.client, in.ops)
			switch {
			case err == nil:
				return out.err == nil, next
			case err == errBlocks:
				// A timed-out sleeper leaves its queue only while it
				// still cannot proceed, or a waker would have completed it.
				return out.err == unix.EAGAIN, st
			default:
				return out.err == err, st
			}
		case kSetval:
			st.vals[in.num] = in.val
			for c := range st.adj {
				st.adj[c][in.num] = 0
			}
			return out.err == nil, st
		case kGetall:
			return out.err == nil && out.vals == st.vals, st
		default: // kExit
			for i, a := range st.adj[in.client] {
				if a != 0 {
					st.vals[i] = min(max(st.vals[i]+a, 0), modelVMX)
				}
			}
			st.adj[in.client] = [modelSems]int{}
			return true, st
		}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(modelInput), output.(modelOutput)
		return fmt.Sprintf("c%d kind%d %v num%d val%d -> %v %v", in.client, in.kind, in.ops, in.num, in.val, out.err, out.vals)
	},
}

func randomOps(r *rand.Rand, nowait bool) []Sembuf {
	ops := make([]Sembuf, 1+r.IntN(2))
	for i := range ops {
		o := Sembuf{Num: uint16(r.IntN(modelSems)), Op: int16(r.IntN(5) - 2)}
		if r.IntN(3) == 0 {
			o.Flg |= SEM_UNDO
		}
		if nowait {
			o.Flg |= unix.IPC_NOWAIT
		}
		ops[i] = o
	}
	return ops
}

// TestModelLinearizable runs random concurrent histories against one set
// and checks with porcupine that they are linearizable with respect to the
// sequential model: all-or-nothing operations, values, ERANGE, undo
// adjustments and exits, and sleepers completed only when they can proceed.
func TestModelLinearizable(t *testing.T) { eachLocking(t, testModelLinearizable) }

func testModelLinearizable(t *testing.T, lk plan.SemLocking) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { checkHistory(t, lk, seed) })
	}
}

func checkHistory(t *testing.T, lk plan.SemLocking, seed uint64) {
	l := DefaultLimits()
	l.SEMVMX, l.SEMAEM = modelVMX, modelAEM
	ns := NewNamespaceLocking(l, lk)
	root := rootCaller()
	id := mustGet(t, ns, root, unix.IPC_PRIVATE, modelSems, 0o600)

	var clock atomic.Int64
	var mu sync.Mutex
	var history []porcupine.Operation
	var wg sync.WaitGroup
	for client := range modelClients {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(client)))
			c := rootCaller()
			for range 40 {
				in := modelInput{kind: modelKind(r.IntN(10)), client: client}
				switch {
				case in.kind < 4:
					in.kind = kSemop
				case in.kind < 7:
					in.kind = kSemtimedop
				case in.kind == 7:
					in.kind = kSetval
				case in.kind == 8:
					in.kind = kGetall
				default:
					in.kind = kExit
				}
				var out modelOutput
				call := clock.Add(1)
				switch in.kind {
				case kSemop:
					in.ops = randomOps(r, true)
					out.err = ns.Semop(context.Background(), c, id, in.ops)
				case kSemtimedop:
					in.ops = randomOps(r, false)
					out.err = ns.Semtimedop(context.Background(), c, id, in.ops, &unix.Timespec{Nsec: int64(r.IntN(3)+1) * 1e6})
				case kSetval:
					in.num, in.val = r.IntN(modelSems), r.IntN(modelVMX+1)
					_, out.err = ns.Semctl(c, id, in.num, SETVAL, Semun{Val: in.val})
				case kGetall:
					a := make([]uint16, modelSems)
					_, out.err = ns.Semctl(c, id, 0, GETALL, Semun{Array: a})
					for i, v := range a {
						out.vals[i] = int(v)
					}
					if msg := stranded(ns.mustObtain(t, id)); msg != "" {
						t.Error(msg)
					}
				case kExit:
					c.Undo.Release(c.PID)
					c = rootCaller()
				}
				ret := clock.Add(1)
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
			// Exit, so the final GETALL below sees every adjustment applied.
			call := clock.Add(1)
			c.Undo.Release(c.PID)
			ret := clock.Add(1)
			mu.Lock()
			history = append(history, porcupine.Operation{ClientId: client, Input: modelInput{kind: kExit, client: client}, Call: call, Output: modelOutput{}, Return: ret})
			mu.Unlock()
		})
	}
	wg.Wait()
	a := make([]uint16, modelSems)
	mustCtl(t, ns, root, id, 0, GETALL, Semun{Array: a})
	out := modelOutput{}
	for i, v := range a {
		out.vals[i] = int(v)
	}
	call := clock.Add(1)
	history = append(history, porcupine.Operation{ClientId: 0, Input: modelInput{kind: kGetall}, Call: call, Output: out, Return: clock.Add(1)})

	res, info := porcupine.CheckOperationsVerbose(semModel, history, 20*time.Second)
	switch res {
	case porcupine.Illegal:
		t.Errorf("history of %d operations is not linearizable", len(history))
		if f := t.TempDir() + "/history.html"; porcupine.VisualizePath(semModel, info, f) == nil {
			t.Logf("visualization: %s", f)
		}
	case porcupine.Unknown:
		t.Logf("porcupine timed out on %d operations", len(history))
	}
}
