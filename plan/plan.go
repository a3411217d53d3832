// Package plan describes lock plans: where the big locks of the designs
// that the seed threads argue about are taken, on top of the per-object
// locking that tasklist always does.
//
// Linux guarded the process table with one reader-writer lock,
// tasklist_lock, and has spent fifteen years taking it in fewer places;
// gVisor still takes one TaskSet lock for writing in every step of fork,
// exit, wait and ptrace. A Plan names the places (Sites) where such a
// design takes its table lock, and how (for reading or for writing), so
// that those designs run on the same code as tasklist's own, which takes
// no table lock at all. A plan only adds locking: every per-object lock
// and every check is still there, so a plan never changes what a call
// returns; it changes only how calls wait for each other.
//
// # Presets and toggles
//
// A plan is a preset followed by toggles: "linux-2.6.35",
// "linux-2.6.35,exit-ptrace-fastpath", "scalable,pgrp-walk-unlocked". Each
// toggle is one change a seed thread made (or, for the unsafe ones, one
// placement a thread showed to be racy), so a seed's A/B runs on its own:
// its base preset with and without its toggle. [Presets] and [Toggles]
// list them; [Parse] builds a plan from its name.
//
// The presets differ only in what the seed threads (docs/seeds.md)
// changed: linux-2.6.35 is where Linux stood before them, linux-5.7 adds
// the changes of seeds 000 and 001, linux-6.15 every seed change and the
// release_task changes of 6.15.
// Other differences between those kernel versions are not modelled.
//
// # Unsafe toggles and the tasklist_unsafe build tag
//
// The unsafe toggles (zhang-v1, pgrp-walk-unlocked,
// sem-perm-no-revalidate) put back races the seed threads found, so that
// the race checker (tasklist check) can be shown to find them. Their code
// paths are deliberately racy, and a library meant for sandboxes should
// not carry them: they are built only with the tasklist_unsafe build tag
// (go build -tags tasklist_unsafe; go run -tags tasklist_unsafe
// ./cmd/tasklist check --unsafe ...). Without it [UnsafeBuilt] is false,
// Parse refuses every unsafe toggle with [ErrUnsafeNotBuilt], and the
// packages that would act on one compile a constant false in its place.
//
// # Cost
//
// The kernel keeps a *Plan and calls [Plan.Lock] and [Plan.Unlock] at each
// site. Both are inlined nil checks: the default plan, scalable without
// toggles, is the nil *Plan, so tasklist's own design pays a compare and
// a branch per site, not a call.
//
// # Lock order
//
// The table lock is a lockstat.RWMutex of class "plan.tasklist_lock". It
// comes before every kernel lock: a site takes it with no other kernel
// lock held, and sites never nest, which lockstat's recursion check
// enforces in every test.
package plan

import (
	"errors"
	"fmt"
	"strings"

	"tasklist/lockstat"
)

// tableClass is the lock class of every plan's table lock.
var tableClass = lockstat.NewClass("plan.tasklist_lock")

// Site is a place in the kernel where a design may take its table lock.
// Each names the Linux code it stands for.
type Site uint8

// The sites, in the order of a process's life.
const (
	// CloneLink is copy_process's write section: the new task is linked
	// to its parent, its thread group and its process group.
	CloneLink Site = iota
	// ExitStart is do_exit's start: the thread is marked exiting and, for
	// a group exit, its siblings are killed. Linux takes no table lock
	// here; gVisor does.
	ExitStart
	// ExitPtrace is exit_ptrace: an exiting tracer detaches its tracees.
	ExitPtrace
	// ExitNotify is exit_notify: children are handed to a reaper, the
	// parent is told, the thread becomes a zombie.
	ExitNotify
	// Release is release_task: a dead task is unhashed, its tracer link
	// dropped, its pid freed and its runtime fed to the entropy pool
	// (the last two only while the matching toggle is off).
	Release
	// PtraceLink is ptrace_attach, ptrace_traceme and __ptrace_detach:
	// a tracee is linked to or unlinked from its tracer.
	PtraceLink
	// PtraceRequest is ptrace_check_attach: a tracer's request on a
	// tracee it holds.
	PtraceRequest
	// SetPgid is setpgid and setsid: a process moves between groups.
	SetPgid
	// ExecSwap is de_thread's leader swap.
	ExecSwap
	// WaitScan is do_wait's scan of the children and tracees.
	WaitScan
	// KillGroup is kill_pgrp and kill(-1)'s walk.
	KillGroup
	// PrioProcess, PrioPgrp and PrioUser are get/setpriority's lookups
	// and walks for each which.
	PrioProcess
	PrioPgrp
	PrioUser
	// Prlimit is prlimit64's read section for another process's limits
	// (sys_prlimit64 and do_prlimit): the target's group leader, whose
	// lock guards the limits, cannot change under it.
	Prlimit
	// NoSite is where no plan takes the table lock, for code that takes
	// a site's lock only in some cases.
	NoSite
	numSites
)

var siteNames = [numSites]string{
	CloneLink: "clone-link", ExitStart: "exit-start", ExitPtrace: "exit-ptrace",
	ExitNotify: "exit-notify", Release: "release", PtraceLink: "ptrace-link",
	PtraceRequest: "ptrace-request", SetPgid: "setpgid", ExecSwap: "exec-swap",
	WaitScan: "wait-scan", KillGroup: "kill-group", PrioProcess: "prio-process",
	PrioPgrp: "prio-pgrp", PrioUser: "prio-user", Prlimit: "prlimit", NoSite: "none",
}

func (s Site) String() string {
	if s < numSites {
		return siteNames[s]
	}
	return fmt.Sprintf("Site(%d)", s)
}

// Mode is how a site takes the table lock.
type Mode uint8

// The modes.
const (
	None Mode = iota
	Read
	Write
)

func (m Mode) String() string {
	switch m {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return "none"
}

// Plan is a lock plan. The nil *Plan is scalable without toggles: no
// table lock anywhere. A Plan is immutable once built, except for its
// table lock; one Plan serves one kernel.
type Plan struct {
	name    string
	toggles Toggle
	modes   [numSites]Mode
	sem     semDesign
	// table is the big lock; it is used only by sites whose mode is not
	// None.
	table lockstat.RWMutex
}

// Lock takes the table lock as site s needs it, if the plan takes it
// there at all.
func (p *Plan) Lock(s Site) {
	if p != nil {
		p.lock(s)
	}
}

// Unlock releases what Lock(s) took.
func (p *Plan) Unlock(s Site) {
	if p != nil {
		p.unlock(s)
	}
}

func (p *Plan) lock(s Site) {
	switch p.modes[s] {
	case Read:
		p.table.RLock()
	case Write:
		p.table.Lock()
	}
}

func (p *Plan) unlock(s Site) {
	switch p.modes[s] {
	case Read:
		p.table.RUnlock()
	case Write:
		p.table.Unlock()
	}
}

// Mode returns how the plan takes the table lock at s.
func (p *Plan) Mode(s Site) Mode {
	if p == nil {
		return None
	}
	return p.modes[s]
}

// Has reports whether toggle t is on.
func (p *Plan) Has(t Toggle) bool { return p != nil && p.toggles&t != 0 }

// Name returns the plan's name as Parse accepts it: the preset, then its
// toggles in the order of Toggles. The nil Plan is "scalable".
func (p *Plan) Name() string {
	if p == nil {
		return "scalable"
	}
	return p.name
}

// Unsafe reports whether the plan has an unsafe toggle on.
func (p *Plan) Unsafe() bool { return p.Has(unsafeToggles) }

// TableLock reports whether the plan takes a table lock at some site.
func (p *Plan) TableLock() bool {
	if p == nil {
		return false
	}
	for _, m := range p.modes {
		if m != None {
			return true
		}
	}
	return false
}

// ErrUnsafeNotBuilt is the error, wrapped, of Parse naming an unsafe
// toggle in a build without the tasklist_unsafe tag.
var ErrUnsafeNotBuilt = errors.New("this build leaves the unsafe toggles out; a build with -tags tasklist_unsafe has them")

// Parse builds the plan named by spec: a preset followed by
// comma-separated toggles ("linux-2.6.35,exit-ptrace-fastpath"). A
// toggle that its preset already has is accepted and changes nothing. An
// unsafe toggle is refused unless allowUnsafe is set and the build has
// the toggles' code (UnsafeBuilt; ErrUnsafeNotBuilt). Parse returns nil
// for "scalable" with no toggles, the default plan.
func Parse(spec string, allowUnsafe bool) (*Plan, error) {
	parts := strings.Split(spec, ",")
	pre, ok := presetNamed(strings.TrimSpace(parts[0]))
	if !ok {
		return nil, fmt.Errorf("unknown plan %q (presets: %s)", parts[0], strings.Join(PresetNames(), ", "))
	}
	toggles := pre.toggles
	for _, name := range parts[1:] {
		name = strings.TrimSpace(name)
		info, ok := toggleNamed(name)
		if !ok {
			return nil, fmt.Errorf("unknown toggle %q (toggles: %s)", name, strings.Join(ToggleNames(), ", "))
		}
		switch {
		case info.Unsafe && !UnsafeBuilt:
			return nil, fmt.Errorf("toggle %s is unsafe (%s): %w", name, info.Races, ErrUnsafeNotBuilt)
		case info.Unsafe && !allowUnsafe:
			return nil, fmt.Errorf("toggle %s is unsafe (%s): name it only with --unsafe", name, info.Races)
		}
		toggles |= info.Bit
	}
	if pre.Name == "scalable" && toggles == 0 {
		return nil, nil
	}
	p := &Plan{toggles: toggles, modes: pre.modes, sem: pre.sem}
	p.applyToggles()
	p.name = pre.Name
	for _, t := range toggleTable {
		if toggles&t.Bit != 0 && pre.toggles&t.Bit == 0 {
			p.name += "," + t.Name
		}
	}
	p.table.Init(tableClass, 0)
	return p, nil
}

// MustParse is Parse for names known to be valid; it panics on an error.
func MustParse(spec string, allowUnsafe bool) *Plan {
	p, err := Parse(spec, allowUnsafe)
	if err != nil {
		panic(err)
	}
	return p
}

// applyToggles adjusts the preset's sites to the toggles.
func (p *Plan) applyToggles() {
	if p.toggles&ZhangV1 != 0 {
		p.toggles |= ExitPtraceFastpath // it is the fast path, without its barrier
	}
	if p.toggles&SemPermNoRevalidate != 0 {
		p.toggles |= SemLocklessPerm // there is nothing to revalidate otherwise
	}
	if p.toggles&PrioWithoutTasklist != 0 {
		p.modes[PrioProcess] = None
		p.modes[PrioUser] = None
	}
	if p.toggles&PgrpWalkUnlocked != 0 {
		p.modes[PrioPgrp] = None // the walk takes no lock at all
	}
}

// TakesExitPtrace reports whether an exiting task that traces nobody
// still takes the table lock for exit_ptrace (Linux before seed 000).
func (p *Plan) TakesExitPtrace() bool {
	return p != nil && p.modes[ExitPtrace] != None && p.toggles&ExitPtraceFastpath == 0
}

// EntropyShards returns how many shards the plan's entropy pool has: 1,
// Linux's single input pool, for a plan with a table lock; 0, the
// default sharding, otherwise.
func (p *Plan) EntropyShards() int {
	if p.TableLock() {
		return 1
	}
	return 0
}

// SemLocking says how a plan locks semaphore sets. The zero value is
// tasklist's own design, which is Linux's since seed 003 and the
// per-semaphore locks: per-semaphore locks for single operations, lookups
// and permission checks outside the set lock, revalidated under it.
type SemLocking struct {
	// SetLockOnly: every operation takes the set lock; there are no
	// per-semaphore locks.
	SetLockOnly bool
	// PermUnderLock: the lookup and the permission check run under the
	// set lock (before seed 003).
	PermUnderLock bool
	// WakeAll: a change wakes every sleeper of the set to look again, as
	// gVisor does, instead of completing the sleepers it satisfies.
	WakeAll bool
	// NoRevalidate (unsafe): the lockless lookup is not checked again
	// under the set lock.
	NoRevalidate bool
}

// SemLocking returns how the plan locks semaphore sets.
func (p *Plan) SemLocking() SemLocking {
	if p == nil {
		return SemLocking{}
	}
	l := SemLocking{NoRevalidate: p.toggles&SemPermNoRevalidate != 0}
	if p.sem != semFine {
		l.SetLockOnly = true
		l.PermUnderLock = p.toggles&SemLocklessPerm == 0
		l.WakeAll = p.sem == semSetLockWakeAll
	}
	return l
}
