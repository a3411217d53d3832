package kernel

import (
	"golang.org/x/sys/unix"
)

// clone3Flags are the flags clone3 knows: clone(2)'s 32 bits and the two
// only clone3 has (clone3_args_valid).
const clone3Flags = 1<<32 - 1 | unix.CLONE_CLEAR_SIGHAND | unix.CLONE_INTO_CGROUP

// Clone3 is clone3(2): Clone with clone3's own checks first
// (copy_clone_args_from_user, clone3_args_valid), all 64 bits of flags,
// args.SetTID, and CLONE_CLEAR_SIGHAND, which gives the child's new
// handler table SIG_DFL for every handled signal, as exec does. Errors, before
// Clone's: EINVAL for a set_tid of more than 32 entries, an exit signal
// that is not a signal, a flag clone3 does not know, the byte clone(2)
// keeps for the exit signal (CLONE_NEWTIME aside) or CLONE_DETACHED,
// CLONE_SIGHAND with CLONE_CLEAR_SIGHAND, and an exit signal with
// CLONE_THREAD or CLONE_PARENT. set_tid's own (alloc_pid): EINVAL for more
// entries than the child has namespace levels, a number outside [1,
// pid_max), or a number other than 1 for a namespace whose init does not
// exist yet; EPERM without CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE; EEXIST
// for a number in use. CLONE_INTO_CGROUP fails with EBADF, once the pid is
// allocated: the model has no cgroups, so no descriptor names one.
// Unlike Clone, CLONE_PIDFD goes with CLONE_PARENT_SETTID: clone3 has a
// pointer for each.
func (t *Task) Clone3(args CloneArgs) (*Task, error) {
	if !t.alive() {
		return nil, unix.ESRCH
	}
	f := args.Flags
	has := func(bits uint64) bool { return f&bits == bits }
	switch {
	case len(args.SetTID) > maxPIDNSLevel,
		args.ExitSignal < 0 || args.ExitSignal > nSig,
		f&^clone3Flags != 0,
		f&(unix.CLONE_DETACHED|csignal&^unix.CLONE_NEWTIME) != 0,
		has(unix.CLONE_SIGHAND | unix.CLONE_CLEAR_SIGHAND),
		f&(unix.CLONE_THREAD|unix.CLONE_PARENT) != 0 && args.ExitSignal != 0:
		return nil, unix.EINVAL
	}
	return t.clone(args)
}
