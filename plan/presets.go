package plan

import "strings"

// Toggle is a set of seed changes, one bit each.
type Toggle uint32

// The toggles. The safe ones are the seeds' changes (docs/seeds.md describes
// the seed threads); the unsafe ones put
// a lock where a seed thread showed it to be racy, so that the race
// checker (tasklist check) can show the race.
const (
	// ExitPtraceFastpath (seed 000): an exiting task that traces nobody
	// takes no table lock for exit_ptrace.
	ExitPtraceFastpath Toggle = 1 << iota
	// ReleaseTraceesInReaper (seed 001): the dead tracees exit_ptrace
	// detached are released after exit_notify's section (before the zap
	// when the tracer is its namespace's reaper), not in exit_ptrace.
	ReleaseTraceesInReaper
	// PrioWithoutTasklist (seed 002): get/setpriority take no table lock
	// for PRIO_PROCESS and PRIO_USER; PRIO_PGRP keeps the read lock.
	PrioWithoutTasklist
	// SemLocklessPerm (seed 003): semaphore lookups and permission checks
	// run before the set lock is taken, and the set is revalidated under
	// it.
	SemLocklessPerm
	// EntropyOutsideLock (seed 004): release_task feeds the entropy pool
	// after its table section.
	EntropyOutsideLock
	// FreePIDOutsideLock (Linux 6.15): release_task frees the pid after
	// its table section.
	FreePIDOutsideLock
	// ZhangV1 (seed 000, unsafe): the exit_ptrace fast path of the first
	// patch, without the barrier that orders it against PTRACE_TRACEME:
	// TRACEME tests its parent's exiting state before it links, so a
	// parent whose exit passed exit_ptrace can be left with a tracee.
	ZhangV1
	// PgrpWalkUnlocked (seed 002, unsafe): a PRIO_PGRP walk follows the
	// group's member list without the group's lock, so a setpgid that
	// moves a member under it sends the walk into the other group.
	PgrpWalkUnlocked
	// SemPermNoRevalidate (seed 003, unsafe): the lockless lookup is not
	// checked again under the set lock, so an operation can act on a set
	// removed since it was looked up.
	SemPermNoRevalidate

	unsafeToggles = ZhangV1 | PgrpWalkUnlocked | SemPermNoRevalidate
)

// ToggleInfo describes a toggle.
type ToggleInfo struct {
	Bit  Toggle
	Name string
	// Seed is the seed thread the change comes from ("000" … "004"), or
	// the Linux release that made it.
	Seed string
	// Function is the Linux function the toggle changes.
	Function string
	// Summary says what the toggle does, in one line.
	Summary string
	// Unsafe marks a toggle that recreates a race; Races names it.
	Unsafe bool
	Races  string
}

var toggleTable = []ToggleInfo{
	{Bit: ExitPtraceFastpath, Name: "exit-ptrace-fastpath", Seed: "000", Function: "exit_ptrace",
		Summary: "an exiting task that traces nobody skips exit_ptrace's write lock"},
	{Bit: ReleaseTraceesInReaper, Name: "release-tracees-in-reaper", Seed: "001", Function: "find_child_reaper",
		Summary: "dead tracees are released after exit_notify, before the zap for a namespace's reaper"},
	{Bit: PrioWithoutTasklist, Name: "prio-without-tasklist", Seed: "002", Function: "getpriority/setpriority",
		Summary: "PRIO_PROCESS and PRIO_USER take no table lock; PRIO_PGRP keeps the read lock"},
	{Bit: SemLocklessPerm, Name: "sem-lockless-perm", Seed: "003", Function: "ipc_obtain_object_check",
		Summary: "semaphore lookups and permission checks run outside the set lock, revalidated under it"},
	{Bit: EntropyOutsideLock, Name: "entropy-outside-lock", Seed: "004", Function: "release_task/add_device_randomness",
		Summary: "a released task's runtime is fed to the entropy pool after the table section"},
	{Bit: FreePIDOutsideLock, Name: "free-pid-outside-lock", Seed: "linux-6.15", Function: "release_task/free_pid",
		Summary: "a released task's pid is freed after the table section"},
	{Bit: ZhangV1, Name: "zhang-v1", Seed: "000", Function: "exit_ptrace/ptrace_traceme", Unsafe: true,
		Summary: "exit_ptrace's fast path without the barrier that orders it against PTRACE_TRACEME",
		Races:   "TRACEME links to a parent already past exit_ptrace"},
	{Bit: PgrpWalkUnlocked, Name: "pgrp-walk-unlocked", Seed: "002", Function: "do_each_pid_thread(PIDTYPE_PGID)", Unsafe: true,
		Summary: "a PRIO_PGRP walk reads the group's member list without its lock",
		Races:   "a walk racing setpgid continues into the moved member's new group"},
	{Bit: SemPermNoRevalidate, Name: "sem-perm-no-revalidate", Seed: "003", Function: "ipc_valid_object", Unsafe: true,
		Summary: "the lockless semaphore lookup is not revalidated under the set lock",
		Races:   "a semop acts on a set removed after its lookup"},
}

// Toggles describes every toggle, the safe ones first.
func Toggles() []ToggleInfo { return append([]ToggleInfo(nil), toggleTable...) }

// ToggleNames returns the toggles' names.
func ToggleNames() []string {
	names := make([]string, len(toggleTable))
	for i, t := range toggleTable {
		names[i] = t.Name
	}
	return names
}

func toggleNamed(name string) (ToggleInfo, bool) {
	for _, t := range toggleTable {
		if t.Name == name {
			return t, true
		}
	}
	return ToggleInfo{}, false
}

// PresetInfo describes a preset.
type PresetInfo struct {
	Name    string
	Summary string

	toggles Toggle
	modes   [numSites]Mode
	sem     semDesign
}

// semDesign is how a preset locks semaphore sets before toggles apply.
type semDesign uint8

const (
	// semFine: per-semaphore locks for single operations, the set lock
	// with global-mode hysteresis for complex ones (Linux since 3.10/4.x).
	semFine semDesign = iota
	// semSetLock: every operation takes the set lock (Linux before 3.10).
	semSetLock
	// semSetLockWakeAll: the set lock, and every change wakes every
	// sleeper to look again (gVisor).
	semSetLockWakeAll
)

// linuxModes is where Linux 2.6.35 takes tasklist_lock, and prlimit64,
// which came in 2.6.36 and takes it for another process's limits.
var linuxModes = [numSites]Mode{
	CloneLink: Write, ExitPtrace: Write, ExitNotify: Write, Release: Write,
	PtraceLink: Write, PtraceRequest: Read, SetPgid: Write, ExecSwap: Write,
	WaitScan: Read, KillGroup: Read, PrioProcess: Read, PrioPgrp: Read, PrioUser: Read,
	Prlimit: Read,
}

// gvisorModes is where gVisor takes its TaskSet lock.
var gvisorModes = [numSites]Mode{
	CloneLink: Write, ExitStart: Write, ExitPtrace: Write, ExitNotify: Write, Release: Write,
	PtraceLink: Write, PtraceRequest: Write, SetPgid: Write, ExecSwap: Write,
	WaitScan: Write, KillGroup: Read, PrioProcess: Read, PrioPgrp: Read, PrioUser: Read,
	Prlimit: Read,
}

var presetTable = []PresetInfo{
	{Name: "scalable", Summary: "tasklist's own design: no table lock, per-object locks only (the default)"},
	{Name: "linux-2.6.35", Summary: "tasklist_lock where Linux took it in 2010; pid freeing and the entropy feed inside it; one lock per semaphore set, permission checks under it",
		modes: linuxModes, sem: semSetLock},
	{Name: "linux-5.7", Summary: "linux-2.6.35 with the changes of seeds 000 and 001",
		modes: linuxModes, sem: semSetLock, toggles: ExitPtraceFastpath | ReleaseTraceesInReaper},
	{Name: "linux-6.15", Summary: "every seed change and free_pid outside the lock; per-semaphore locks with the global-mode hysteresis",
		modes: linuxModes, sem: semFine,
		toggles: ExitPtraceFastpath | ReleaseTraceesInReaper | PrioWithoutTasklist | SemLocklessPerm |
			EntropyOutsideLock | FreePIDOutsideLock},
	{Name: "gvisor", Summary: "one TaskSet lock written by clone, every exit stage, wait (even WNOHANG), ptrace and setpgid/setsid; one lock per semaphore set, wake-all",
		modes: gvisorModes, sem: semSetLockWakeAll},
}

// Presets describes every preset.
func Presets() []PresetInfo { return append([]PresetInfo(nil), presetTable...) }

// PresetNames returns the presets' names.
func PresetNames() []string {
	names := make([]string, len(presetTable))
	for i, p := range presetTable {
		names[i] = p.Name
	}
	return names
}

// Toggles returns the toggles the preset has on.
func (p PresetInfo) Toggles() []string {
	var names []string
	for _, t := range toggleTable {
		if p.toggles&t.Bit != 0 {
			names = append(names, t.Name)
		}
	}
	return names
}

// Sites returns where the preset takes its table lock, as "site:mode"
// pairs in site order.
func (p PresetInfo) Sites() []string {
	var s []string
	for site, m := range p.modes {
		if m != None {
			s = append(s, Site(site).String()+":"+m.String())
		}
	}
	return s
}

func presetNamed(name string) (PresetInfo, bool) {
	for _, p := range presetTable {
		if strings.EqualFold(p.Name, name) {
			return p, true
		}
	}
	return PresetInfo{}, false
}
