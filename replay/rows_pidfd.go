package replay

import (
	"maps"

	"golang.org/x/sys/unix"

	"tasklist/scenario"
)

// Pidfds: a trace names a pidfd by its number in the task's descriptor table, the model by the
// file its call opened. Each task keeps the trace's numbers of the pidfds it has: the number a
// pidfd_open returned or a CLONE_PIDFD clone wrote, copied to a child whose table is a copy and
// shared with one made with CLONE_FILES, and dropped by exec, which closes every pidfd. A
// number the trace shows again for a new pidfd names the new one: the kernel hands out only a
// free number, so the old file was closed (close is not traced). A number no pidfd of the
// task's has is a descriptor the replay cannot name.

// fdTable maps the trace's descriptor numbers of a table's pidfds to the model's files.
type fdTable map[int64]scenario.FileRef

// tableFor returns the table a child that c made gets from its creator t: t's own with
// CLONE_FILES, else a copy.
func tableFor(t *task, flags uint64) fdTable {
	if flags&unix.CLONE_FILES != 0 {
		return t.files
	}
	return maps.Clone(t.files)
}

// fileArg resolves the descriptor argument i of t's call to the pidfd it names, or returns
// the action that counts why it cannot.
func (r *replayer) fileArg(t *task, c *traceCall, i int) (scenario.Value, *action) {
	fd, err := argInt(arg(c, i))
	if err != nil {
		a := badArgs(c)
		return scenario.Value{}, &a
	}
	f, ok := t.files[fd]
	if !ok {
		a := outsideScope("a descriptor the trace did not open as a pidfd")
		return scenario.Value{}, &a
	}
	return scenario.Value{Kind: scenario.ValueFile, File: f}, nil
}

// opened records, once c has returned, that the model's file res opened is number fd of t's
// table in the trace.
func opened(t *task, fd int64, res scenario.Result) {
	if fd >= 0 && (res.Kind == scenario.ResultNewFile || res.HasFile) {
		t.files[fd] = res.NewFile
	}
}

// pidfdOpen replays pidfd_open(PID, FLAGS); its result is a pidfd, whatever its number.
func pidfdOpen(r *replayer, t *task, c *traceCall) action {
	pid, bad := r.pidArgs(t, c, 0)
	if bad != nil {
		return *bad
	}
	flags, ok := intArgs(c, 1)
	if !ok {
		return badArgs(c)
	}
	a := replayed(c, "pidfd_open", append(pid, flags...), func(Result) string { return "pidfd" })
	a.after = func(res scenario.Result) { opened(t, c.result().Value, res) }
	return a
}

// pidfdSendSignal replays pidfd_send_signal(FD, SIG, INFO, FLAGS) without a siginfo.
func pidfdSendSignal(r *replayer, t *task, c *traceCall) action {
	if arg(c, 2) != "NULL" {
		return unsupported("pidfd_send_signal with a siginfo")
	}
	f, bad := r.fileArg(t, c, 0)
	if bad != nil {
		return *bad
	}
	rest, ok := intArgs(c, 1, 3)
	if !ok {
		return badArgs(c)
	}
	return replayed(c, "pidfd_send_signal", append([]scenario.Value{f}, rest...), number)
}

// clonedPidfd is the number the trace shows for the pidfd a CLONE_PIDFD clone opened: what
// clone(2) wrote through parent_tid, or clone3 through its pidfd field; -1 when it shows none.
func clonedPidfd(c *traceCall) int64 {
	text, ok := named(c.args, "parent_tid")
	if c.name == "clone3" {
		var fields map[string]string
		if fields, ok = argStruct(arg(c, 0)); ok {
			text, ok = fields["pidfd"]
		}
	}
	elems, isArray := argArray(text)
	if !ok || !isArray || len(elems) != 1 {
		return -1
	}
	fd, err := argInt(elems[0])
	if err != nil {
		return -1
	}
	return fd
}
