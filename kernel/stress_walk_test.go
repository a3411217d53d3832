package kernel

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStressSetpgidVsGroupWalks is seed 002's race (docs/seeds.md): processes move between
// two groups with setpgid while PRIO_PGRP walks, kill(-pgrp, 0) probes and
// a walk that checks every member it visits run over both groups. A walk
// must never visit a process of another group, and the groups' anchors
// (which never move) keep every probe's answer fixed.
func TestStressSetpgidVsGroupWalks(t *testing.T) {
	s := newStress(t, 9, Config{})
	p := s.fork(s.init)
	mustOK(t, p.Setpgid(0, 0))
	g1 := p.Getpid()
	b := s.fork(p)
	mustOK(t, b.Setpgid(0, 0))
	g2 := b.Getpid()
	// Anchors: p leads g1 with nice 5, b leads g2 with nice -5. Movers
	// have nice 10 and never change the groups' priorities.
	mustOK(t, p.Setpriority(unix.PRIO_PROCESS, 0, 5))
	mustOK(t, b.Setpriority(unix.PRIO_PROCESS, 0, -5))
	var movers []func()
	var moves atomic.Int64
	for i := range 8 {
		m := s.fork(p)
		mustOK(t, m.Setpriority(unix.PRIO_PROCESS, 0, 10))
		movers = append(movers, func() {
			for r := range iterations(400) {
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
		})
	}
	var walkers []func() error
	for _, g := range []*ProcessGroup{p.tg.pgrp.Load(), b.tg.pgrp.Load()} {
		walkers = append(walkers, func() error {
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
		walkers = append(walkers, func() error {
			if got, err := p.Getpriority(unix.PRIO_PGRP, want.pgid); err != nil || got != want.prio {
				return errors.New("PRIO_PGRP saw a member of the wrong group or missed its anchor")
			}
			return p.Kill(-want.pgid, 0)
		})
	}
	walks := s.whileMoving(movers, walkers)
	t.Logf("%d moves, %d walks", moves.Load(), walks)
	s.end()
}

// TestStressSetuidVsUserWalk races setuid, which moves threads between two
// users' lists, against PRIO_USER walks: a walk over a user's list sees
// only threads whose real uid is that user's.
func TestStressSetuidVsUserWalk(t *testing.T) {
	s := newStress(t, 10, Config{})
	var movers []func()
	for i := range 8 {
		c := s.fork(s.init)
		movers = append(movers, func() {
			for r := range 500 {
				uid := 1001 + (r+i)%2
				expectOK(t, c.Setresuid(uid, 0, 0))
			}
		})
	}
	var walkers []func() error
	for _, u := range []*User{s.k.user(1001), s.k.user(1002)} {
		walkers = append(walkers, func() error {
			var bad error
			u.eachVisible(s.init.Namespace(), func(th *Task) {
				if uid := th.creds.Load().UID; uid != u.uid && bad == nil {
					bad = fmt.Errorf("PRIO_USER walk of uid %d visited a thread of uid %d", u.uid, uid)
				}
			})
			return bad
		})
	}
	s.whileMoving(movers, walkers)
	s.end()
}
