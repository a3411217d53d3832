package workload

import (
	"bufio"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

//go:embed default.mix
var defaultMix string

// mixWorkload is the mix; its setup, which sets up the other workloads,
// is attached at init to break the cycle through the list of all.
var mixWorkload = &Workload{Name: "mix", Seed: "all", Unit: JobsPerMin, PerOp: 1,
	Summary: "an AIM7-style weighted mix of the other jobs, each worker drawing without replacement from its deck"}

func init() { mixWorkload.setup = setupMix }

// Mix is a parsed workfile: the mix workload's jobs and their weights.
type Mix struct {
	Jobs []MixJob
}

// MixJob is one line of a workfile.
type MixJob struct {
	Weight   int
	Workload *Workload
}

// DefaultMix returns the workfile in the repository's workload/default.mix.
func DefaultMix() *Mix {
	m, err := ParseMix(strings.NewReader(defaultMix), "default.mix")
	if err != nil {
		panic(err)
	}
	return m
}

// DefaultMixText returns the default workfile's text, to start an edited
// one from.
func DefaultMixText() string { return defaultMix }

// MaxDeck bounds a mix's weights, each and together: a worker's deck holds
// every job as many times as its weight, and the host program's deck no
// more than this many jobs.
const MaxDeck = 4096

// ParseMix reads a workfile: lines "WEIGHT NAME" naming a workload other
// than mix with a positive weight, the weights adding up to at most
// MaxDeck; '#' starts a comment. Errors name the file and line.
func ParseMix(r io.Reader, name string) (*Mix, error) {
	m := &Mix{}
	seen := map[string]bool{}
	total := 0
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...))
		}
		if len(fields) != 2 {
			return nil, bad("want WEIGHT NAME, got %q", strings.TrimSpace(text))
		}
		weight, err := strconv.Atoi(fields[0])
		switch {
		case errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(fields[0], "-"), err == nil && weight > MaxDeck:
			return nil, bad("weight %s too large (at most %d)", fields[0], MaxDeck)
		case err != nil || weight <= 0:
			return nil, bad("weight %q is not a positive integer", fields[0])
		case total+weight > MaxDeck:
			return nil, bad("the weights add up to %d, more than %d", total+weight, MaxDeck)
		}
		total += weight
		switch {
		case fields[1] == "mix":
			return nil, bad("a mix cannot contain itself")
		case strings.HasPrefix(fields[1], ReplayPrefix):
			return nil, bad("a trace's replay cannot be part of a mix")
		}
		w, err := Named(fields[1])
		if err != nil {
			return nil, bad("%v", err)
		}
		if seen[w.Name] {
			return nil, bad("%s listed twice", w.Name)
		}
		seen[w.Name] = true
		m.Jobs = append(m.Jobs, MixJob{Weight: weight, Workload: w})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(m.Jobs) == 0 {
		return nil, fmt.Errorf("%s: no jobs", name)
	}
	return m, nil
}

// String returns the mix as "NAME:WEIGHT,…".
func (m *Mix) String() string {
	parts := make([]string, len(m.Jobs))
	for i, j := range m.Jobs {
		parts[i] = fmt.Sprintf("%s:%d", j.Workload.Name, j.Weight)
	}
	return strings.Join(parts, ",")
}

// setupMix sets up every job of the mix on e and gives each worker a
// deck of its jobs' ops.
func setupMix(e *Env) (*Instance, error) {
	m := e.Mix
	if m == nil {
		m = DefaultMix()
	}
	inst := &Instance{Ops: make([]Op, len(e.Kernels))}
	decks := make([][]Op, len(e.Kernels))
	for _, job := range m.Jobs {
		sub, err := job.Workload.Setup(e)
		if err != nil {
			return nil, err
		}
		inst.workers = append(inst.workers, sub.workers...)
		for w, op := range sub.Ops {
			for range job.Weight {
				decks[w] = append(decks[w], op)
			}
		}
	}
	for w := range decks {
		inst.Ops[w] = dealer(decks[w], uint64(w))
	}
	return inst, nil
}

// dealer runs deck's ops in a shuffled order, each once, then shuffles
// again.
func dealer(deck []Op, seed uint64) Op {
	rng := rand.New(rand.NewPCG(seed, 0x6d6978))
	next := len(deck)
	return func() (time.Duration, error) {
		if next == len(deck) {
			rng.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
			next = 0
		}
		op := deck[next]
		next++
		_, err := op()
		return 0, err
	}
}
