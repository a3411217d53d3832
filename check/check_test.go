package check

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"golang.org/x/sys/unix"

	"tasklist/ipc/sem"
	"tasklist/kernel"
	"tasklist/plan"
)

// TestSafePlansPass runs a short check under the default plan and under a
// big-lock preset: nothing may be found.
func TestSafePlansPass(t *testing.T) {
	for _, name := range []string{"scalable", "linux-2.6.35"} {
		t.Run(name, func(t *testing.T) {
			rep, err := Run(context.Background(), Options{Plan: plan.MustParse(name, false),
				Duration: 2500 * time.Millisecond, Shrink: -1})
			if err != nil {
				t.Fatal(err)
			}
			if v := rep.Violation; v != nil {
				t.Fatalf("%s: %s\n%s", v.Kind, v.Message, v.History())
			}
			if rep.Rounds == 0 || rep.Ops == 0 {
				t.Fatalf("no round ran: %+v", rep)
			}
			t.Logf("%d rounds, %d operations, %d undecided", rep.Rounds, rep.Ops, rep.Undecided)
		})
	}
}

// TestScheduleReplays requires a seed to draw the same schedule every
// time, and another seed another.
func TestScheduleReplays(t *testing.T) {
	a, b := newSchedule(7, 4, 5), newSchedule(7, 4, 5)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("one seed drew two schedules")
	}
	if reflect.DeepEqual(a, newSchedule(8, 4, 5)) {
		t.Fatal("two seeds drew one schedule")
	}
}

// history builds a round by hand: setup records made one at a time, then
// burst records with explicit times.
type history struct {
	clock int64
	setup []record
}

func (h *history) seq(c call, o outcome) {
	h.clock += 2
	h.setup = append(h.setup, record{c: c, o: o, start: h.clock - 1, end: h.clock})
}

func judge(t *testing.T, h *history, burst []record) porcupine.CheckResult {
	t.Helper()
	init, err := initialState(h.setup)
	if err != nil {
		t.Fatal(err)
	}
	res, _, _, _ := linearizable(context.Background(), init, burst, 10*time.Second)
	return res
}

// A process 2 with nice 0, the caller of the calls below.
func processTwo() *history {
	h := &history{}
	h.seq(call{kind: kClone, caller: 1, arg: int(unix.SIGCHLD)}, outcome{val: 2})
	return h
}

// TestCloneCopiesNiceEarly: a clone copies its caller's nice value before
// it links the child (dup_task_struct, then attach_pid), so a setpriority
// of the caller that ends while the clone runs may miss the child; the
// child may not have a value its parent never had.
func TestCloneCopiesNiceEarly(t *testing.T) {
	for _, tc := range []struct {
		childNice int
		want      porcupine.CheckResult
	}{{0, porcupine.Ok}, {7, porcupine.Ok}, {3, porcupine.Illegal}} {
		h := processTwo()
		burst := []record{
			{client: 0, c: call{kind: kClone, caller: 2, arg: int(unix.SIGCHLD)}, o: outcome{val: 3}, start: 100, end: 110},
			{client: 1, c: call{kind: kSetpriority, caller: 1, arg: unix.PRIO_PROCESS, pid: 2, arg2: 7}, start: 101, end: 102},
		}
		obs := observation{{pid: 1, tgid: 1, pgid: 1, sid: 1, running: true},
			{pid: 2, tgid: 2, parent: 1, pgid: 1, sid: 1, nice: 7, running: true},
			{pid: 3, tgid: 3, parent: 2, pgid: 1, sid: 1, nice: tc.childNice, running: true}}
		burst = append(burst, record{client: 2, c: call{kind: kObserve}, o: outcome{obs: obs}, start: 120, end: 121})
		if got := judge(t, h, burst); got != tc.want {
			t.Errorf("child nice %d: %s, want %s", tc.childNice, got, tc.want)
		}
	}
}

// TestLostEffectCaught: a setpriority that returned 0 must show in the
// final observation.
func TestLostEffectCaught(t *testing.T) {
	h := processTwo()
	set := record{client: 0, c: call{kind: kSetpriority, caller: 1, arg: unix.PRIO_PROCESS, pid: 2, arg2: 5}, start: 100, end: 101}
	for _, nice := range []int{5, 0} {
		obs := observation{{pid: 1, tgid: 1, pgid: 1, sid: 1, running: true},
			{pid: 2, tgid: 2, parent: 1, pgid: 1, sid: 1, nice: nice, running: true}}
		burst := []record{set, {client: 1, c: call{kind: kObserve}, o: outcome{obs: obs}, start: 102, end: 103}}
		want := porcupine.Ok
		if nice == 0 {
			want = porcupine.Illegal
		}
		if got := judge(t, h, burst); got != want {
			t.Errorf("observed nice %d: %s, want %s", nice, got, want)
		}
	}
}

// TestSemaphoreModel: a semop that sleeps takes effect only where it can
// proceed; one with a timeout may time out where it cannot; a sleeper seen
// asleep is completed by the first call that lets it proceed, or failed by
// a removal; calls on a removed set fail with EIDRM or EINVAL, on a set
// never made with EINVAL.
func TestSemaphoreModel(t *testing.T) {
	h := &history{}
	h.seq(call{kind: kSemget, caller: 1, arg: 0x10, arg2: 1, arg3: unix.IPC_CREAT | 0o600}, outcome{val: 5})
	down := []sem.Sembuf{{Num: 0, Op: -1}}
	up := []sem.Sembuf{{Num: 0, Op: 1}}
	for _, tc := range []struct {
		name  string
		burst []record
		want  porcupine.CheckResult
	}{
		{"a sleeper completed by a later up", []record{
			{client: 0, c: call{kind: kSemop, caller: 1, id: 5, sops: down, sleeps: true}, start: 100, end: 110},
			{client: 1, c: call{kind: kSemop, caller: 1, id: 5, sops: up}, start: 105, end: 106},
		}, porcupine.Ok},
		{"a sleeper that returns before any up", []record{
			{client: 0, c: call{kind: kSemop, caller: 1, id: 5, sops: down, sleeps: true}, start: 100, end: 101},
			{client: 1, c: call{kind: kSemop, caller: 1, id: 5, sops: up}, start: 105, end: 106},
		}, porcupine.Illegal},
		{"a timeout where the call cannot proceed", []record{
			{client: 0, c: call{kind: kSemop, caller: 1, id: 5, sops: down, timed: true}, o: outcome{err: unix.EAGAIN}, start: 100, end: 101},
		}, porcupine.Ok},
		{"a timeout where the call could proceed", []record{
			{client: 1, c: call{kind: kSemop, caller: 1, id: 5, sops: up}, start: 90, end: 91},
			{client: 0, c: call{kind: kSemop, caller: 1, id: 5, sops: down, timed: true}, o: outcome{err: unix.EAGAIN}, start: 100, end: 101},
		}, porcupine.Illegal},
		{"a sleeper failed by the removal", []record{
			{client: 0, c: call{kind: kSemop, caller: 1, id: 5, sops: down, sleeps: true}, o: outcome{err: unix.EIDRM}, start: 100, end: 110},
			{client: 1, c: call{kind: kSemctl, caller: 1, id: 5, arg: unix.IPC_RMID}, start: 102, end: 103},
		}, porcupine.Ok},
		{"EIDRM with no removal", []record{
			{client: 0, c: call{kind: kSemop, caller: 1, id: 5, sops: down, sleeps: true}, o: outcome{err: unix.EIDRM}, start: 100, end: 110},
		}, porcupine.Illegal},
		{"the key made again after a removal", []record{
			{client: 1, c: call{kind: kSemctl, caller: 1, id: 5, arg: unix.IPC_RMID}, start: 100, end: 101},
			{client: 1, c: call{kind: kSemget, caller: 1, arg: 0x10, arg2: 1, arg3: unix.IPC_CREAT | 0o600}, o: outcome{val: 6}, start: 102, end: 103},
			{client: 0, c: call{kind: kSemctl, caller: 1, id: 6, arg: sem.GETALL}, o: outcome{vals: []int{0}}, start: 104, end: 105},
		}, porcupine.Ok},
		{"the key's old set returned after its removal", []record{
			{client: 1, c: call{kind: kSemctl, caller: 1, id: 5, arg: unix.IPC_RMID}, start: 100, end: 101},
			{client: 1, c: call{kind: kSemget, caller: 1, arg: 0x10, arg2: 1, arg3: unix.IPC_CREAT | 0o600}, o: outcome{val: 5}, start: 102, end: 103},
		}, porcupine.Illegal},
		{"a sleeper seen asleep, completed by an up", []record{
			{client: 0, c: call{kind: kSemop, caller: 1, id: 5, sops: down, sleeps: true}, start: 100, end: 110},
			{client: 1, c: call{kind: kSemAsleep, caller: 1, id: 5, sops: down, seq: 100}, start: 100, end: 102},
			{client: 2, c: call{kind: kSemop, caller: 1, id: 5, sops: up}, start: 103, end: 104},
			{client: 1, c: call{kind: kSemctl, caller: 1, id: 5, arg: unix.IPC_RMID}, start: 103, end: 105},
		}, porcupine.Ok},
		{"a sleeper seen asleep, failed by the removal before the up", []record{
			{client: 0, c: call{kind: kSemop, caller: 1, id: 5, sops: down, sleeps: true}, o: outcome{err: unix.EIDRM}, start: 100, end: 110},
			{client: 1, c: call{kind: kSemAsleep, caller: 1, id: 5, sops: down, seq: 100}, start: 100, end: 102},
			{client: 2, c: call{kind: kSemop, caller: 1, id: 5, sops: up}, o: outcome{err: unix.EIDRM}, start: 103, end: 104},
			{client: 1, c: call{kind: kSemctl, caller: 1, id: 5, arg: unix.IPC_RMID}, start: 103, end: 105},
		}, porcupine.Ok},
		{"an up that succeeds while the sleeper it would wake is failed by the removal", []record{
			{client: 0, c: call{kind: kSemop, caller: 1, id: 5, sops: down, sleeps: true}, o: outcome{err: unix.EIDRM}, start: 100, end: 110},
			{client: 1, c: call{kind: kSemAsleep, caller: 1, id: 5, sops: down, seq: 100}, start: 100, end: 102},
			{client: 2, c: call{kind: kSemop, caller: 1, id: 5, sops: up}, start: 103, end: 104},
			{client: 1, c: call{kind: kSemctl, caller: 1, id: 5, arg: unix.IPC_RMID}, start: 103, end: 105},
		}, porcupine.Illegal},
		{"a set never made", []record{
			{client: 0, c: call{kind: kSemctl, caller: 1, id: 9, arg: sem.GETALL}, o: outcome{err: unix.EIDRM}, start: 100, end: 101},
		}, porcupine.Illegal},
	} {
		if got := judge(t, h, tc.burst); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestSleeperOnRemovedSetIsAHang: a semop still asleep after every set the
// round knows was removed is reported.
func TestSleeperOnRemovedSetIsAHang(t *testing.T) {
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	sleeper, _ := k.Init().Fork()
	// A set the round does not know, so nothing removes it: its sleeper
	// stays asleep, as one queued on a removed set would.
	id, err := sleeper.Semget(unix.IPC_PRIVATE, 1, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{k: k, tasks: []*kernel.Task{k.Init(), sleeper}, pids: []int{1, 2}, ids: []int{id}}
	s := schedule{sleepers: [][]step{{{kind: kSemop, actor: 1, sops: []sem.Sembuf{{Op: -1}}, sleeps: true}}}, phase: []int{0}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := w.startBurst(ctx, s)
	b.wait()
	if msg := b.waitSleepers(context.Background(), s); !strings.Contains(msg, "still sleeps") {
		t.Fatalf("got %q, want a sleeper reported", msg)
	}
}
