package kernelrun

import (
	"errors"
	"fmt"
	"math"
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
	files   []int // FileRef -> the runner's descriptor of the pidfd (files.go)
	release chan struct{}
	sigs    chan os.Signal
	closed  chan struct{}
	down    sync.Once
	// interrupt holds the signal that tore the run down, stored before it killed every task:
	// from then on no result is the scenario's, and every call ends the run instead.
	interrupt atomic.Pointer[syscall.Signal]
	// told is set once a call has reported the interrupt to the driver, which Close then
	// need not repeat.
	told bool
	// inFlight is what the call being made or joined may have set running (wait.go).
	inFlight reach
}

// interruptGrace is how long an interrupted runner waits for the driver to stop the run and
// say so before it exits by itself.
const interruptGrace = 5 * time.Second

// errInterrupted is the runner's error once a signal tore the run down.
type errInterrupted struct{ sig syscall.Signal }

func (e errInterrupted) Error() string {
	return fmt.Sprintf("interrupted by %s: every task was killed, so the call has no result", unix.SignalName(e.sig))
}

// task is the runner's record of one scenario task. Its identity is kept after the task is
// gone, so that names keep printing.
type task struct {
	identity
	c    *conn
	gone bool
	bg   *bgCall
	hung bool // a foreground call stalled; its reply may still come
	// statFile is /proc/TID/stat, held open once read (proc.go).
	statFile *os.File
}

// bgCall is a call made with &, until its join.
type bgCall struct {
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
	signal.Notify(b.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go b.onSignal()
	c, err := newConn(sv[0], b.hellos)
	if err != nil {
		b.Close()
		return nil, err
	}
	id, err := readIdentity(b.cmd.Process.Pid)
	b.tasks = []*task{{identity: id, c: c}}
	if err == nil {
		err = b.quiesce()
	}
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("tasklist run --kernel: init: %w", err)
	}
	return b, nil
}

// onSignal tears everything down on SIGINT, SIGTERM or SIGHUP. The driver then learns of it
// from the call in flight (or its next one), says so and exits with status 2; should it not
// within interruptGrace, or should a second signal come, the runner says so and exits here.
func (b *Backend) onSignal() {
	select {
	case s := <-b.sigs:
		sig := s.(syscall.Signal)
		b.interrupt.Store(&sig)
		b.teardown()
		select {
		case <-b.closed:
			return
		case <-b.sigs:
		case <-time.After(interruptGrace):
		}
		fmt.Fprintf(os.Stderr, "tasklist run --kernel: %v\n", errInterrupted{sig})
		os.Exit(2)
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

// Close implements scenario.Backend. It fails when a signal tore the run down and no call
// has said so.
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
		t.closeStat()
	}
	b.hellos.closeAll()
	b.closeFiles()
	if b.told {
		return nil
	}
	return b.interrupted()
}

// interrupted returns the error of the signal that tore the run down, nil if none came.
func (b *Backend) interrupted() error {
	if s := b.interrupt.Load(); s != nil {
		return errInterrupted{*s}
	}
	return nil
}

// verdict is what a call that gave res, or failed with err, reports once the system is
// quiescent: a ResultFatal when the runner could not make the call or tell what it did, gave
// up waiting for the system to settle, or was interrupted, whose deaths are no results.
func (b *Backend) verdict(res scenario.Result, err error) scenario.Result {
	if err == nil {
		err = b.quiesce()
	}
	if ierr := b.interrupted(); ierr != nil {
		err, b.told = ierr, true
	}
	if err != nil {
		return scenario.Result{Kind: scenario.ResultFatal, Err: err}
	}
	return res
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
	b.begin(t, c)
	return b.verdict(b.do(actor, t, c))
}

func (b *Backend) do(actor scenario.TaskRef, t *task, c scenario.Call) (scenario.Result, error) {
	if err := b.interrupted(); err != nil {
		return scenario.Result{}, err
	}
	words, err := b.encode(actor, c)
	if err != nil {
		return scenario.Result{}, err
	}
	if r, err := b.send(t, words); r != nil || err != nil {
		return deref(r), err
	}
	return b.finish(t, c)
}

// finish waits for t's reply to call c and decodes it: a task that died in
// the call prints done, one stuck for good EDEADLK.
func (b *Backend) finish(t *task, c scenario.Call) (scenario.Result, error) {
	m, out := b.await(t, c.Name, stallFor(c))
	switch out {
	case died:
		return scenario.Result{Kind: scenario.ResultDone}, nil
	case stalled:
		t.hung = true
		return errnoResult(unix.EDEADLK), nil
	}
	return b.decode(t, c, m)
}

// send gives t a command. It returns the call's result instead when t cannot take one, and
// fails when the runner cannot reach it.
func (b *Backend) send(t *task, words []int64) (*scenario.Result, error) {
	refuse := func(e syscall.Errno) (*scenario.Result, error) {
		r := errnoResult(e)
		return &r, nil
	}
	if !b.alive(t) {
		return refuse(unix.ESRCH)
	}
	if t.hung {
		select {
		case m, ok := <-t.c.msgs:
			closeFds(m)
			t.hung = !ok
		default:
		}
		if t.hung {
			return refuse(unix.EDEADLK)
		}
	}
	switch err := b.connect(t); {
	case errors.Is(err, errStalled):
		return refuse(unix.EDEADLK)
	case errors.Is(err, errGone):
		return refuse(unix.ESRCH)
	case err != nil:
		return nil, fmt.Errorf("cannot reach the task: %w", err)
	}
	switch err := t.c.send(words); {
	case errors.Is(err, unix.EPIPE), errors.Is(err, unix.ECONNRESET):
		return refuse(unix.ESRCH) // the task died, and its socket with it
	case err != nil:
		return nil, fmt.Errorf("cannot send the call: %w", err)
	}
	return nil, nil
}

// Start implements scenario.Backend: it returns once the call has completed, or the task
// sleeps in the call's system call, or is stopped, or has died.
func (b *Backend) Start(actor scenario.TaskRef, c scenario.Call) error {
	t := b.tasks[actor]
	bg := &bgCall{c: c}
	t.bg = bg
	b.begin(t, c)
	return b.verdict(scenario.Result{}, b.start(actor, t, bg)).Err
}

func (b *Backend) start(actor scenario.TaskRef, t *task, bg *bgCall) error {
	if err := b.interrupted(); err != nil {
		return err
	}
	words, err := b.encode(actor, bg.c)
	if err != nil {
		return err
	}
	if r, err := b.send(t, words); r != nil || err != nil {
		bg.res = r
		return err
	}
	alive := b.watch(t, bg.c.Name)
	for delay := 20 * time.Microsecond; ; delay = min(2*delay, 2*time.Millisecond) {
		if m, ok, done := t.tryReply(); done {
			if ok {
				bg.msg = &m
			} else {
				bg.res = &scenario.Result{Kind: scenario.ResultDone}
			}
			return nil
		}
		if !alive() {
			if m, ok, done := t.tryReply(); done && ok {
				bg.msg = &m
				return nil
			}
			bg.res = &scenario.Result{Kind: scenario.ResultDone}
			return nil
		}
		if blocked(t, bg.c.Name) {
			return nil
		}
		time.Sleep(delay)
	}
}

// Join implements scenario.Backend.
func (b *Backend) Join(actor scenario.TaskRef) scenario.Result {
	t := b.tasks[actor]
	bg := t.bg
	t.bg = nil
	b.begin(t, bg.c)
	switch {
	case bg.res != nil:
		return b.verdict(*bg.res, nil)
	case bg.msg != nil:
		return b.verdict(b.decode(t, bg.c, *bg.msg))
	}
	return b.verdict(b.finish(t, bg.c))
}

func deref(r *scenario.Result) scenario.Result {
	if r == nil {
		return scenario.Result{}
	}
	return *r
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

// stallFor is how long call c may stay blocked in a quiescent system before the runner stops
// waiting for it: StallTimeout, plus the call's deadline if its timeout argument gives it one
// (scenario.CallSpec.Timeout; a timeout too large for Linux's clock is none). The sum
// saturates.
func stallFor(c scenario.Call) time.Duration {
	spec, _ := scenario.LookupCall(c.Name)
	d, timed := spec.Timeout(c.Args)
	if !timed {
		return StallTimeout
	}
	if d > math.MaxInt64-StallTimeout {
		return math.MaxInt64
	}
	return StallTimeout + d
}

func errnoResult(e syscall.Errno) scenario.Result {
	return scenario.Result{Kind: scenario.ResultErrno, Errno: e}
}

func closeFds(m message) {
	for _, fd := range m.fds {
		unix.Close(fd)
	}
}
