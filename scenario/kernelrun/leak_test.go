package kernelrun

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/scenario"
)

// helperEnv makes the test binary run the scenario file it names on the kernel runner, as
// `tasklist run --kernel` would, so that a test can interrupt a runner.
const helperEnv = "TASKLIST_KERNELRUN_HELPER"

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		os.Exit(scenario.RunFile(path, func() (scenario.Backend, error) { return New() }, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// procEntry is a process as /proc shows it.
type procEntry struct {
	pid, ppid int
	start     uint64
}

func processes(t *testing.T) map[int]procEntry {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	procs := map[int]procEntry{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		ppid, _ := strconv.Atoi(f[1])
		start, _ := strconv.ParseUint(f[19], 10, 64)
		procs[pid] = procEntry{pid: pid, ppid: ppid, start: start}
	}
	return procs
}

// tree returns root and every process whose parent chain leads to it.
func tree(t *testing.T, root int) []procEntry {
	procs := processes(t)
	var out []procEntry
	for _, p := range procs {
		for q, ok := p, true; ok && q.pid > 1; q, ok = procs[q.ppid] {
			if q.pid == root {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func pidNS(pid int) uint64 {
	var st unix.Stat_t
	if unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/pid", &st) != nil {
		return 0
	}
	return st.Ino
}

// checkGone fails unless every process of before is gone and no process is left in the pid
// namespace ns.
func checkGone(t *testing.T, before []procEntry, ns uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		procs := processes(t)
		for _, p := range before {
			if q, ok := procs[p.pid]; ok && q.start == p.start {
				left = append(left, strconv.Itoa(p.pid))
			}
		}
		for pid := range procs {
			if pidNS(pid) == ns {
				left = append(left, strconv.Itoa(pid)+" (in the namespace)")
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind: %s", strings.Join(left, ", "))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A run that fails part way, with tasks alive, threads, a background call blocked and a
// semaphore set, leaves nothing once closed.
func TestNothingLeftAfterFailure(t *testing.T) {
	s, err := scenario.Parse("fail", []byte(`
A = init.fork()
B = A.fork()
T = B.clone(CLONE_VM|CLONE_SIGHAND|CLONE_THREAD)
X = A.clone(CLONE_THREAD)
S = init.semget(IPC_PRIVATE, 1, 0600)
B.semop(S, {0, -1, 0}) &
X.getpid()
A.getpid() == init
`))
	if err != nil {
		t.Fatal(err)
	}
	b := newBackend(t)
	var out, errs bytes.Buffer
	if status := scenario.Run(s, b, &out, &errs); status != 1 {
		t.Errorf("status %d, want 1\n%s%s", status, out.String(), errs.String())
	}
	before := tree(t, b.InitPid())
	if len(before) != 3 {
		t.Errorf("%d processes in the agent tree, want 3 (init, A, B)", len(before))
	}
	ns := pidNS(b.InitPid())
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	checkGone(t, before, ns)
}

// An interrupted runner takes every task with it, prints no result for the call it was
// making, says so and exits with status 2.
func TestNothingLeftAfterInterrupt(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) { interrupt(t, sig) })
	}
}

func interrupt(t *testing.T, sig syscall.Signal) {
	newBackend(t).Close() // skips where the runner cannot run
	path := filepath.Join(t.TempDir(), "block.scn")
	src := `
A = init.fork()
B = A.fork()
T = B.clone(CLONE_VM|CLONE_SIGHAND|CLONE_THREAD)
S = init.semget(IPC_PRIVATE, 1, 0600)
A.semop(S, {0, -1, 0}) &
init.semtimedop(S, 60000, {0, -1, 0})
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// The runner makes its temporary directory in tmp, which must be empty once it is gone.
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+path, "TMPDIR="+tmp)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var before []procEntry
	for deadline := time.Now().Add(10 * time.Second); ; {
		before = tree(t, cmd.Process.Pid)
		if len(before) == 4 && strings.Contains(out.String(), "5: S =") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runner did not reach its blocking call: %d processes\n%s", len(before), out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	var ns uint64
	for _, p := range before {
		if p.ppid == cmd.Process.Pid {
			ns = pidNS(p.pid)
		}
	}
	time.Sleep(100 * time.Millisecond) // let it block in semtimedop
	cmd.Process.Signal(sig)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Errorf("runner ended with %v, want exit status 2", err)
	}
	if strings.Contains(out.String(), "\n7:") {
		t.Errorf("the interrupted call printed a result:\n%s", out.String())
	}
	if want := "block.scn:7: interrupted by " + unix.SignalName(sig); strings.Count(out.String(), want) != 1 {
		t.Errorf("the runner did not say %q once:\n%s", want, out.String())
	}
	var left []procEntry
	for _, p := range before {
		if p.pid != cmd.Process.Pid {
			left = append(left, p)
		}
	}
	checkGone(t, left, ns)
	if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 0 {
		t.Errorf("left in the temporary directory: %v %v", ents, err)
	}
}

// lockedBuffer collects a child's output while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
