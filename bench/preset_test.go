package bench

import (
	"strings"
	"testing"
	"time"

	"tasklist/workload"
)

// TestPresets: every preset names workloads and plans that exist, with a
// timing TimingFor accepts, and makes a valid sweep; an unknown name is
// refused with the list.
func TestPresets(t *testing.T) {
	for _, name := range PresetNames {
		s, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Reps: s.Reps, Workers: s.Workers}
		if cfg.Workers == nil {
			cfg.Workers = DefaultWorkers()
		}
		if cfg.Timing, err = TimingFor(s.Duration); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		names := s.Workloads
		if names == nil {
			names = workload.Names()
		}
		plans, err := SplitPlans(strings.Join(s.Plans, ","))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, w := range names {
			wl, err := workload.Named(w)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			cfg.Groups = append(cfg.Groups, Group{Workload: wl, Plans: plans})
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Preset("nosuch"); err == nil || !strings.Contains(err.Error(), "presets: default, quick") {
		t.Errorf("Preset(nosuch) = %v", err)
	}
}

// TestTimingFor: a repetition's time is split into Samples samples after
// a warm-up of a quarter of it; one too short for a sample is refused.
func TestTimingFor(t *testing.T) {
	got, err := TimingFor(48 * time.Millisecond)
	if want := (Timing{Warmup: 12 * time.Millisecond, Sample: 16 * time.Millisecond, Samples: Samples}); err != nil || got != want {
		t.Errorf("TimingFor(48ms) = %+v, %v; want %+v", got, err, want)
	}
	for _, d := range []time.Duration{0, -time.Second, 2} {
		if _, err := TimingFor(d); err == nil {
			t.Errorf("TimingFor(%v) accepted", d)
		}
	}
	if ws := DefaultWorkers(); ws[0] != 1 || ws[1] != 2 {
		t.Errorf("DefaultWorkers = %v", ws)
	}
}
