//go:build !tasklist_unsafe

package kernel

import "tasklist/plan"

// Without the tasklist_unsafe build tag no plan has an unsafe toggle
// (plan.Parse refuses them), and their code paths (unsafetoggles.go) are
// left out: these stand in for them and do nothing.

func walkPgrpUnlocked(*plan.Plan, *ProcessGroup, func(*Task)) bool { return false }

func tracemeTestsParentEarly(*plan.Plan, *Task) (tested, running bool) { return false, false }
