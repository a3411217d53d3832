//go:build !tasklist_unsafe

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestUnsafeNeedsTheTag: in a build without the tasklist_unsafe tag, an
// unsafe toggle is a usage error even with --unsafe, and the message says
// how to run a build that has it.
func TestUnsafeNeedsTheTag(t *testing.T) {
	for cmd, args := range map[string][]string{"check": nil, "run": {"../../examples/quickstart.scn"}} {
		var out, errs bytes.Buffer
		code := run(context.Background(), append([]string{cmd, "--unsafe", "--plan", "scalable,zhang-v1"}, args...), &out, &errs)
		want := "go run -tags tasklist_unsafe ./cmd/tasklist " + cmd + " --unsafe --plan scalable,zhang-v1"
		if code != 2 || !strings.Contains(errs.String(), want) {
			t.Errorf("%s --unsafe: exit %d, stderr %q; want 2 and %q", cmd, code, errs.String(), want)
		}
	}
}
