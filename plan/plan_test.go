package plan

import (
	"errors"
	"strings"
	"testing"
)

func TestParsePresets(t *testing.T) {
	if p, err := Parse("scalable", false); err != nil || p != nil {
		t.Fatalf("Parse(scalable) = %v, %v; want the nil plan", p, err)
	}
	for _, pre := range Presets() {
		if pre.Name == "scalable" {
			continue
		}
		p, err := Parse(pre.Name, false)
		if err != nil {
			t.Fatalf("Parse(%s): %v", pre.Name, err)
		}
		if p.Name() != pre.Name || !p.TableLock() || p.Unsafe() {
			t.Errorf("%s: name %q, table lock %v, unsafe %v", pre.Name, p.Name(), p.TableLock(), p.Unsafe())
		}
	}
}

func TestParseToggles(t *testing.T) {
	p, err := Parse("linux-2.6.35, prio-without-tasklist", false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "linux-2.6.35,prio-without-tasklist" {
		t.Errorf("name %q", p.Name())
	}
	// Seed 002 (docs/seeds.md): only PRIO_PGRP keeps its read lock.
	for s, want := range map[Site]Mode{PrioProcess: None, PrioUser: None, PrioPgrp: Read, WaitScan: Read, CloneLink: Write} {
		if got := p.Mode(s); got != want {
			t.Errorf("%s: mode %s, want %s", s, got, want)
		}
	}
	if !p.TakesExitPtrace() {
		t.Error("2.6.35 without seed 000 skips exit_ptrace's lock")
	}
	p57 := MustParse("linux-5.7", false)
	if p57.TakesExitPtrace() || !p57.Has(ReleaseTraceesInReaper) || p57.Has(PrioWithoutTasklist) {
		t.Errorf("linux-5.7 is 2.6.35 with seeds 000 and 001 only: %s", p57.Name())
	}
	// A toggle the preset already has is accepted and not repeated.
	if p := MustParse("linux-5.7,exit-ptrace-fastpath", false); p.Name() != "linux-5.7" {
		t.Errorf("name %q", p.Name())
	}
}

func TestParseRefusals(t *testing.T) {
	for _, spec := range []string{"linux-9", "gvisor,no-such-toggle", ""} {
		if _, err := Parse(spec, false); err == nil {
			t.Errorf("Parse(%q) succeeded", spec)
		}
	}
}

// TestParseUnsafe: an unsafe toggle is refused without allowUnsafe, and
// in a build without the tasklist_unsafe tag with it too, with an error
// that names the tag.
func TestParseUnsafe(t *testing.T) {
	for _, tg := range Toggles() {
		if !tg.Unsafe {
			continue
		}
		_, err := Parse("scalable,"+tg.Name, false)
		want := "--unsafe"
		if !UnsafeBuilt {
			want = "-tags tasklist_unsafe"
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("unsafe %s without --unsafe: %v, want an error naming %s", tg.Name, err, want)
		}
		p, err := Parse("scalable,"+tg.Name, true)
		switch {
		case !UnsafeBuilt && !errors.Is(err, ErrUnsafeNotBuilt):
			t.Errorf("scalable,%s in a build without the unsafe toggles: %v, %v", tg.Name, p, err)
		case UnsafeBuilt && (err != nil || !p.Unsafe() || p.TableLock()):
			t.Errorf("scalable,%s with unsafe allowed: %v, %v", tg.Name, p, err)
		}
	}
}

func TestNilPlan(t *testing.T) {
	var p *Plan
	p.Lock(CloneLink) // a no-op, not a nil dereference
	p.Unlock(CloneLink)
	if p.Has(ExitPtraceFastpath) || p.TableLock() || p.Name() != "scalable" || p.SemLocking() != (SemLocking{}) {
		t.Error("the nil plan is not plain scalable")
	}
}

func TestSemLocking(t *testing.T) {
	for spec, want := range map[string]SemLocking{
		"linux-2.6.35":                    {SetLockOnly: true, PermUnderLock: true},
		"linux-2.6.35,sem-lockless-perm":  {SetLockOnly: true},
		"linux-6.15":                      {},
		"gvisor":                          {SetLockOnly: true, PermUnderLock: true, WakeAll: true},
		"scalable,sem-perm-no-revalidate": {NoRevalidate: true},
	} {
		if strings.Contains(spec, "no-revalidate") && !UnsafeBuilt {
			continue
		}
		if got := MustParse(spec, true).SemLocking(); got != want {
			t.Errorf("%s: %+v, want %+v", spec, got, want)
		}
	}
}

func TestWriteSectionsHoldTheLock(t *testing.T) {
	p := MustParse("gvisor", false)
	p.Lock(WaitScan)
	if p.table.TryLock() {
		t.Fatal("gvisor's wait scan does not hold the table lock for writing")
	}
	p.Unlock(WaitScan)
	p.Lock(KillGroup)
	shared := make(chan bool)
	go func() {
		p.Lock(PrioPgrp) // readers share it
		p.Unlock(PrioPgrp)
		shared <- true
	}()
	<-shared
	p.Unlock(KillGroup)
	if !p.table.TryLock() {
		t.Fatal("the table lock is still held")
	}
	p.table.Unlock()
}
