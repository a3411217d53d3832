package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for a program that runs the host
// program: with HOSTBENCH_CALLER set it runs one long sem-shm run, as
// `tasklist bench` would, stopping on SIGINT, and exits.
func TestMain(m *testing.M) {
	if os.Getenv("HOSTBENCH_CALLER") == "" {
		os.Exit(m.Run())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	_, err := Run(ctx, Spec{Workload: "sem-shm", Workers: 2, Warmup: time.Millisecond, Sample: time.Minute, Samples: 1})
	if !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "host run:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestNothingOutlivesTheCaller runs the host program from a stand-in for
// bench and ends the stand-in two ways: SIGINT to its process group, as a
// terminal's Ctrl-C, and SIGKILL to it alone. Every process of the host
// program must be gone afterwards, and so must its semaphore sets: they
// are in an IPC namespace of the program's own, which dies with it, where
// it may make one (as root), and otherwise not left in ours.
func TestNothingOutlivesTheCaller(t *testing.T) {
	bin := binary(t)
	for _, tc := range []struct {
		name string
		end  func(caller *os.Process) error
	}{
		{"SIGINT to the group", func(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGINT) }},
		{"SIGKILL to the caller", func(p *os.Process) error { return p.Kill() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sets := semSets(t)
			caller := exec.Command(os.Args[0], "-test.run=^$")
			caller.Env = append(os.Environ(), "HOSTBENCH_CALLER=1")
			caller.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			caller.Stderr = os.Stderr
			if err := caller.Start(); err != nil {
				t.Fatal(err)
			}
			defer caller.Process.Kill()
			procs := hostProcs(t, bin, caller.Process.Pid)
			privateIPC := false
			if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/ipc", procs[0])); err == nil {
				self, _ := os.Readlink("/proc/self/ns/ipc")
				privateIPC = ns != self
			}
			if os.Geteuid() == 0 && !privateIPC {
				t.Error("as root, the host program's semaphore sets are not in a namespace of its own")
			}
			if err := tc.end(caller.Process); err != nil {
				t.Fatal(err)
			}
			caller.Wait()
			deadline := time.Now().Add(20 * time.Second)
			for alive(bin, procs) > 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := alive(bin, procs); n > 0 {
				t.Fatalf("%d of the host program's %d processes outlived their caller", n, len(procs))
			}
			if after := semSets(t); !privateIPC && after > sets {
				t.Fatalf("%d semaphore sets after the run, %d before", after, sets)
			}
		})
	}
}

// hostProcs waits until the host program started by caller runs its
// workers and returns the pids of all its processes, the parent first.
func hostProcs(t *testing.T, bin string, caller int) []int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var procs []int
		for _, pid := range children(bin, caller) {
			procs = append(append(procs, pid), children(bin, pid)...)
		}
		// The parent and sem-shm's two workers.
		if len(procs) == 3 {
			return procs
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the host program did not start its workers")
	return nil
}

// children lists the processes running bin whose parent is ppid.
func children(bin string, ppid int) []int {
	var out []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, stat := range stats {
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(stat)))
		data, err := os.ReadFile(stat)
		if err != nil {
			continue
		}
		// The parent is the second field after the command's parenthesis.
		i := strings.LastIndexByte(string(data), ')')
		f := strings.Fields(string(data[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(ppid) && running(bin, pid) {
			out = append(out, pid)
		}
	}
	return out
}

// alive counts the processes of pids that still run bin.
func alive(bin string, pids []int) int {
	n := 0
	for _, pid := range pids {
		if running(bin, pid) {
			n++
		}
	}
	return n
}

func running(bin string, pid int) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && exe == bin
}
