// Package goexec is a Go test binary that starts processes with os/exec: one
// that exits, one that fails, and one it interrupts.
package goexec

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestExec(t *testing.T) {
	if err := exec.Command("true").Run(); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("false").Run(); err == nil {
		t.Fatal("false succeeded")
	}
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("interrupted sleep succeeded")
	}
}
