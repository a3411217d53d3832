package bench

import (
	"fmt"
	"slices"
	"strings"

	"tasklist/kernel"
	"tasklist/kernel/pid"
	"tasklist/plan"
)

// The names of the controls and of the host, usable wherever a plan is.
const (
	// Private gives each worker a kernel of its own: nothing is shared,
	// which is the limit on this machine.
	Private = "private"
	// PrivateCursor gives each worker a kernel of its own that draws its
	// pids from one shared cursor: the limit of any table that keeps
	// Linux's global pid order.
	PrivateCursor = "private+cursor"
	// Host is the machine's own Linux kernel (package bench/host).
	Host = "host"
)

// target is what a point runs on: a plan's shared kernel, a control's
// kernels, or the host.
type target struct {
	name string
	host bool
	// kernels makes the kernels of a run's workers, one per worker.
	kernels func(workers int) ([]*kernel.Kernel, error)
}

// newTarget resolves a plan name: a preset with its toggles (package
// plan), Private, PrivateCursor or Host.
func newTarget(name string) (*target, error) {
	switch name {
	case Host:
		return &target{name: name, host: true}, nil
	case Private:
		return &target{name: name, kernels: func(n int) ([]*kernel.Kernel, error) {
			return eachOwn(n, func() kernel.Config { return kernel.Config{} })
		}}, nil
	case PrivateCursor:
		return &target{name: name, kernels: func(n int) ([]*kernel.Kernel, error) {
			space, err := pid.NewSpace(pid.DefaultMax)
			if err != nil {
				return nil, err
			}
			return eachOwn(n, func() kernel.Config { return kernel.Config{PIDSpace: space} })
		}}, nil
	}
	if _, err := plan.Parse(name, false); err != nil {
		return nil, err
	}
	return &target{name: name, kernels: func(n int) ([]*kernel.Kernel, error) {
		// A plan carries its table lock, so each kernel gets its own.
		p, err := plan.Parse(name, false)
		if err != nil {
			return nil, err
		}
		k, err := kernel.New(kernel.Config{Plan: p})
		if err != nil {
			return nil, err
		}
		ks := make([]*kernel.Kernel, n)
		for i := range ks {
			ks[i] = k
		}
		return ks, nil
	}}, nil
}

func eachOwn(n int, cfg func() kernel.Config) ([]*kernel.Kernel, error) {
	ks := make([]*kernel.Kernel, n)
	for i := range ks {
		k, err := kernel.New(cfg())
		if err != nil {
			return nil, err
		}
		ks[i] = k
	}
	return ks, nil
}

// SplitPlans splits a comma-separated list of plans into plan names. A
// toggle belongs to the preset before it, as in package plan's names:
// "scalable,linux-2.6.35,prio-without-tasklist,host" is scalable,
// "linux-2.6.35,prio-without-tasklist" and host. Every name is checked.
func SplitPlans(list string) ([]string, error) {
	var names []string
	toggles := plan.ToggleNames()
	unsafe := map[string]plan.ToggleInfo{}
	for _, t := range plan.Toggles() {
		if t.Unsafe {
			unsafe[t.Name] = t
		}
	}
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
			return nil, fmt.Errorf("empty plan name in %q", list)
		case unsafe[item].Unsafe:
			// A race recreated on purpose is checked (tasklist check
			// --unsafe), not measured.
			return nil, fmt.Errorf("toggle %s is unsafe (%s): a sweep runs safe plans only", item, unsafe[item].Races)
		case slices.Contains(toggles, item):
			if len(names) == 0 || names[len(names)-1] == Host || names[len(names)-1] == Private || names[len(names)-1] == PrivateCursor {
				return nil, fmt.Errorf("toggle %s must follow a preset", item)
			}
			names[len(names)-1] += "," + item
		default:
			names = append(names, item)
		}
	}
	for _, name := range names {
		if _, err := newTarget(name); err != nil {
			// An unknown name may have been meant for a control; any other
			// refusal is about the toggles, which controls do not take.
			if preset, _, _ := strings.Cut(name, ","); !slices.Contains(plan.PresetNames(), preset) {
				return nil, fmt.Errorf("%v (controls: %s, %s, %s)", err, Private, PrivateCursor, Host)
			}
			return nil, err
		}
	}
	return names, nil
}
