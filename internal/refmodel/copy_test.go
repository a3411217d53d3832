package refmodel

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

// randomCalls makes n random calls on m, drawn from r: forks and
// threads, exits, waits, groups and sessions, signals, priorities,
// ptrace and dispositions, so that every kind of object and link exists.
func randomCalls(m *Model, r *rand.Rand, n int) {
	for range n {
		tids := m.Running()
		tid := tids[r.IntN(len(tids))]
		all := m.Tasks()
		other := all[r.IntN(len(all))]
		switch r.IntN(12) {
		case 0, 1:
			m.Clone(tid, 0, int(unix.SIGCHLD))
		case 2:
			m.Clone(tid, threadFlags, 0)
		case 3:
			m.Exit(tid, r.IntN(3))
		case 4:
			m.ExitGroup(tid, 1)
		case 5:
			m.Wait4(tid, -1, unix.WNOHANG|unix.WUNTRACED|unix.WCONTINUED)
		case 6:
			m.Setpgid(tid, other, []int{0, other}[r.IntN(2)])
		case 7:
			m.Setsid(tid)
		case 8:
			m.Kill(tid, other, []int{0, int(unix.SIGSTOP), int(unix.SIGCONT), int(unix.SIGUSR1)}[r.IntN(4)])
		case 9:
			m.Setpriority(tid, unix.PRIO_PGRP, 0, r.IntN(40)-20)
		case 10:
			m.Ptrace(tid, []int{unix.PTRACE_TRACEME, unix.PTRACE_SEIZE, unix.PTRACE_ATTACH}[r.IntN(3)], other, 0, 0)
		case 11:
			m.Sigaction(tid, int(unix.SIGUSR1), SigAction{Handler: r.IntN(3)})
		}
	}
}

// pointers collects the address of every object reachable from v.
func pointers(v reflect.Value, seen map[uintptr]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		pointers(v.Elem(), seen)
	case reflect.Map:
		if !v.IsNil() {
			seen[v.Pointer()] = true
		}
		for it := v.MapRange(); it.Next(); {
			pointers(it.Value(), seen)
		}
	case reflect.Slice:
		if v.Len() > 0 {
			seen[v.Pointer()] = true
		}
		fallthrough
	case reflect.Array:
		for i := range v.Len() {
			pointers(v.Index(i), seen)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			pointers(v.Field(i), seen)
		}
	}
}

// TestCopySharesNothing requires a copy to reach no object, map or slice
// of the original, and to be Equal to it.
func TestCopySharesNothing(t *testing.T) {
	for seed := range uint64(20) {
		m := New(Config{})
		randomCalls(m, rand.New(rand.NewPCG(seed, 0)), 60)
		c := m.Copy()
		if !c.Equal(m) || c.Hash() != m.Hash() {
			t.Fatalf("seed %d: the copy differs from the original", seed)
		}
		orig, cp := map[uintptr]bool{}, map[uintptr]bool{}
		pointers(reflect.ValueOf(m), orig)
		pointers(reflect.ValueOf(c), cp)
		for p := range cp {
			if orig[p] {
				t.Fatalf("seed %d: the copy shares an object with the original", seed)
			}
		}
	}
}

// TestCopyBranches runs the same calls on a copy and on a model built
// from scratch by every call: they must end Equal, and the original must
// be left as it was.
func TestCopyBranches(t *testing.T) {
	for seed := range uint64(20) {
		m, replay := New(Config{}), New(Config{})
		randomCalls(m, rand.New(rand.NewPCG(seed, 0)), 40)
		randomCalls(replay, rand.New(rand.NewPCG(seed, 0)), 40)
		before := m.fingerprint()
		c := m.Copy()
		randomCalls(c, rand.New(rand.NewPCG(seed, 1)), 40)
		randomCalls(replay, rand.New(rand.NewPCG(seed, 1)), 40)
		if !c.Equal(replay) {
			t.Fatalf("seed %d: the copy and the replay differ after the same calls", seed)
		}
		if string(m.fingerprint()) != string(before) {
			t.Fatalf("seed %d: calls on the copy changed the original", seed)
		}
	}
}

// TestEqualSeesEveryField requires Equal to tell apart models that differ
// in one field only, and to ignore the rule counts.
func TestEqualSeesEveryField(t *testing.T) {
	m := New(Config{})
	p, _, _ := m.Clone(1, 0, int(unix.SIGCHLD))
	c := m.Copy()
	c.hits["x"]++
	if !c.Equal(m) {
		t.Fatal("rule counts made models unequal")
	}
	c.tasks[p].nice = 3
	if c.Equal(m) || c.Hash() == m.Hash() {
		t.Fatal("a changed nice value was not seen")
	}
	c = m.Copy()
	c.tasks[p].proc.sighand.act[unix.SIGUSR1].Handler = SigIgn
	if c.Equal(m) {
		t.Fatal("a changed disposition was not seen")
	}
}
