package kernelrun

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"tasklist/scenario"
)

// ErrNeedRoot is returned by New when the runner may not create the namespaces init lives in.
var ErrNeedRoot = errors.New("tasklist run --kernel: needs root (CAP_SYS_ADMIN) to create pid and IPC namespaces")

// StallTimeout is how long a call may stay blocked, with every task asleep, before the runner
// stops waiting for it: nothing in a quiescent system can end such a sleep except a timeout,
// so the scenario has deadlocked. The call then prints EDEADLK and its task serves nothing
// more. A semtimedop's own timeout is added to it.
var StallTimeout = 5 * time.Second

// Backend is a scenario.Backend on the host kernel: every task is a process or thread of the
// agent, inside a fresh pid and IPC namespace whose init is the agent the runner started.
type Backend struct {
	cmd     *exec.Cmd
	dir     string // init's working directory, where any core file lands
	hellos  *helloBoard
	tasks   []*task
	sets    []int // SetRef -> semaphore set id
	release chan struct{}
	sigs    chan os.Signal
	closed  chan struct{}
	down    sync.Once
	// interrupted is set before an interrupt kills every task, so that the driver does not
	// report those deaths as results while the runner dies.
	interrupted atomic.Bool
}

// task is the runner's record of one scenario task. Its identity is kept after the task is
// gone, so that names keep printing.
type task struct {
	identity
	c    *conn
	gone bool
	bg   *bgCall
	hung bool // a foreground call stalled; its reply may still come
}

// bgCall is a call made with &, until its join.
type bgCall struct {
	op  int
	c   scenario.Call
	res *scenario.Result // decided without a reply: the task was gone or died in the call
	msg *message         // the reply, when it came before the join
}

// New starts init and returns a backend ready to run a scenario. It fails with ErrNeedRoot
// without the privilege to create namespaces and with ErrNoCompiler when the agent cannot be
// built.
func New() (*Backend, error) {
	if !hasSysAdmin() {
		return nil, ErrNeedRoot
	}
	agent, err := agentBinary()
	if err != nil {
		return nil, err
	}
	sv, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tasklist-kernel-")
	if err != nil {
		unix.Close(sv[0])
		unix.Close(sv[1])
		return nil, err
	}
	b := &Backend{
		dir:     dir,
		hellos:  newHelloBoard(),
		release: make(chan struct{}),
		sigs:    make(chan os.Signal, 1),
		closed:  make(chan struct{}),
	}
	agentEnd := os.NewFile(uintptr(sv[1]), "agent")
	b.cmd = &exec.Cmd{
		Path:       agent,
		Args:       []string{"tasklist-agent", "init", "3"},
		Env:        []string{},
		Dir:        dir,
		ExtraFiles: []*os.File{agentEnd},
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWIPC,
			Setsid:     true,
			Pdeathsig:  syscall.SIGKILL,
		},
	}
	started := make(chan error)
	go func() {
		// PR_SET_PDEATHSIG fires when the thread that forked exits, not the process: keep
		// that thread until init is gone. Exiting locked makes the runtime retire it.
		runtime.LockOSThread()
		err := b.cmd.Start()
		started <- err
		if err == nil {
			<-b.release
		}
	}()
	err = <-started
	agentEnd.Close()
	if err != nil {
		unix.Close(sv[0])
		os.RemoveAll(dir)
		if errors.Is(err, syscall.EPERM) {
			return nil, ErrNeedRoot
		}
		return nil, fmt.Errorf("tasklist run --kernel: starting init: %w", err)
	}
	signal.Notify(b.sigs, syscall.SIGINT, syscall.SIGTERM)
	go b.onSignal()
	c, err := newConn(sv[0], b.hellos)
	if err != nil {
		b.Close()
		return nil, err
	}
	id, err := readIdentity(b.cmd.Process.Pid)
	b.tasks = []*task{{identity: id, c: c}}
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("tasklist run --kernel: init: %w", err)
	}
	b.quiesce()
	return b, nil
}

// onSignal tears everything down on SIGINT or SIGTERM, then dies of the signal as it would
// have without the runner; where the signal was ignored when the runner started (a background
// job of a shell), it exits with the status a shell gives such a death.
func (b *Backend) onSignal() {
	select {
	case s := <-b.sigs:
		b.interrupted.Store(true)
		b.teardown()
		signal.Reset(s)
		sig := s.(syscall.Signal)
		syscall.Kill(os.Getpid(), sig)
		time.Sleep(100 * time.Millisecond)
		os.Exit(128 + int(sig))
	case <-b.closed:
	}
}

// teardown kills init from outside its namespace, which kills every task of the namespace;
// init is reaped only once the namespace is empty, and the IPC namespace, with every
// semaphore set, goes with its last task.
func (b *Backend) teardown() {
	b.down.Do(func() {
		b.cmd.Process.Kill()
		b.cmd.Wait()
		close(b.release)
		os.RemoveAll(b.dir)
	})
}

// Close implements scenario.Backend.
func (b *Backend) Close() error {
	signal.Stop(b.sigs)
	select {
	case <-b.closed:
		return nil
	default:
		close(b.closed)
	}
	b.teardown()
	for _, t := range b.tasks {
		if t.c != nil {
			t.c.close()
		}
	}
	b.hellos.closeAll()
	return nil
}

// InitPid returns init's pid in the runner's pid namespace.
func (b *Backend) InitPid() int { return b.cmd.Process.Pid }

// PidIn implements scenario.Backend from the pids the kernel gave each task at every level.
func (b *Backend) PidIn(viewer, target scenario.TaskRef) int {
	v, t := b.tasks[viewer], b.tasks[target]
	level := len(v.ns) - 1
	if level < 0 || level >= len(t.ns) || t.ns[level] != v.ns[level] {
		return 0
	}
	return t.nspid[level]
}

// Do implements scenario.Backend.
func (b *Backend) Do(actor scenario.TaskRef, c scenario.Call) scenario.Result {
	t := b.tasks[actor]
	res := b.do(actor, t, c)
	b.quiesce()
	return res
}

func (b *Backend) do(actor scenario.TaskRef, t *task, c scenario.Call) scenario.Result {
	words, op, err := b.encode(actor, c)
	if err != nil {
		return errnoResult(unix.ENOSYS)
	}
	if r, ok := b.send(t, words); !ok {
		return r
	}
	return b.finish(t, op, c)
}

// finish waits for t's reply to call c and decodes it: a task that died in
// the call prints done, one stuck for good EDEADLK.
func (b *Backend) finish(t *task, op int, c scenario.Call) scenario.Result {
	m, out := b.await(t, op, stallFor(c))
	switch out {
	case died:
		return scenario.Result{Kind: scenario.ResultDone}
	case stalled:
		t.hung = true
		return errnoResult(unix.EDEADLK)
	}
	return b.decode(t, op, c, m)
}

// send gives t a command, or says why it cannot take one.
func (b *Backend) send(t *task, words []int64) (scenario.Result, bool) {
	if !b.alive(t) {
		return errnoResult(unix.ESRCH), false
	}
	if t.hung {
		select {
		case m, ok := <-t.c.msgs:
			closeFds(m)
			t.hung = !ok
		default:
		}
		if t.hung {
			return errnoResult(unix.EDEADLK), false
		}
	}
	if err := b.connect(t); err != nil {
		if errors.Is(err, errStalled) {
			return errnoResult(unix.EDEADLK), false
		}
		return errnoResult(unix.ESRCH), false
	}
	if err := t.c.send(words); err != nil {
		return errnoResult(unix.ESRCH), false
	}
	return scenario.Result{}, true
}

// Start implements scenario.Backend: it returns once the call has completed, or the task
// sleeps in the call's system call, or is stopped, or has died.
func (b *Backend) Start(actor scenario.TaskRef, c scenario.Call) {
	t := b.tasks[actor]
	bg := &bgCall{c: c}
	t.bg = bg
	defer b.quiesce()
	words, op, err := b.encode(actor, c)
	if err != nil {
		r := errnoResult(unix.ENOSYS)
		bg.res = &r
		return
	}
	bg.op = op
	if r, ok := b.send(t, words); !ok {
		bg.res = &r
		return
	}
	alive := b.watch(t, op)
	for delay := 20 * time.Microsecond; ; delay = min(2*delay, 2*time.Millisecond) {
		if m, ok, done := t.tryReply(); done {
			if ok {
				bg.msg = &m
			} else {
				b.halt()
				bg.res = &scenario.Result{Kind: scenario.ResultDone}
			}
			return
		}
		if !alive() {
			if m, ok, done := t.tryReply(); done && ok {
				bg.msg = &m
				return
			}
			b.halt()
			bg.res = &scenario.Result{Kind: scenario.ResultDone}
			return
		}
		if blocked(t, op) {
			return
		}
		time.Sleep(delay)
	}
}

// Join implements scenario.Backend.
func (b *Backend) Join(actor scenario.TaskRef) scenario.Result {
	t := b.tasks[actor]
	bg := t.bg
	t.bg = nil
	defer b.quiesce()
	switch {
	case bg.res != nil:
		return *bg.res
	case bg.msg != nil:
		return b.decode(t, bg.op, bg.c, *bg.msg)
	}
	return b.finish(t, bg.op, bg.c)
}

// halt blocks the driver for good once an interrupt is tearing the run down.
func (b *Backend) halt() {
	if b.interrupted.Load() {
		select {}
	}
}

// tryReply takes t's reply if it has come; done is false when it has not, ok false when the
// socket was closed instead.
func (t *task) tryReply() (m message, ok, done bool) {
	select {
	case m, ok = <-t.c.msgs:
		return m, ok, true
	default:
		return message{}, false, false
	}
}

func stallFor(c scenario.Call) time.Duration {
	d := StallTimeout
	if c.Name == "semtimedop" && len(c.Args) > 1 && c.Args[1].Int > 0 {
		d += time.Duration(c.Args[1].Int) * time.Millisecond
	}
	return d
}

func errnoResult(e syscall.Errno) scenario.Result {
	return scenario.Result{Kind: scenario.ResultErrno, Errno: e}
}

func closeFds(m message) {
	for _, fd := range m.fds {
		unix.Close(fd)
	}
}
