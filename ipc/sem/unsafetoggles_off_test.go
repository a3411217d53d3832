//go:build !tasklist_unsafe

package sem

import (
	"fmt"
	"strings"
	"testing"

	"tasklist/plan"
)

// TestNoRevalidateNeedsTheTag: a build without the tasklist_unsafe tag
// refuses the NoRevalidate design, whose code it leaves out, and says how
// to get a build that has it.
func TestNoRevalidateNeedsTheTag(t *testing.T) {
	defer func() {
		if r := fmt.Sprint(recover()); !strings.Contains(r, "-tags tasklist_unsafe") {
			t.Errorf("NewNamespaceLocking with NoRevalidate: recovered %q, want the build tag named", r)
		}
	}()
	newNS(plan.SemLocking{NoRevalidate: true})
}
