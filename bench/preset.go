package bench

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Sweep is what a sweep measures where its caller does not say otherwise:
// one of the presets of `tasklist bench`.
type Sweep struct {
	// Workloads names the workloads (package workload); nil for all.
	Workloads []string
	// Plans names the plans each workload runs on.
	Plans []string
	// Workers are the worker counts; nil for DefaultWorkers.
	Workers []int
	// Reps is the repetitions of each point.
	Reps int
	// Duration is the measured time of one repetition (TimingFor).
	Duration time.Duration
}

// PresetNames are the presets: "default", the whole sweep beside the host
// in under two minutes on two cores, and "quick", a smoke run of under
// twenty seconds.
var PresetNames = []string{"default", "quick"}

// Preset returns the preset called name.
func Preset(name string) (Sweep, error) {
	switch name {
	case "default":
		return Sweep{Plans: []string{"scalable", "linux-2.6.35", "gvisor", Private, Host}, Reps: 5,
			Duration: 48 * time.Millisecond}, nil
	case "quick":
		return Sweep{Workloads: []string{"fork-exit", "threadspawn", "get", "semop-multi"},
			Plans: []string{"scalable", Private, Host}, Workers: []int{1, 2}, Reps: 3, Duration: 30 * time.Millisecond}, nil
	}
	return Sweep{}, fmt.Errorf("unknown preset %q (presets: %s)", name, strings.Join(PresetNames, ", "))
}

// DefaultWorkers are the worker counts of a sweep that names none: 1, 2
// and twice the cores.
func DefaultWorkers() []int {
	ns := []int{1, 2, 2 * runtime.NumCPU()}
	slices.Sort(ns)
	return slices.Compact(ns)
}

// Samples is how many samples TimingFor divides a repetition into.
const Samples = 3

// TimingFor returns the timing of a repetition whose samples last d in
// all: a warm-up of a quarter of d, then Samples samples of equal length.
func TimingFor(d time.Duration) (Timing, error) {
	t := Timing{Warmup: d / 4, Sample: d / Samples, Samples: Samples}
	if t.Sample <= 0 {
		return Timing{}, fmt.Errorf("a repetition of %v is too short: want at least %v", d, time.Duration(Samples))
	}
	return t, nil
}
