package kernelrun

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Every number here is as the pid namespace of the /proc mount sees it, which is the runner's:
// the agent reports its tids through the same mount.

// taskStat is what /proc/TID/stat says about a task.
type taskStat struct {
	state byte   // R, S, D, T, t, Z, X, ...; 0 when the task is gone
	start uint64 // start time in clock ticks since boot, unique per task together with its tid
}

func readStat(tid int) taskStat {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		return taskStat{}
	}
	return parseStat(b)
}

func parseStat(b []byte) taskStat {
	// The command name may hold spaces and parentheses; the fields follow its last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return taskStat{}
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return taskStat{}
	}
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return taskStat{state: f[0][0], start: start}
}

// stat returns t's state as /proc/TID/stat shows it, 0 once the task is gone. The file is
// opened once, checked to be t's (its start time), and read again through the descriptor,
// which keeps naming the same task even when its tid is reused and costs a fraction of a
// fresh open: the runner reads every live task's state several times after each statement.
func (t *task) stat() byte {
	if t.statFile == nil {
		f, err := os.Open("/proc/" + strconv.Itoa(t.tid) + "/stat")
		if err != nil {
			return 0
		}
		t.statFile = f
		if st := t.readStat(); st.start != t.start {
			t.closeStat()
			return 0
		}
	}
	return t.readStat().state
}

func (t *task) readStat() taskStat {
	var buf [1024]byte
	n, err := t.statFile.ReadAt(buf[:], 0)
	if n == 0 && err != nil {
		return taskStat{}
	}
	return parseStat(buf[:n])
}

// closeStat drops t's held stat file: t is gone, or now another thread (execve).
func (t *task) closeStat() {
	if t.statFile != nil {
		t.statFile.Close()
		t.statFile = nil
	}
}

// blockedInCall reports whether a sleeping task sleeps in a system call other than the
// recvfrom of its command loop: then it is blocked in the call it was given.
func blockedInCall(tid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/syscall")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return false
	}
	nr, err := strconv.Atoi(f[0])
	return err == nil && nr != unix.SYS_RECVFROM
}

// identity is what the runner knows of a task's place: its pid at every level from the
// runner's pid namespace down to its own, and the namespace at each of those levels.
type identity struct {
	tid, tgid int
	start     uint64
	nspid     []int
	ns        []uint64
}

func readIdentity(tid int) (identity, error) {
	id := identity{tid: tid}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return id, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "Tgid":
			id.tgid, _ = strconv.Atoi(strings.TrimSpace(v))
		case "NSpid":
			for _, f := range strings.Fields(v) {
				n, err := strconv.Atoi(f)
				if err != nil {
					return id, fmt.Errorf("task %d: bad NSpid %q", tid, v)
				}
				id.nspid = append(id.nspid, n)
			}
		}
	}
	if len(id.nspid) == 0 {
		return id, fmt.Errorf("task %d: no NSpid in /proc/%d/status", tid, tid)
	}
	if id.ns, err = nsChain(tid, len(id.nspid)); err != nil {
		return id, err
	}
	id.start = readStat(tid).start
	if id.start == 0 {
		return id, fmt.Errorf("task %d is gone", tid)
	}
	return id, nil
}

// nsChain returns the inode numbers of the pid namespaces of tid's levels, outermost first:
// sibling namespaces share levels, so a level's number alone does not say who sees whom.
func nsChain(tid, levels int) ([]uint64, error) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(tid)+"/ns/pid", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("task %d: %w", tid, err)
	}
	chain := make([]uint64, levels)
	for i := levels - 1; ; i-- {
		var st unix.Stat_t
		err := unix.Fstat(fd, &st)
		if err == nil {
			chain[i] = st.Ino
		}
		parent := -1
		if err == nil && i > 0 {
			parent, err = unix.IoctlRetInt(fd, unix.NS_GET_PARENT)
		}
		unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("task %d: pid namespace: %w", tid, err)
		}
		if i == 0 {
			return chain, nil
		}
		fd = parent
	}
}

// pidfdTid returns the tid a pidfd of the runner's refers to.
func pidfdTid(fd int) (int, error) {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Pid:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n <= 0 {
				return 0, errors.New("pidfd of a task that is gone")
			}
			return n, nil
		}
	}
	return 0, errors.New("no Pid in pidfd fdinfo")
}

// processAlive reports whether a thread of process tgid has not exited.
func processAlive(tgid int) bool {
	// A non-leader's execve swaps its tid with the leader's while the
	// leader goes: a listing read in that instant can show only a zombie
	// and a tid that no longer exists. A process really gone stays gone,
	// so a few looks a millisecond apart tell the two apart.
	for range 3 {
		if processAliveNow(tgid) {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// processAliveNow is one look at the process's threads.
func processAliveNow(tgid int) bool {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(tgid) + "/task")
	if err != nil {
		return false
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st := readStat(tid).state; st != 0 && st != 'Z' && st != 'X' {
			return true
		}
	}
	return false
}

// hasSysAdmin reports whether the runner holds CAP_SYS_ADMIN, which creating pid and IPC
// namespaces needs; it says so before anything is built or started.
func hasSysAdmin() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return true // let clone say
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err != nil || caps&(1<<unix.CAP_SYS_ADMIN) != 0
		}
	}
	return true
}
