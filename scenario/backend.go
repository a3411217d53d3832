package scenario

import "syscall"

// TaskRef identifies a task that a Backend created. The driver names it; the Backend gives it
// meaning. Init is the predefined init task.
type TaskRef int

// Init is the task the scenario's init name refers to.
const Init TaskRef = 0

// SetRef identifies a semaphore set that a Backend created.
type SetRef int

// FileRef identifies an open file, a pidfd, that a Backend created: the file itself, not a
// descriptor number, which depends on the table it is looked up in.
type FileRef int

// ValueKind says which field of a Value holds the argument.
type ValueKind int

// The kinds of resolved argument.
const (
	ValueInt     ValueKind = iota // Int: an integer or constant expression
	ValueTask                     // Task, Neg: a task's pid as its caller sees it, negated if Neg
	ValueSet                      // Set: a semaphore set
	ValueSembufs                  // Sembufs: every sembuf of a semop or semtimedop
	ValueList                     // List: a value list, as for semctl SETALL
	ValueFile                     // File: a pidfd
)

// Sembuf is one semaphore operation, as in struct sembuf.
type Sembuf struct {
	Num, Op, Flags int64
}

// Value is a resolved argument. Task names stay references, not pids, because a pid depends on
// the pid namespace of the task making the call; see [Value.Pid].
type Value struct {
	Kind    ValueKind
	Int     int64
	Task    TaskRef
	Neg     bool
	Set     SetRef
	Sembufs []Sembuf
	List    []int64
	File    FileRef
}

// Pid returns the argument as a pid number for a call made by caller: a task's pid in caller's
// pid namespace (0 when it is not visible there), negated for -NAME, or the integer itself.
func (v Value) Pid(b Backend, caller TaskRef) int {
	if v.Kind != ValueTask {
		return int(v.Int)
	}
	p := b.PidIn(caller, v.Task)
	if v.Neg {
		return -p
	}
	return p
}

// Position is a place in a scenario file; Line and Col count from 1, Col in characters.
type Position struct {
	File      string
	Line, Col int
}

// Call is one system call for a Backend to make. The arguments follow the call's written
// order, except that all sembufs of semop and semtimedop form one final ValueSembufs argument.
type Call struct {
	Name string
	Args []Value
	Pos  Position
}

// ResultKind says which fields of a Result hold the outcome.
type ResultKind int

// The kinds of result. The zero ResultKind is none of them, so a Backend that forgets to fill
// a Result in is seen rather than read as "done".
const (
	ResultDone    ResultKind = iota + 1 // the call does not return (exit, exit_group)
	ResultInt                           // Int: a plain number
	ResultPid                           // Pid: a pid in the caller's pid namespace
	ResultWait                          // WaitPid, How, Code: a wait status
	ResultList                          // List: semctl GETALL
	ResultNewTask                       // NewTask, NewPid: fork or clone made a task
	ResultNewSet                        // NewSet, SetID: semget found or made a set
	ResultErrno                         // Errno: the call failed
	ResultFatal                         // Err: the runner cannot tell what the call did; the run stops
	ResultSigset                        // Int: a signal set, bit sig-1 for signal sig
	ResultSignal                        // Int: a signal number
	ResultNewFile                       // NewFile: pidfd_open opened a pidfd
	ResultLimit                         // Soft, Hard: a resource limit, as getrlimit reads it
)

// WaitHow is what a wait reported about a child.
type WaitHow int

// The kinds of wait status; Code is the exit code for Exited and the signal number otherwise.
const (
	Exited WaitHow = iota
	Killed
	Dumped
	Stopped
	Trapped
	Continued
)

// Result is the outcome of a call, in kernel terms. A wait that finds nothing with WNOHANG is
// ResultInt 0.
type Result struct {
	Kind    ResultKind
	Err     error
	Errno   syscall.Errno
	Int     int64
	Pid     int
	WaitPid int
	How     WaitHow
	Code    int
	List    []int64
	NewTask TaskRef
	NewPid  int
	NewSet  SetRef
	SetID   int
	// NewFile is the pidfd a ResultNewFile opened, or, when HasFile is set, the pidfd a
	// ResultNewTask's CLONE_PIDFD opened with the task.
	NewFile FileRef
	HasFile bool
	// Soft and Hard are a ResultLimit's limits; RLIM_INFINITY is all ones.
	Soft, Hard uint64
}

// Backend makes the calls of a scenario on one kernel, the model or the host's.
type Backend interface {
	// PidIn returns target's pid in viewer's pid namespace, 0 if it is not visible there. It
	// keeps answering for tasks that have exited or been reaped, with their last pid, because
	// names stay bound after their task is gone.
	PidIn(viewer, target TaskRef) int
	// Do makes a call in the foreground and returns its result once the system is quiescent.
	// A Backend that cannot tell what the call did (it could not pass the arguments, gave up
	// waiting, or was interrupted) never guesses: it returns ResultFatal, which ends the run.
	Do(actor TaskRef, c Call) Result
	// Start makes a call in the background and returns once it has completed or blocked and the
	// system is quiescent. A non-nil error is a ResultFatal's: the run ends.
	Start(actor TaskRef, c Call) error
	// Join waits for actor's background call, then for quiescence, and returns the call's result
	// (ResultFatal as for Do).
	Join(actor TaskRef) Result
	// Made returns the task actor's background call has created, once the call has created
	// it: a vfork child exists, and may be named, while its parent waits. The call's result
	// at its join names the same task.
	Made(actor TaskRef) (TaskRef, bool)
	// Close releases every task, set and resource the Backend holds.
	Close() error
}
