package kernel

import (
	"math"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"tasklist/lockstat"
)

// Pidfd is an open pidfd (pidfd_create, kernel/pid.c): a file that refers
// to a struct pid, not to a number, so it keeps naming the task it was
// opened on after that task's number is reused. Descriptors copied by fork
// refer to the same Pidfd, as they refer to the same struct file in Linux.
// It is immutable.
type Pidfd struct {
	pid *PID
	// flags are the file's f_flags as far as a pidfd has any:
	// PIDFD_NONBLOCK (O_NONBLOCK) and PIDFD_THREAD (O_EXCL).
	flags int
}

// The pidfd flags, as pidfd_open takes them and the file keeps them.
const (
	PidfdNonblock = unix.PIDFD_NONBLOCK
	PidfdThread   = unix.PIDFD_THREAD
)

// Thread reports whether the pidfd refers to a thread rather than a
// process (PIDFD_THREAD).
func (f *Pidfd) Thread() bool { return f.flags&PidfdThread != 0 }

// Nonblock reports whether the pidfd is nonblocking (PIDFD_NONBLOCK).
func (f *Pidfd) Nonblock() bool { return f.flags&PidfdNonblock != 0 }

// FDTable is a descriptor table (files_struct) holding pidfds only: the
// model has no other files. A task's table is private (fork copies it,
// dup_fd) unless the task was made with CLONE_FILES, which shares it; exec
// gives the task a table of its own and closes every pidfd in it, since
// pidfds are close-on-exec. A task that has never had a pidfd nor shared
// its table has none (Task.files is nil), so that fork allocates nothing
// for the table.
type FDTable struct {
	// mu guards files. It is a leaf (doc.go): nothing is locked under
	// it.
	mu lockstat.Mutex
	// files holds the open pidfd at each descriptor number, nil for a
	// free number and reservedFD for one that clone reserved for the
	// pidfd it is making (get_unused_fd_flags before fd_install).
	// +checklocks:mu
	files []*Pidfd
	// users counts the tasks whose table this is (files_struct.count).
	users atomic.Int32
}

var fdTableClass = lockstat.NewClass("kernel.FDTable.mu")

// reservedFD marks a descriptor number taken but not yet installed.
var reservedFD = &Pidfd{}

// newFDTable returns an empty table with one user.
func newFDTable() *FDTable {
	ft := &FDTable{}
	ft.mu.Init(fdTableClass, 0)
	ft.users.Store(1)
	return ft
}

// copy is dup_fd: a table of one user with the same open files at the same
// numbers; numbers only reserved are left free.
func (ft *FDTable) copy() *FDTable {
	c := newFDTable()
	ft.mu.Lock()
	files := make([]*Pidfd, len(ft.files))
	for i, f := range ft.files {
		if f != reservedFD {
			files[i] = f
		}
	}
	ft.mu.Unlock()
	// Nobody else can reach c yet; the lock only satisfies the
	// annotation of the field it guards.
	c.mu.Lock()
	c.files = files
	c.mu.Unlock()
	return c
}

// reserve takes the lowest free descriptor number below limit
// (RLIMIT_NOFILE) for a file about to be installed. Errors: EMFILE.
func (ft *FDTable) reserve(limit uint64) (int, error) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	fd := 0
	for fd < len(ft.files) && ft.files[fd] != nil {
		fd++
	}
	if uint64(fd) >= limit || fd >= nrOpen {
		return -1, unix.EMFILE
	}
	if fd == len(ft.files) {
		ft.files = append(ft.files, nil)
	}
	ft.files[fd] = reservedFD
	return fd, nil
}

// install puts f at fd, which reserve returned (fd_install); a nil f gives
// the number back (put_unused_fd).
func (ft *FDTable) install(fd int, f *Pidfd) {
	ft.mu.Lock()
	ft.files[fd] = f
	ft.mu.Unlock()
}

// lookup returns the pidfd open at fd, or nil.
func (ft *FDTable) lookup(fd int) *Pidfd {
	if ft == nil || fd < 0 {
		return nil
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if fd >= len(ft.files) || ft.files[fd] == reservedFD {
		return nil
	}
	return ft.files[fd]
}

// close frees fd and reports whether a file was open there.
func (ft *FDTable) close(fd int) bool {
	if ft == nil || fd < 0 {
		return false
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if fd >= len(ft.files) || ft.files[fd] == nil || ft.files[fd] == reservedFD {
		return false
	}
	ft.files[fd] = nil
	return true
}

// find returns the number at which f is open, if it is.
func (ft *FDTable) find(f *Pidfd) (int, bool) {
	if ft == nil || f == nil {
		return -1, false
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	for fd, g := range ft.files {
		if g == f {
			return fd, true
		}
	}
	return -1, false
}

// filesFor is copy_files for a new task made by t: nil while t has no
// table and the flags do not share one (nothing to allocate); with
// CLONE_FILES t's own table, made first if t has none, with one more user;
// otherwise a copy of t's.
func (t *Task) filesFor(flags uint64) *FDTable {
	ft := t.files.Load()
	switch {
	case flags&unix.CLONE_FILES != 0:
		if ft == nil {
			// Only t changes its own table pointer.
			ft = newFDTable()
			t.files.Store(ft)
		}
		ft.users.Add(1)
		return ft
	case ft == nil:
		return nil
	}
	return ft.copy()
}

// ownFiles returns t's table, making it first if t has none.
func (t *Task) ownFiles() *FDTable {
	ft := t.files.Load()
	if ft == nil {
		ft = newFDTable()
		t.files.Store(ft)
	}
	return ft
}

// dropFiles is exit_files, and exec's unshare_files with its closing of
// every close-on-exec descriptor, which every pidfd is: t no longer uses
// its table.
func (t *Task) dropFiles() {
	if ft := t.files.Swap(nil); ft != nil {
		ft.users.Add(-1)
	}
}

// unshareFiles is unshare(CLONE_FILES): a table other tasks share is
// replaced by a private copy (unshare_fd).
func (t *Task) unshareFiles() {
	if ft := t.files.Load(); ft != nil && ft.users.Load() > 1 {
		t.files.Store(ft.copy())
		ft.users.Add(-1)
	}
}

// installPidfd opens f in t's table at the lowest free number
// (get_unused_fd_flags and fd_install). Errors: EMFILE.
func (t *Task) installPidfd(f *Pidfd) (int, error) {
	ft := t.ownFiles()
	fd, err := ft.reserve(t.tg.rlimits.Load()[unix.RLIMIT_NOFILE].Cur)
	if err != nil {
		return -1, err
	}
	ft.install(fd, f)
	return fd, nil
}

// Pidfd returns the pidfd open at fd in t's table, nil if none is.
func (t *Task) Pidfd(fd int) *Pidfd { return t.files.Load().lookup(fd) }

// FDOf returns the number at which f is open in t's table, if it is there:
// the descriptor that names f in t's calls.
func (t *Task) FDOf(f *Pidfd) (int, bool) { return t.files.Load().find(f) }

// NoFD is a descriptor number that is open in no table: a call given it
// fails with EBADF.
const NoFD = math.MaxInt32
