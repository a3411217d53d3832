package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestCheckUsage: bad flags, unknown plans and unsafe toggles without
// --unsafe are usage errors, exit status 2.
func TestCheckUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--bogus"},
		{"extra"},
		{"--plan", "no-such-preset"},
		{"--plan", "scalable,zhang-v1"},
		{"--workers", "-1"},
		{"--duration", "0s"},
	} {
		var out, errs bytes.Buffer
		if code := run(append([]string{"check"}, args...), &out, &errs); code != 2 {
			t.Errorf("check %v: exit %d, want 2 (stderr %q)", args, code, errs.String())
		}
	}
}

// TestCheckNothingFound: a short check of the default plan exits 0 and
// says how to replay it.
func TestCheckNothingFound(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"check", "--duration", "1s", "--seed", "5"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errs.String())
	}
	if s := out.String(); !strings.Contains(s, "nothing found") || !strings.Contains(s, "--seed 5") {
		t.Errorf("output:\n%s", s)
	}
}
