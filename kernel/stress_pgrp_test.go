package kernel

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStressSetpgidVsGroupWalks is seed 002's race: processes move between
// two groups with setpgid while PRIO_PGRP walks, kill(-pgrp, 0) probes and
// a walk that checks every member it visits run over both groups. A walk
// must never visit a process of another group, and the groups' anchors
// (which never move) keep every probe's answer fixed.
func TestStressSetpgidVsGroupWalks(t *testing.T) {
	e := newLCEnv(t, Config{})
	p := e.fork(e.init)
	mustNil(t, p.Setpgid(0, 0))
	g1 := p.Getpid()
	b := e.fork(p)
	mustNil(t, b.Setpgid(0, 0))
	g2 := b.Getpid()
	// Anchors: p leads g1 with nice 5, b leads g2 with nice -5. Movers
	// have nice 10 and never change the groups' priorities.
	mustNil(t, p.Setpriority(unix.PRIO_PROCESS, 0, 5))
	mustNil(t, b.Setpriority(unix.PRIO_PROCESS, 0, -5))
	var movers []*Task
	for range 8 {
		m := e.fork(p)
		mustNil(t, m.Setpriority(unix.PRIO_PROCESS, 0, 10))
		movers = append(movers, m)
	}
	rounds := 400
	if testing.Short() {
		rounds = 100
	}
	var stop atomic.Bool
	var wg, moving sync.WaitGroup
	var moves, walks atomic.Int64
	for i, m := range movers {
		moving.Add(1)
		go func() {
			defer moving.Done()
			for r := range rounds {
				to := g1
				if (r+i)%2 == 0 {
					to = g2
				}
				if err := m.Setpgid(0, to); err != nil {
					t.Errorf("setpgid(0, %d): %v", to, err)
					return
				}
				moves.Add(1)
				runtime.Gosched()
			}
		}()
	}
	groups := []*ProcessGroup{p.tg.pgrp.Load(), b.tg.pgrp.Load()}
	walker := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if err := f(); err != nil {
					t.Error(err)
					return
				}
				walks.Add(1)
				runtime.Gosched()
			}
		}()
	}
	for _, g := range groups {
		walker(func() error {
			var bad error
			g.eachThread(nil, func(th *Task) {
				if got := th.tg.pgrp.Load(); got != g && bad == nil {
					bad = errors.New("a walk over a group visited a process of another group")
				}
			})
			return bad
		})
	}
	for _, want := range []struct{ pgid, prio int }{{g1, 15}, {g2, 25}} {
		walker(func() error {
			if got, err := p.Getpriority(unix.PRIO_PGRP, want.pgid); err != nil || got != want.prio {
				return errors.New("PRIO_PGRP saw a member of the wrong group or missed its anchor")
			}
			if err := p.Kill(-want.pgid, 0); err != nil {
				return err
			}
			return nil
		})
	}
	moving.Wait()
	stop.Store(true)
	wg.Wait()
	t.Logf("%d moves, %d walks", moves.Load(), walks.Load())
	if err := e.k.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestStressSetuidVsUserWalk races setuid, which moves threads between two
// users' lists, against PRIO_USER walks: a walk over a user's list sees
// only threads whose real uid is that user's.
func TestStressSetuidVsUserWalk(t *testing.T) {
	e := newLCEnv(t, Config{})
	var ts []*Task
	for range 8 {
		ts = append(ts, e.fork(e.init))
	}
	u1, u2 := e.k.user(1001), e.k.user(1002)
	var wg sync.WaitGroup
	var stop atomic.Bool
	for _, u := range []*User{u1, u2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				u.eachVisible(e.init.Namespace(), func(th *Task) {
					if th.creds.Load().UID != u.uid {
						t.Errorf("PRIO_USER walk of uid %d visited a thread of uid %d", u.uid, th.creds.Load().UID)
					}
				})
			}
		}()
	}
	var movers sync.WaitGroup
	for i, c := range ts {
		movers.Add(1)
		go func() {
			defer movers.Done()
			for r := range 500 {
				uid := 1001 + (r+i)%2
				mustNil(t, c.Setresuid(uid, 0, 0))
			}
		}()
	}
	movers.Wait()
	stop.Store(true)
	wg.Wait()
	if err := e.k.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
