package kernel

import "testing"

// TestInvariantCheckerCatchesCorruption: the checker must be able to fail.
// Each case corrupts one piece of the table and restores it.
func TestInvariantCheckerCatchesCorruption(t *testing.T) {
	e := newEnv(t, Config{})
	p := e.fork(e.init)
	th := e.thread(p)
	z := e.fork(p)
	e.exit(z, 0) // a zombie on p's ready list
	mustOK(t, p.Setuid(1000))
	e.check()
	u := e.k.user(1000)
	for _, tc := range []struct {
		name    string
		corrupt func()
		restore func()
	}{
		{"live count", func() { p.tg.mu.Lock(); p.tg.liveThreads++; p.tg.mu.Unlock() },
			func() { p.tg.mu.Lock(); p.tg.liveThreads--; p.tg.mu.Unlock() }},
		{"children count", func() { p.tg.mu.Lock(); p.tg.nrChildren[classClone]++; p.tg.mu.Unlock() },
			func() { p.tg.mu.Lock(); p.tg.nrChildren[classClone]--; p.tg.mu.Unlock() }},
		{"per-thread children", func() { th.nrChildren.Add(1) }, func() { th.nrChildren.Add(-1) }},
		{"pid refs", func() { p.pid.Load().refs.Add(1) }, func() { p.pid.Load().refs.Add(-1) }},
		{"user count", func() { u.shards[0].tasks.Add(1) }, func() { u.shards[0].tasks.Add(-1) }},
		{"zombie off the ready queue", func() {
			p.tg.mu.Lock()
			p.tg.unmarkReadyLocked(z.tg)
			p.tg.mu.Unlock()
		}, func() {
			p.tg.mu.Lock()
			p.tg.markReadyLocked(z.tg)
			p.tg.mu.Unlock()
		}},
		{"child off the children list", func() {
			e.init.tg.mu.Lock()
			e.init.tg.children.remove(p.tg, siblingLinkOf)
			e.init.tg.mu.Unlock()
		}, func() {
			e.init.tg.mu.Lock()
			e.init.tg.children.pushBack(p.tg, siblingLinkOf)
			e.init.tg.mu.Unlock()
		}},
		{"released task published", func() { th.state.v.Store(int32(taskDead)) }, func() { th.state.v.Store(int32(taskRunning)) }},
		{"parent closed", func() { e.init.flags.set(flagChildrenClosed, true) }, func() { e.init.flags.set(flagChildrenClosed, false) }},
		{"child reaper", func() { e.k.rootNS.childReaper.Store(p) }, func() { e.k.rootNS.childReaper.Store(e.init) }},
	} {
		tc.corrupt()
		err := e.k.CheckInvariants()
		tc.restore()
		if err == nil {
			t.Errorf("%s: the checker found nothing wrong", tc.name)
		}
		if err := e.k.CheckInvariants(); err != nil {
			t.Fatalf("%s: restored table fails: %v", tc.name, err)
		}
	}
	e.exit(th, 0)
	e.reap(p, -1, 0, z.Getpid(), exited(0))
	e.exitReaped(e.init, 0, p)
	e.settle()
}
