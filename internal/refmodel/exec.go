package refmodel

import (
	"golang.org/x/sys/unix"
)

// Execve is the process-model part of execve(2) (fs/exec.c
// begin_new_exec and de_thread). Every other thread of the caller's
// process exits (zap_other_threads; they report status 0, as do_group_exit
// makes them with group_exec_task set). A caller that is not the leader
// then takes the leader's place: the two exchange pids (exchange_tids),
// the caller inherits the leader's place in the task list, and the old
// leader, by now a zombie, is released. Whichever thread execs, the
// process's exit signal becomes SIGCHLD (de_thread's "tsk->exit_signal =
// SIGCHLD").
//
// The rest is process-wide: self_exec_id moves on, so children made
// before the exec report with SIGCHLD (do_notify_parent); the handler
// table is the process's own again (unshare_sighand) with every handled
// signal back at SIG_DFL and SIG_IGN kept (flush_signal_handlers);
// PF_FORKNOEXEC is cleared, which makes the parent's setpgid fail with
// EACCES; the saved and filesystem uids follow the effective one and a
// process with no root uid keeps no capability (cap_bprm_creds_from_file
// for a file with no set-id bits).
func (m *Model) Execve(tid int) error {
	t := m.task(tid)
	if t == nil || t.state != running {
		return unix.ESRCH
	}
	// do_execveat_common rechecks a task set*uid marked: EAGAIN while its
	// user is still over its RLIMIT_NPROC, the mark cleared once not.
	if t.nprocExceeded && uint64(m.nproc[t.creds.UID]) > t.proc.rlim[unix.RLIMIT_NPROC].Cur {
		m.hits["exec over RLIMIT_NPROC"]++
		return unix.EAGAIN
	}
	t.nprocExceeded = false
	pr := t.proc
	if pr.groupExit {
		return unix.EAGAIN
	}
	victims := exitOrder(pr, t)
	for _, o := range victims {
		m.beginExit(o, 0)
	}
	for _, o := range victims {
		m.exitNotify(o)
	}
	if old := pr.leader; old != t {
		m.hits["exec by a non-leader"]++
		lp, tp := old.pid, t.pid
		t.pid, old.pid = lp, tp
		lp.task, tp.task = t, old
		m.tasks[lp.nrs[0]] = t
		m.tasks[tp.nrs[0]] = old
		t.serial = old.serial
		pr.leader = t
		if pr.ns.reaper == old {
			pr.ns.reaper = t
		}
		m.release(old)
	}
	m.hits["exec"]++
	pr.exitSignal = int(unix.SIGCHLD)
	pr.execSeq++
	pr.execed = true
	sh := &sighand{}
	for sig, act := range pr.sighand.act {
		if act.Handler == SigIgn {
			sh.act[sig].Handler = SigIgn
		}
	}
	pr.sighand = sh
	c := &t.creds
	c.SUID, c.FSUID = c.EUID, c.EUID
	pr.nonDumpable = c.UID != c.EUID // begin_new_exec's set_dumpable (gids are all 0)
	if c.UID != 0 && c.EUID != 0 {
		c.CapPermitted, c.CapEffective = 0, 0
	}
	// ptrace_event(PTRACE_EVENT_EXEC): a tracee attached with ATTACH or
	// TRACEME (PT_PTRACED without PT_SEIZED) is sent SIGTRAP, the legacy
	// exec report; a seized one gets nothing.
	if pr.tracer != nil && !pr.seized {
		m.hits["exec SIGTRAP"]++
		m.sendSignalTo(pr, pr.leader, int(unix.SIGTRAP), true)
	}
	m.settle()
	return nil
}
