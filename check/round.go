package check

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/anishathalye/porcupine"

	"tasklist/ipc/sem"
	"tasklist/kernel"
	"tasklist/plan"
)

// Bounds on a round's waits. A call still asleep on a semaphore this long
// after every set was removed sleeps on a set that is gone; any call still
// running after hangBound is stuck.
const (
	sleeperBound = 250 * time.Millisecond
	hangBound    = 30 * time.Second
	// meetBound is how long a step waits at a rendezvous for its partner.
	meetBound = 50 * time.Millisecond
	// asleepBound is how long a race waits to see its sleeper asleep.
	asleepBound = 20 * time.Millisecond
)

// world is a round's kernel and what its setup made.
type world struct {
	k     *kernel.Kernel
	tasks []*kernel.Task // by ref
	pids  []int          // by ref
	ids   []int          // semaphore set ids by slot, as the setup made them
	clock atomic.Int64
	meets map[int]*meeting
	burst *burst // the burst under way, once it starts
}

// runner makes the steps of one goroutine: the setup's, a worker's, a
// sleeper's or the final ones.
type runner struct {
	w        *world
	client   int
	children []*kernel.Task
	pids     []int
	ids      []int
	// mu guards records, which a hang's report reads while the runner
	// may still be making calls.
	mu      sync.Mutex
	records []record
	// inFlight is the call being made, for a hang's report.
	inFlight atomic.Pointer[record]
}

// history returns a copy of what r has recorded so far.
func (r *runner) history() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.records)
}

func (w *world) runner(client int) *runner {
	return &runner{w: w, client: client, ids: slices.Clone(w.ids)}
}

func (r *runner) task(x ref) (*kernel.Task, int) {
	switch {
	case x >= 0 && int(x) < len(r.w.tasks):
		return r.w.tasks[x], r.w.pids[x]
	case x < 0 && int(-1-x) < len(r.children):
		return r.children[-1-x], r.pids[-1-x]
	}
	return nil, 0
}

func (r *runner) pid(a pidArg) (int, bool) {
	if a.ref == none {
		return a.lit, true
	}
	t, pid := r.task(a.ref)
	if a.neg {
		pid = -pid
	}
	return pid, t != nil
}

// do makes step s, unless s names a task that does not exist (a clone
// before it failed) or is made by a task that has exited: an exited task
// makes no calls in Linux. Only the goroutine that owns a task can end it
// (no call of the burst kills), so the test is not racy.
func (r *runner) do(ctx context.Context, s step, setup bool) {
	if s.kind == kSemAsleep {
		if t, _ := r.task(s.actor); t != nil {
			r.watch(s.watch, t)
		}
		return
	}
	actor, caller := r.task(s.actor)
	pid, ok1 := r.pid(s.pid)
	pgid, ok2 := r.pid(s.pgid)
	if actor == nil || actor.Exited() || !ok1 || !ok2 {
		r.made(s, nil, setup)
		return
	}
	c := call{kind: s.kind, caller: caller, pid: pid, pgid: pgid, arg: s.arg, arg2: s.arg2, arg3: s.arg3,
		opts: s.opts, flags: s.flags, sops: s.sops, timed: s.timed, sleeps: s.sleeps, part: s.part}
	if s.kind == kSemop || s.kind == kSemctl {
		c.id = r.ids[s.slot]
	}
	r.w.meets[s.rendezvous].meet()
	if s.lag > 0 {
		// A spin, not a sleep: the side must stay on its processor.
		for until := time.Now().Add(time.Duration(s.lag)); time.Now().Before(until); {
		}
	}
	rec := record{client: r.client, c: c, race: s.rendezvous, start: r.w.clock.Add(1)}
	inFlight := rec // a copy, which the call's return leaves as it is
	r.inFlight.Store(&inFlight)
	rec.o = c.run(ctx, actor)
	rec.end = r.w.clock.Add(1)
	r.inFlight.Store(nil)
	r.mu.Lock()
	r.records = append(r.records, rec)
	r.mu.Unlock()
	if s.kind == kSemget && rec.o.err == nil {
		r.ids[s.slot] = rec.o.val
	}
	r.made(s, rec.o.child, setup)
}

// watch waits, for up to asleepBound, until the burst's sleeper i, whose
// task is t, is asleep in its semop, and records the sighting
// (kSemAsleep). A sleeper that returns first, or is not seen asleep in
// time, is not recorded.
func (r *runner) watch(i int, t *kernel.Task) {
	b := r.w.burst
	if b == nil || b.sleepers+i >= len(b.runners) {
		return
	}
	sleeper := b.runners[b.sleepers+i]
	for deadline := time.Now().Add(asleepBound); time.Now().Before(deadline) && !b.done[b.sleepers+i].Load(); {
		rec := sleeper.inFlight.Load()
		if rec == nil || !t.Sleeping() {
			runtime.Gosched()
			continue
		}
		c := call{kind: kSemAsleep, caller: rec.c.caller, id: rec.c.id, sops: rec.c.sops, seq: rec.start}
		r.mu.Lock()
		r.records = append(r.records, record{client: r.client, c: c, start: rec.start, end: r.w.clock.Add(1)})
		r.mu.Unlock()
		return
	}
}

// made records the task a clone step made (nil if it made none), so that
// later steps find it by its ref.
func (r *runner) made(s step, t *kernel.Task, setup bool) {
	if !s.makesTask {
		return
	}
	pid := 0
	if t != nil {
		pid = t.PIDIn(r.w.k.RootNamespace())
	}
	if setup {
		r.w.tasks, r.w.pids = append(r.w.tasks, t), append(r.w.pids, pid)
		return
	}
	r.children, r.pids = append(r.children, t), append(r.pids, pid)
}

// meeting is a rendezvous of two steps, meant to start them at the same
// instant. The two sides play ping-pong on a counter, each moving only on
// its own turn: the last exchanges take nanoseconds only while both sides
// are running, so when the game ends both are on a processor. A side that
// waits long for its turn yields its processor, in case the other side
// needs it; it gives up after meetBound.
type meeting struct {
	arrived atomic.Int32
	turn    atomic.Int64
}

// exchanges is how many moves the ping-pong takes.
const exchanges = 8

func (m *meeting) meet() {
	if m == nil {
		return
	}
	me := int64(m.arrived.Add(1) - 1)
	if me > 1 {
		return
	}
	deadline := time.Now().Add(meetBound)
	for spin := 0; ; spin++ {
		t := m.turn.Load()
		if t >= exchanges {
			return
		}
		if t%2 == me {
			m.turn.CompareAndSwap(t, t+1)
			spin = 0
			continue
		}
		if spin < 1<<8 {
			continue
		}
		spin = 0
		if time.Now().After(deadline) {
			return
		}
		runtime.Gosched()
	}
}

// roundResult is what a round found.
type roundResult struct {
	setup, burst []record
	violation    *Violation
	unknown      bool // porcupine could not decide in time
	// interrupted is set when ctx ended the round before it was checked:
	// its calls may have been cut short, so it proves nothing either way.
	interrupted bool
}

// round runs s on a fresh kernel under p and checks it. When ctx is done
// it stops at once, leaving the calls still running to end on their own
// (ctx interrupts those that sleep), and reports the round interrupted.
func round(ctx context.Context, p *plan.Plan, s schedule, locks *lockWatch, checkTimeout time.Duration) roundResult {
	k, err := kernel.New(kernel.Config{Plan: p})
	if err != nil {
		panic(err)
	}
	w := &world{k: k, tasks: []*kernel.Task{k.Init()}, pids: []int{1}}
	locks.reset()
	interrupted := roundResult{interrupted: true}
	setup := w.setup(ctx, s)
	if ctx.Err() != nil {
		return interrupted
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // wakes a sleeper left asleep by a violation
	b := w.startBurst(ctx, s)
	final := w.runner(len(b.runners))
	all := append(append([]*runner{setup}, b.runners...), final)
	hang := func(msg string) roundResult {
		if ctx.Err() != nil {
			return interrupted
		}
		v := &Violation{Kind: "hang", Message: msg, setup: setup.records}
		v.addInFlight(w, all[1:])
		return roundResult{setup: setup.records, burst: v.burst, violation: v}
	}
	if !waitBounded(ctx, b.wait, hangBound) {
		return hang("a call never returned")
	}
	// Removing every set must wake every sleeper, with EIDRM.
	for _, id := range seenSets(w, b.runners[:b.sleepers]) {
		final.ids = []int{id}
		final.do(ctx, step{kind: kSemctl, actor: 0, arg: sem.GETALL}, false)
		final.do(ctx, step{kind: kSemctl, actor: 0, arg: unix.IPC_RMID}, false)
	}
	if msg := b.waitSleepers(ctx, s); msg != "" {
		return hang(msg)
	}
	if !waitBounded(ctx, k.Quiesce, hangBound) {
		return hang("Kernel.Quiesce never returned")
	}
	if ctx.Err() != nil {
		// A sleeping call may have returned EINTR for the interrupt.
		return interrupted
	}
	for part, pids := range partPids(s, w, all) {
		obs := record{client: final.client, c: call{kind: kObserve, part: part, pids: pids}, start: w.clock.Add(1)}
		obs.o.obs = observeKernel(k, pids)
		obs.end = w.clock.Add(1)
		final.records = append(final.records, obs)
	}
	for i := range final.records {
		final.records[i].final = true
	}
	var burst []record
	for _, r := range all[1:] {
		burst = append(burst, r.records...)
	}
	return verdict(ctx, k, locks, setup.records, burst, checkTimeout)
}

// setup makes the setup's steps one at a time and returns its runner; it
// stops early when ctx is done.
func (w *world) setup(ctx context.Context, s schedule) *runner {
	r := w.runner(0)
	r.ids = make([]int, len(s.keys))
	for _, st := range s.setup {
		if ctx.Err() != nil {
			break
		}
		r.do(context.Background(), st, true)
	}
	w.ids = r.ids
	w.meets = meetings(s)
	return r
}

// burst is a burst under way: a runner per goroutine, workers first, then
// racers, then sleepers.
type burst struct {
	runners  []*runner
	done     []atomic.Bool
	sleepers int // the first sleeper's index
	// wait runs the burst's phases in turn and returns when every
	// worker and racer has returned.
	wait func()
}

// startBurst starts the goroutines of s's burst. The racers run in
// phases, each once the racers of the one before have returned, then the
// workers; the sleepers start with their phase and may sleep until the
// final steps remove their sets.
func (w *world) startBurst(ctx context.Context, s schedule) *burst {
	lists := append(append(slices.Clone(s.workers), s.racers...), s.sleepers...)
	phases := append(slices.Repeat([]int{-1}, len(s.workers)), s.phase...)
	last := slices.Max(append(slices.Clone(phases), -1)) + 1 // the workers'
	starts := make([]chan struct{}, last+1)
	waits := make([]sync.WaitGroup, last+1)
	for i := range starts {
		starts[i] = make(chan struct{})
	}
	b := &burst{runners: make([]*runner, len(lists)), done: make([]atomic.Bool, len(lists)),
		sleepers: len(s.workers) + len(s.racers)}
	w.burst = b
	for i, steps := range lists {
		b.runners[i] = w.runner(i)
		phase := phases[i]
		if phase < 0 {
			phase = last
		}
		run := func() {
			<-starts[phase]
			for _, st := range steps {
				b.runners[i].do(ctx, st, false)
			}
			b.done[i].Store(true)
		}
		if i < b.sleepers {
			waits[phase].Go(run)
		} else {
			go run()
		}
	}
	b.wait = func() {
		for i := range starts {
			close(starts[i])
			waits[i].Wait()
		}
	}
	return b
}

// verdict checks a round that ran to its end: the kernel's invariants,
// lock order, and the linearizability of the burst from the state the
// setup left. The round is interrupted if ctx ends before porcupine
// decides.
func verdict(ctx context.Context, k *kernel.Kernel, locks *lockWatch, setup, burst []record, checkTimeout time.Duration) roundResult {
	res := roundResult{setup: setup, burst: burst}
	v := &Violation{setup: setup, burst: burst}
	var problems []string
	fail := func(kind, msg string) {
		v.Kind = join(v.Kind, kind)
		problems = append(problems, msg)
	}
	if err := k.CheckInvariants(); err != nil {
		fail("invariant", "invariants: "+err.Error())
	}
	for _, msg := range locks.collected() {
		fail("lock order", msg)
	}
	init, err := initialState(setup)
	if err != nil {
		fail("setup", err.Error())
	} else {
		result, model, info, ok := linearizable(ctx, init, burst, checkTimeout)
		if !ok {
			return roundResult{interrupted: true}
		}
		switch result {
		case porcupine.Illegal:
			why, races := explain(init, operations(burst), info)
			fail("linearizability", "the history is not linearizable: no order of its calls gives the model these results"+why)
			v.races = races
		case porcupine.Unknown:
			res.unknown = true
		}
		v.model, v.info = model, info
	}
	if len(problems) > 0 {
		v.Message = strings.Join(problems, "\n")
		res.violation = v
	}
	return res
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + ", " + b
}

// meetings makes a meeting for each rendezvous number that two steps of s
// share.
func meetings(s schedule) map[int]*meeting {
	count := map[int]int{}
	for _, steps := range append(append(slices.Clone(s.workers), s.racers...), s.sleepers...) {
		for _, st := range steps {
			if st.rendezvous != 0 {
				count[st.rendezvous]++
			}
		}
	}
	m := map[int]*meeting{}
	for n, c := range count {
		if c == 2 {
			m[n] = &meeting{}
		}
	}
	return m
}

// seenSets lists every set id the setup made or a semget of rs returned.
func seenSets(w *world, rs []*runner) []int {
	ids := slices.Clone(w.ids)
	for _, r := range rs {
		for _, rec := range r.history() {
			if rec.c.kind == kSemget && rec.o.err == nil {
				ids = append(ids, rec.o.val)
			}
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// partPids lists, for each partition of the task calls, the pids of the
// tasks it owns: the setup's tasks by s.parts, and the tasks the calls of
// the partition made.
func partPids(s schedule, w *world, rs []*runner) [][]int {
	var out [][]int
	add := func(part, pid int) {
		for len(out) <= part {
			out = append(out, nil)
		}
		out[part] = append(out[part], pid)
	}
	for ref, pid := range w.pids {
		if pid != 0 {
			add(s.parts[ref], pid)
		}
	}
	for _, r := range rs[1:] { // the setup's clones are the setup's tasks
		for _, rec := range r.history() {
			if rec.c.kind == kClone && rec.o.err == nil {
				add(rec.c.part, rec.o.val)
			}
		}
	}
	return out
}

// waitBounded runs f and reports whether it returned within bound and
// before ctx ended.
func waitBounded(ctx context.Context, f func(), bound time.Duration) bool {
	done := make(chan struct{})
	go func() {
		f()
		close(done)
	}()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
	case <-ctx.Done():
	}
	return false
}

// waitSleepers waits for the sleepers once every set is removed: each must
// return, and none may stay asleep, since the removals failed every
// sleeper of the sets with EIDRM. It says what went wrong, if anything.
func (b *burst) waitSleepers(ctx context.Context, s schedule) string {
	sleepers, done := b.runners[b.sleepers:], b.done[b.sleepers:]
	asleep := make([]time.Time, len(sleepers))
	deadline := time.Now().Add(hangBound)
	for {
		all := true
		for i, r := range sleepers {
			if done[i].Load() || len(s.sleepers[i]) == 0 {
				continue
			}
			all = false
			t, _ := r.task(s.sleepers[i][0].actor)
			switch {
			case t == nil || !t.Sleeping():
				asleep[i] = time.Time{}
			case asleep[i].IsZero():
				asleep[i] = time.Now()
			case time.Since(asleep[i]) > sleeperBound:
				return "a semop still sleeps after every set was removed: it sleeps on a set removed before it queued"
			}
		}
		if all || ctx.Err() != nil {
			return ""
		}
		if time.Now().After(deadline) {
			return "a sleeper's semop never returned"
		}
		time.Sleep(time.Millisecond)
	}
}

// addInFlight adds the records of rs to v, with the calls still in flight
// marked as never returned.
func (v *Violation) addInFlight(w *world, rs []*runner) {
	for _, r := range rs {
		v.burst = append(v.burst, r.history()...)
		if rec := r.inFlight.Load(); rec != nil {
			hung := *rec
			hung.o = outcome{hung: true}
			hung.end = w.clock.Add(1)
			v.burst = append(v.burst, hung)
			v.Message += fmt.Sprintf("\n  in flight: %s", rec.c)
		}
	}
}
