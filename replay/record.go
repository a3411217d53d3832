package replay

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// TracedCalls are the system calls a recording traces: the process-lifecycle calls of the
// scenario language, the signal calls whose effects decide what those calls return, the calls
// real programs make in their place (vfork, clone3, prlimit64, the pidfd calls), the identity
// reads a trace without a header takes the root's starting state from, and restart_syscall,
// which shows that a call interrupted by a signal went on.
var TracedCalls = []string{
	"clone", "clone3", "fork", "vfork", "execve", "execveat", "exit", "exit_group",
	"wait4", "waitid", "kill", "tgkill", "tkill",
	"getpid", "gettid", "getppid", "getpgrp", "getpgid", "getsid", "setsid", "setpgid",
	"getpriority", "setpriority",
	"getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid",
	"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid",
	"getrlimit", "setrlimit", "prlimit64",
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigsuspend",
	"rt_sigtimedwait", "restart_syscall",
	"prctl", "ptrace", "unshare",
	"semget", "semop", "semtimedop", "semctl",
	"pidfd_open", "pidfd_send_signal", "pidfd_getfd",
}

// StraceArgs returns strace's arguments that record cmd into file: every thread in one file
// in one global order, each line with its tid (-f, not -ff, which loses the order), times,
// `+++ exited +++` lines (-q, not -qq), raw numbers beside their names (-X verbose), pids
// translated into strace's pid namespace, and the filter TracedCalls. The file is appended to
// (-A), after the header.
func StraceArgs(file string, cmd []string) []string {
	args := []string{"-f", "-q", "-ttt", "-T", "-X", "verbose", "-s", "96",
		"--decode-pids=pidns", "--seccomp-bpf", "-A", "-o", file,
		"-e", "trace=" + strings.Join(TracedCalls, ","), "-e", "signal=all", "--"}
	return append(args, cmd...)
}

// ErrNoStrace says that strace, which trace needs, is not installed.
var ErrNoStrace = errors.New("strace is not installed: install Debian's strace package (apt-get install strace)")

// Record runs cmd under strace, with standard input, output and error passed on, and writes
// the trace to file, after a header (WriteHeader) describing the state the model's init must
// give the traced process. It returns cmd's exit status as strace passes it on, or an error
// when strace could not run.
func Record(file string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		return 0, ErrNoStrace
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriter(f)
	if err := WriteHeader(w, cmd); err != nil {
		f.Close()
		return 0, err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	c := exec.Command(strace, StraceArgs(file, cmd)...)
	c.Stdin, c.Stdout, c.Stderr = stdin, stdout, stderr
	err = c.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	return 0, err
}

// Header comment keys. Each header line is "# KEY: VALUE".
const (
	headerKernel = "kernel"
	headerNice   = "nice"
	headerUIDs   = "uids"
	headerGIDs   = "gids"
	headerCaps   = "capabilities"
	headerRlimit = "rlimit"
)

// headerMagic is the first line of a header.
const headerMagic = "# tasklist trace"

// WriteHeader writes the comment lines that describe what the recording process passes on to
// cmd: its nice value, real, effective and saved ids, capabilities, resource limits, and the
// kernel's release. The replayer starts the traced root from them.
func WriteHeader(w io.Writer, cmd []string) error {
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return err
	}
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		return err
	}
	var ru, eu, su, rg, eg, sg int
	ru, eu, su = unix.Getresuid()
	rg, eg, sg = unix.Getresgid()
	caps, err := readCaps()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %s\n", headerMagic, strconv.Quote(strings.Join(cmd, " ")))
	fmt.Fprintf(w, "# %s: %s\n", headerKernel, unix.ByteSliceToString(uts.Release[:]))
	// getpriority(2) returns 20 - nice, as the raw system call does.
	fmt.Fprintf(w, "# %s: %d\n", headerNice, 20-prio)
	fmt.Fprintf(w, "# %s: %d %d %d\n", headerUIDs, ru, eu, su)
	fmt.Fprintf(w, "# %s: %d %d %d\n", headerGIDs, rg, eg, sg)
	fmt.Fprintf(w, "# %s: %s\n", headerCaps, caps)
	for _, r := range rlimitNames {
		var lim unix.Rlimit
		if err := unix.Prlimit(0, r.res, nil, &lim); err != nil {
			return err
		}
		fmt.Fprintf(w, "# %s: %s %s %s\n", headerRlimit, r.name, limitText(lim.Cur), limitText(lim.Max))
	}
	return nil
}

// readCaps returns the effective and permitted capability sets of the calling process, as
// /proc/self/status shows them.
func readCaps() (string, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "", err
	}
	var eff, prm string
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			eff = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "CapPrm:"); ok {
			prm = strings.TrimSpace(v)
		}
	}
	if eff == "" || prm == "" {
		return "", errors.New("/proc/self/status shows no capability sets")
	}
	return "effective 0x" + eff + " permitted 0x" + prm, nil
}

func limitText(v uint64) string {
	if v == unix.RLIM_INFINITY {
		return "unlimited"
	}
	return strconv.FormatUint(v, 10)
}

// rlimitNames lists the resources in number order, with their names.
var rlimitNames = []struct {
	name string
	res  int
}{
	{"RLIMIT_CPU", unix.RLIMIT_CPU}, {"RLIMIT_FSIZE", unix.RLIMIT_FSIZE},
	{"RLIMIT_DATA", unix.RLIMIT_DATA}, {"RLIMIT_STACK", unix.RLIMIT_STACK},
	{"RLIMIT_CORE", unix.RLIMIT_CORE}, {"RLIMIT_RSS", unix.RLIMIT_RSS},
	{"RLIMIT_NPROC", unix.RLIMIT_NPROC}, {"RLIMIT_NOFILE", unix.RLIMIT_NOFILE},
	{"RLIMIT_MEMLOCK", unix.RLIMIT_MEMLOCK}, {"RLIMIT_AS", unix.RLIMIT_AS},
	{"RLIMIT_LOCKS", unix.RLIMIT_LOCKS}, {"RLIMIT_SIGPENDING", unix.RLIMIT_SIGPENDING},
	{"RLIMIT_MSGQUEUE", unix.RLIMIT_MSGQUEUE}, {"RLIMIT_NICE", unix.RLIMIT_NICE},
	{"RLIMIT_RTPRIO", unix.RLIMIT_RTPRIO}, {"RLIMIT_RTTIME", unix.RLIMIT_RTTIME},
}
