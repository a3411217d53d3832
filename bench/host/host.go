// Package host runs the benchmark workloads on the machine's own Linux
// kernel: src/hostbench.c, embedded here and built on first use with the
// host's C compiler into the user's cache directory (package cbuild),
// forks real worker processes and threads and uses real semaphores. It
// needs no privilege; run as root it also gives workers and get's
// population the users the model's workloads give them, and makes its
// semaphore sets in an IPC namespace of its own, which the kernel frees
// with them once its last process is gone. Unprivileged, the sets are made
// in the caller's namespace and removed by the program as it stops (see
// Run): only a SIGKILL aimed at the program itself, rather than at its
// caller, can then leave behind the set a worker was using.
package host

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"tasklist/internal/cbuild"
)

//go:embed src/hostbench.c
var source []byte

// Binary returns the path of the host program, building it on first use.
func Binary() (string, error) {
	if runtime.GOARCH != "amd64" {
		return "", fmt.Errorf("host benchmark: supports only amd64, not %s", runtime.GOARCH)
	}
	path, err := cbuild.Binary("hostbench", source, "-O2", "-pthread")
	if err != nil {
		return "", fmt.Errorf("host benchmark: %w", err)
	}
	return path, nil
}

// Spec is one run: a workload by its name in package workload, its
// workers, and the harness's timing.
type Spec struct {
	Workload string
	Workers  int
	Warmup   time.Duration
	// Sample is the length of each of Samples samples.
	Sample  time.Duration
	Samples int
	// Population is how many sleeping processes get's table holds
	// besides the workers.
	Population int
	// Mix is the mix's jobs as "NAME:WEIGHT,…" (workload.Mix.String).
	Mix string
}

// Sample is one fixed-length sample of a run.
type Sample struct {
	Length time.Duration
	// Counts holds each worker's iterations in the sample.
	Counts []uint64
	// Latencies holds the time of every timed call in the sample, for
	// pthread-create.
	Latencies []time.Duration
}

// Result is what a run measured.
type Result struct {
	Samples []Sample
	// Notes say where the run differed from the model's workload (for
	// instance, unprivileged, it cannot give workers users of their own).
	Notes []string
}

// Run runs spec. Cancelling ctx stops the program, which removes what it
// made (processes, semaphore sets) before it exits; Run then returns
// ctx's error.
//
// Nothing the program makes outlives the calling process, whatever ends
// it: the program runs in a process group of its own, which a terminal's
// Ctrl-C (sent to the foreground group) does not reach, and gets SIGTERM,
// its signal to stop and clean up, when the thread that started it dies
// (PR_SET_PDEATHSIG), which Run keeps alive until the program has exited.
func Run(ctx context.Context, spec Spec) (*Result, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	mix := spec.Mix
	if mix == "" {
		mix = "-"
	}
	cmd := exec.CommandContext(ctx, bin, "run", spec.Workload, strconv.Itoa(spec.Workers),
		strconv.FormatInt(spec.Warmup.Nanoseconds(), 10), strconv.FormatInt(spec.Sample.Nanoseconds(), 10),
		strconv.Itoa(spec.Samples), strconv.Itoa(spec.Population), mix)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The parent-death signal comes when the forking thread exits, not the
	// process: keep this goroutine on its thread, which no other goroutine
	// can then retire, until the program is gone.
	runtime.LockOSThread()
	err = cmd.Run()
	runtime.UnlockOSThread()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("host %s with %d workers: %s", spec.Workload, spec.Workers, msg)
	}
	r, err := parse(&stdout, spec.Workers)
	if err == nil && len(r.Samples) != spec.Samples {
		err = fmt.Errorf("%d samples, want %d", len(r.Samples), spec.Samples)
	}
	if err != nil {
		return nil, fmt.Errorf("host %s: reading its output: %w", spec.Workload, err)
	}
	return r, nil
}

// parse reads the program's "sample", "lat" and "note" lines.
func parse(out *bytes.Buffer, workers int) (*Result, error) {
	r := &Result{}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		kind, rest, _ := strings.Cut(sc.Text(), " ")
		if kind == "note" {
			r.Notes = append(r.Notes, rest)
			continue
		}
		fields := strings.Fields(rest)
		nums := make([]uint64, len(fields))
		for i, f := range fields {
			n, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad line %q", sc.Text())
			}
			nums[i] = n
		}
		switch {
		case kind == "sample" && len(nums) == 2+workers && int(nums[0]) == len(r.Samples)+1:
			r.Samples = append(r.Samples, Sample{Length: time.Duration(nums[1]), Counts: nums[2:]})
		case kind == "lat" && len(nums) >= 1 && int(nums[0]) == len(r.Samples):
			s := &r.Samples[len(r.Samples)-1]
			for _, ns := range nums[1:] {
				s.Latencies = append(s.Latencies, time.Duration(ns))
			}
		default:
			return nil, fmt.Errorf("bad line %q", sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return r, nil
}
