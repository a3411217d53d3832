// The kernel runner's agent: every task of a scenario run on the host kernel is a process or
// thread of this program, serving one command at a time on its own SOCK_SEQPACKET socket. The
// protocol is described in the package documentation of tasklist/scenario/kernelrun (doc.go in the directory above).
//
// Every system call is made with a raw syscall instruction that returns -errno: the tasks share
// glibc's thread pointer (raw clone sets up no TLS), so glibc's errno, locks and caches are not
// theirs to use, and what is measured must be the kernel, not the C library. Nothing here
// allocates with malloc or uses stdio after startup.
#define _GNU_SOURCE
#include <stdint.h>
#include <stddef.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/mman.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <poll.h>
#include <sys/stat.h>

#if !defined(__x86_64__)
#error "the tasklist kernel agent supports only x86_64 (raw clone and sigreturn are written for it)"
#endif

// The protocol's numbers, MSG_*, OP_*, MAXWORDS, SEMOP_CARRY (the most sembufs a command
// carries, three words each), VALUES_CARRY (the most 16-bit semaphore values a SETALL command or
// GETALL reply carries, four to a word) and HANDLER_KIND (scenario.Handler), are written once, in
// protocol.go: the runner defines them with -D flags when it compiles this file.
#ifndef MAXWORDS
#error "the agent is compiled by tasklist/scenario/kernelrun, which defines the protocol's numbers"
#endif

#define STACK_SIZE (1 << 20) // a clone child's stack; touched pages only
#define PIDFD_THREAD_FLAG O_EXCL

static long sys6(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

#define S0(n) sys6((n), 0, 0, 0, 0, 0, 0)
#define S1(n, a) sys6((n), (long)(a), 0, 0, 0, 0, 0)
#define S2(n, a, b) sys6((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define S3(n, a, b, c) sys6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define S4(n, a, b, c, d) sys6((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define S5(n, a, b, c, d, e) sys6((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

static __attribute__((noreturn)) void die(int code)
{
	for (;;)
		S1(SYS_exit, code);
}

// raw_clone makes the clone or clone3 system call nr with its first five arguments; the child
// starts on child_sp, where fn and its argument have been stored, calls fn and exits with its
// return value, never returning here.
static long raw_clone(long nr, long a1, long a2, long a3, long a4, long a5, int (*fn)(void *), void *arg,
		      uint64_t *child_sp)
{
	child_sp[0] = (uint64_t)arg;
	child_sp[1] = (uint64_t)fn;
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register uint64_t *sp __asm__("r9") = child_sp;
	long ret;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "mov %%r9, %%rsp\n\t"
			 "xor %%ebp, %%ebp\n\t"
			 "pop %%rdi\n\t"
			 "pop %%rax\n\t"
			 "call *%%rax\n\t"
			 "mov %%eax, %%edi\n\t"
			 "mov $60, %%eax\n\t"
			 "syscall\n\t"
			 "hlt\n"
			 "1:"
			 : "=a"(ret)
			 : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(sp)
			 : "rcx", "r11", "memory");
	return ret;
}

static void on_signal(int sig) { (void)sig; }

__attribute__((naked)) static void restore_rt(void)
{
	__asm__ volatile("mov $15, %eax\n\tsyscall\n\thlt");
}

struct ksigaction {
	unsigned long handler;
	unsigned long flags;
	unsigned long restorer;
	uint64_t mask;
};

#define KSA_RESTORER 0x04000000UL

struct clone_args3 {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
		set_tid_size, cgroup;
};

static long parse_long(const char *s)
{
	long v = 0;
	while (*s >= '0' && *s <= '9')
		v = v * 10 + (*s++ - '0');
	return v;
}

static void format_long(char *buf, long v)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = '0' + v % 10;
		v /= 10;
	} while (v);
	while (n)
		*buf++ = tmp[--n];
	*buf = 0;
}

// host_tid is the calling thread's tid in the pid namespace of the /proc mount, the runner's:
// /proc/thread-self links to "TGID/task/TID" as that namespace numbers them.
static long host_tid(void)
{
	char buf[64];
	long n = S4(SYS_readlinkat, AT_FDCWD, "/proc/thread-self", buf, sizeof buf - 1);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *p = buf + n;
	while (p > buf && p[-1] != '/')
		p--;
	return parse_long(p);
}

// send_fds sends words as one message on fd, with the nfds descriptors of pass as SCM_RIGHTS.
static void send_fds(int fd, int64_t *words, int n, const int *pass, int nfds)
{
	struct iovec iov = {words, (size_t)n * sizeof(int64_t)};
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {0};
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (nfds > 0) {
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		for (int i = 0; i < nfds; i++)
			((int *)CMSG_DATA(c))[i] = pass[i];
	}
	while (S3(SYS_sendmsg, fd, &mh, MSG_NOSIGNAL) == -EINTR)
		;
}

// send_msg sends words as one message on fd, with fd_to_pass as SCM_RIGHTS when it is >= 0.
static void send_msg(int fd, int64_t *words, int n, int fd_to_pass)
{
	send_fds(fd, words, n, &fd_to_pass, fd_to_pass >= 0);
}

static void reply(int fd, long ret)
{
	int64_t m[2] = {MSG_REPLY, ret};
	send_msg(fd, m, 2, -1);
}

static void loop(int ctl) __attribute__((noreturn));

// start is what a clone child needs; it lives on the child's own stack.
struct start {
	int ctl, parent_ctl, runner_end, files_shared;
};

// close_sockets closes every socket of a private table but keep: the sockets of the tasks
// whose table this is a copy of. The scenario's pidfds stay open, as fork keeps them.
static void close_sockets(int keep)
{
	enum { MAX_FDS = 4096 };
	int fds[MAX_FDS], n = 0;
	char buf[4096];
	int dir = (int)S3(SYS_openat, AT_FDCWD, "/proc/thread-self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return;
	for (;;) {
		long got = S3(SYS_getdents64, dir, buf, sizeof buf);
		if (got <= 0)
			break;
		for (long off = 0; off < got;) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *d = (void *)(buf + off);
			if (d->name[0] >= '0' && d->name[0] <= '9' && n < MAX_FDS)
				fds[n++] = (int)parse_long(d->name);
			off += d->reclen;
		}
	}
	S1(SYS_close, dir);
	for (int i = 0; i < n; i++) {
		struct stat st;
		if (fds[i] > 2 && fds[i] != keep && fds[i] != dir && S2(SYS_fstat, fds[i], &st) == 0 &&
		    S_ISSOCK(st.st_mode))
			S1(SYS_close, fds[i]);
	}
}

static int child_main(void *p)
{
	struct start s = *(struct start *)p;
	int64_t hello[2] = {MSG_HELLO, host_tid()};
	send_msg(s.parent_ctl, hello, 2, s.runner_end);
	if (s.files_shared)
		S1(SYS_close, s.runner_end);
	else
		close_sockets(s.ctl);
	loop(s.ctl);
}

// The ways do_clone makes a child.
enum { BY_CLONE3, BY_CLONE, BY_VFORK };

// do_clone makes a child that serves commands on a new socket, with clone3 (and set_tid's n
// entries), clone(2) or vfork(2). The child says hello on the parent's socket, passing the
// runner's end, because the parent may be unable to reply for a long time (CLONE_VFORK); the
// parent's reply carries a pidfd so that the runner can learn the child's pids even when the
// child starts stopped and cannot say hello yet, and the pidfd CLONE_PIDFD opened, which stays
// open in the caller's table.
static void do_clone(int ctl, uint64_t flags, long exit_signal, int by, const int64_t *set_tid, long n)
{
	int sv[2];
	long r = S4(SYS_socketpair, AF_UNIX, SOCK_SEQPACKET, 0, sv);
	if (r < 0) {
		reply(ctl, r);
		return;
	}
	char *stack = (char *)sys6(SYS_mmap, 0, STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if ((unsigned long)stack > -4096UL) {
		S1(SYS_close, sv[0]);
		S1(SYS_close, sv[1]);
		reply(ctl, (long)stack);
		return;
	}
	// The low page holds what the kernel writes for CLONE_PARENT_SETTID, CLONE_CHILD_SETTID,
	// CLONE_CHILD_CLEARTID and clone3's CLONE_PIDFD, and clone3's set_tid; the child's stack
	// grows down from the top.
	int *ptid = (int *)stack, *ctid = (int *)(stack + 64), *pidfd3 = (int *)(stack + 128);
	int *tids = (int *)(stack + 192);
	uint64_t *top = (uint64_t *)(stack + STACK_SIZE - 256);
	struct start *st = (struct start *)(stack + STACK_SIZE - 128);
	st->ctl = sv[1];
	st->parent_ctl = ctl;
	st->runner_end = sv[0];
	st->files_shared = (flags & CLONE_FILES) != 0;
	*ptid = -1;
	*pidfd3 = -1;
	unsigned long tls = 0;
	if (flags & CLONE_SETTLS) // keep the thread pointer everyone already shares
		S2(SYS_arch_prctl, 0x1003 /* ARCH_GET_FS */, &tls);
	long pid;
	if (by == BY_VFORK) {
		pid = raw_clone(SYS_vfork, 0, 0, 0, 0, 0, child_main, st, top);
	} else if (by == BY_CLONE) {
		pid = raw_clone(SYS_clone, (long)(flags | (uint64_t)exit_signal), (long)top, (long)ptid, (long)ctid,
				(long)tls, child_main, st, top);
	} else {
		struct clone_args3 ca = {0};
		ca.flags = flags;
		ca.pidfd = (uint64_t)pidfd3;
		ca.child_tid = (uint64_t)ctid;
		ca.parent_tid = (uint64_t)ptid;
		ca.exit_signal = (uint64_t)exit_signal;
		ca.stack = (uint64_t)stack;
		ca.stack_size = (uint64_t)((char *)top - stack);
		ca.tls = tls;
		for (long i = 0; i < n; i++)
			tids[i] = (int)set_tid[i];
		if (n > 0) {
			ca.set_tid = (uint64_t)tids;
			ca.set_tid_size = (uint64_t)n;
		}
		pid = raw_clone(435 /* clone3 */, (long)&ca, sizeof ca, 0, 0, 0, child_main, st, top);
	}
	if (pid < 0) {
		S1(SYS_close, sv[0]);
		S1(SYS_close, sv[1]);
		S2(SYS_munmap, stack, STACK_SIZE);
		reply(ctl, pid);
		return;
	}
	int cloned = -1; // the pidfd CLONE_PIDFD opened
	if (flags & CLONE_PIDFD)
		cloned = by == BY_CLONE ? *ptid : *pidfd3;
	if (!(flags & CLONE_FILES)) {
		S1(SYS_close, sv[0]);
		S1(SYS_close, sv[1]);
	}
	// The reply's second word is 0 with a pidfd, or pidfd_open's error: ESRCH says the child
	// was released before the call returned (reaped by a thread of the caller's process or
	// its tracer, or at once for a parent that ignores SIGCHLD), so it may never say hello.
	// The third is the number CLONE_PIDFD's pidfd has in the caller's table, -1 without one;
	// the runner gets that pidfd as the second descriptor.
	long pidfd = S2(SYS_pidfd_open, pid, (flags & CLONE_THREAD) ? PIDFD_THREAD_FLAG : 0);
	int64_t m[4] = {MSG_REPLY, pid, pidfd >= 0 ? 0 : pidfd, cloned};
	int pass[2], npass = 0;
	if (pidfd >= 0)
		pass[npass++] = (int)pidfd;
	if (cloned >= 0)
		pass[npass++] = cloned;
	send_fds(ctl, m, 4, pass, npass);
	if (pidfd >= 0)
		S1(SYS_close, pidfd);
}

// do_execve runs the agent again. The image is named through the
// calling thread's /proc entry: /proc/self names the process by its
// leader, whose exe link is gone once the leader has exited.
static void do_execve(int ctl)
{
	char fdbuf[24];
	format_long(fdbuf, ctl);
	char *argv[] = {"tasklist-agent", "resume", fdbuf, 0};
	char *envp[] = {0};
	reply(ctl, S3(SYS_execve, "/proc/thread-self/exe", argv, envp));
}

static long do_sigaction(long sig, long kind, long flags)
{
	struct ksigaction act = {0};
	act.handler = kind == HANDLER_KIND ? (unsigned long)on_signal : (unsigned long)kind;
	act.flags = (unsigned long)flags;
	if (kind == HANDLER_KIND)
		act.flags |= KSA_RESTORER;
	act.restorer = (unsigned long)restore_rt;
	return S4(SYS_rt_sigaction, sig, &act, 0, 8);
}

static long do_sigsuspend(uint64_t mask) { return S2(SYS_rt_sigsuspend, &mask, 8); }

// do_sigtimedwait waits ms milliseconds at most; a negative ms passes no timeout (NULL).
static long do_sigtimedwait(uint64_t set, long ms)
{
	struct timespec ts = {ms / 1000, ms % 1000 * 1000000};
	return S4(SYS_rt_sigtimedwait, &set, 0, ms < 0 ? 0 : &ts, 8);
}

static long do_prctl(long option, long arg)
{
	int v = 0;
	// The option is an int to the kernel: decide on the value it will see.
	if ((int)option == 2 /* PR_GET_PDEATHSIG */ || (int)option == 37 /* PR_GET_CHILD_SUBREAPER */) {
		long r = S5(SYS_prctl, option, &v, 0, 0, 0);
		return r < 0 ? r : v;
	}
	return S5(SYS_prctl, option, arg, 0, 0, 0);
}

static long do_ptrace(long req, long pid, long addr, long data)
{
	static const long scratch_reqs[] = {1, 2, 3, 12, 14, 0x4201, 0x4202};
	uint64_t scratch[512];
	struct iovec iov = {scratch, sizeof scratch};
	for (size_t i = 0; i < sizeof scratch_reqs / sizeof scratch_reqs[0]; i++)
		if (req == scratch_reqs[i])
			data = (long)scratch; // PEEK*, GETREGS, GETFPREGS, GETEVENTMSG, GETSIGINFO
	if (req == 0x4204) // GETREGSET
		data = (long)&iov;
	return S4(SYS_ptrace, req, pid, addr, data);
}

// do_prlimit replies with the old limits after the return value; with has_new it sets them too.
static void do_prlimit(int ctl, long pid, long res, long has_new, long soft, long hard)
{
	struct rlimit lim = {(rlim_t)soft, (rlim_t)hard}, old = {0, 0};
	long r = S4(SYS_prlimit64, pid, res, has_new ? &lim : 0, &old);
	int64_t m[4] = {MSG_REPLY, r, (int64_t)old.rlim_cur, (int64_t)old.rlim_max};
	send_msg(ctl, m, 4, -1);
}

static long do_setrlimit(long res, long soft, long hard, long has_hard)
{
	struct rlimit lim;
	if (!has_hard) {
		long r = S4(SYS_prlimit64, 0, res, 0, &lim);
		if (r < 0)
			return r;
		hard = (long)lim.rlim_max;
	}
	lim.rlim_cur = (rlim_t)soft;
	lim.rlim_max = (rlim_t)hard;
	return S4(SYS_prlimit64, 0, res, &lim, 0);
}

static long do_semop(const int64_t *a, int n)
{
	// a: id, timeout_ms, has_timeout, nsops, carried, then num, op, flags per carried op. The
	// runner carries every op or none: a list too long for one message is refused by Linux
	// for its count (E2BIG) before it is read, and a NULL array faults if it ever were.
	long nsops = a[3], carried = a[4];
	struct sembuf ops[SEMOP_CARRY];
	if (nsops < 0 || carried < 0 || carried > SEMOP_CARRY || 5 + 3 * carried > n)
		return -22;
	for (long i = 0; i < carried; i++) {
		ops[i].sem_num = (unsigned short)a[5 + 3 * i];
		ops[i].sem_op = (short)a[6 + 3 * i];
		ops[i].sem_flg = (short)a[7 + 3 * i];
	}
	struct sembuf *p = carried == nsops ? ops : 0;
	if (!a[2])
		return S3(SYS_semop, a[0], p, nsops);
	struct timespec ts = {a[1] / 1000, (a[1] % 1000) * 1000000};
	return S4(SYS_semtimedop, a[0], p, nsops, &ts);
}

// value unpacks the i-th of the 16-bit values packed four to a word from w.
static unsigned short value(const int64_t *w, long i)
{
	return (unsigned short)((uint64_t)w[i / 4] >> (16 * (i % 4)));
}

// setall makes SETALL with the list as the array (else the integer argument, or NULL, as its
// address). The list ends at an inaccessible page: Linux reading past it faults (EFAULT).
static long setall(long id, long num, long kind, const int64_t *a, int n)
{
	enum { PAGE = 4096, DATA = (VALUES_CARRY * sizeof(unsigned short) + PAGE - 1) / PAGE * PAGE };
	long cnt = a[4], r;
	if (kind != 2)
		return S4(SYS_semctl, id, num, SETALL, kind == 1 ? a[4] : 0);
	if (cnt < 0 || cnt > VALUES_CARRY || 5 + (cnt + 3) / 4 > n)
		return -22;
	char *buf = (char *)sys6(SYS_mmap, 0, DATA + PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if ((unsigned long)buf > -4096UL)
		return (long)buf;
	unsigned short *vals = (unsigned short *)(buf + DATA) - cnt;
	for (long i = 0; i < cnt; i++)
		vals[i] = value(a + 5, i);
	r = S3(SYS_mprotect, buf + DATA, PAGE, PROT_NONE);
	if (r == 0)
		r = S4(SYS_semctl, id, num, SETALL, vals);
	S2(SYS_munmap, buf, DATA + PAGE);
	return r;
}

// do_semctl replies itself: GETALL's values follow the return value.
static void do_semctl(int ctl, const int64_t *a, int n)
{
	// a: id, num, cmd, arg kind (0 none, 1 integer, 2 list), then the integer or count and values
	long id = a[0], num = a[1], cmd = a[2], kind = a[3];
	struct semid_ds ds;
	int64_t m[MAXWORDS];
	unsigned short vals[VALUES_CARRY];
	long r;
	switch (cmd) {
	case IPC_STAT:
	case SEM_STAT:
	case SEM_STAT_ANY:
	case IPC_INFO:
	case SEM_INFO:
		r = S4(SYS_semctl, id, num, cmd, &ds);
		break;
	case IPC_SET:
		r = S4(SYS_semctl, id, 0, IPC_STAT, &ds);
		if (r >= 0) {
			if (kind == 1)
				ds.sem_perm.mode = (unsigned short)a[4];
			r = S4(SYS_semctl, id, num, IPC_SET, &ds);
		}
		break;
	case GETALL:
		r = S4(SYS_semctl, id, 0, IPC_STAT, &ds);
		if (r >= 0 && ds.sem_nsems > VALUES_CARRY) {
			// Never larger than SEMMSL; should one be, say so rather than answer.
			m[0] = MSG_TOO_BIG;
			send_msg(ctl, m, 1, -1);
			return;
		}
		if (r >= 0)
			r = S4(SYS_semctl, id, num, GETALL, vals);
		if (r >= 0) {
			m[0] = MSG_REPLY;
			m[1] = r;
			m[2] = (int64_t)ds.sem_nsems;
			for (unsigned long i = 0; i < ds.sem_nsems; i += 4) {
				uint64_t w = 0;
				for (unsigned long j = 0; j < 4 && i + j < ds.sem_nsems; j++)
					w |= (uint64_t)vals[i + j] << (16 * j);
				m[3 + i / 4] = (int64_t)w;
			}
			send_msg(ctl, m, 3 + (int)(ds.sem_nsems + 3) / 4, -1);
			return;
		}
		break;
	case SETALL:
		r = setall(id, num, kind, a, n);
		break;
	default:
		r = S4(SYS_semctl, id, num, cmd, kind == 1 ? a[4] : 0);
	}
	reply(ctl, r);
}

// The commands, one handler each. A handler gets the command's argument words a (n of them)
// and sends the reply itself; most reply with a system call's return value alone.
typedef void (*handler)(int ctl, const int64_t *a, int n);

// RETURNS defines the handler cmd_NAME, which replies with the value of expr.
#define RETURNS(name, expr)                                     \
	static void cmd_##name(int ctl, const int64_t *a, int n) \
	{                                                        \
		(void)a, (void)n;                                \
		reply(ctl, (expr));                              \
	}

RETURNS(getpid, S0(SYS_getpid))
RETURNS(gettid, S0(SYS_gettid))
RETURNS(getppid, S0(SYS_getppid))
RETURNS(getpgrp, S1(SYS_getpgid, 0))
RETURNS(getpgid, S1(SYS_getpgid, a[0]))
RETURNS(getsid, S1(SYS_getsid, a[0]))
RETURNS(setsid, S0(SYS_setsid))
RETURNS(setpgid, S2(SYS_setpgid, a[0], a[1]))
RETURNS(getpriority, S2(SYS_getpriority, a[0], a[1]))
RETURNS(setpriority, S3(SYS_setpriority, a[0], a[1], a[2]))
RETURNS(setuid, S1(SYS_setuid, a[0]))
RETURNS(setresuid, S3(SYS_setresuid, a[0], a[1], a[2]))
RETURNS(setgid, S1(SYS_setgid, a[0]))
RETURNS(setresgid, S3(SYS_setresgid, a[0], a[1], a[2]))
RETURNS(setrlimit, do_setrlimit(a[0], a[1], a[2], a[3]))
RETURNS(kill, S2(SYS_kill, a[0], a[1]))
RETURNS(tgkill, S3(SYS_tgkill, a[0], a[1], a[2]))
RETURNS(tkill, S2(SYS_tkill, a[0], a[1]))
RETURNS(sigsuspend, do_sigsuspend((uint64_t)a[0]))
RETURNS(sigtimedwait, do_sigtimedwait((uint64_t)a[0], a[1]))
RETURNS(sigaction, do_sigaction(a[0], a[1], a[2]))
RETURNS(prctl, do_prctl(a[0], a[1]))
RETURNS(ptrace, do_ptrace(a[0], a[1], a[2], a[3]))
RETURNS(semget, S3(SYS_semget, a[0], a[1], a[2]))
RETURNS(semop, do_semop(a, n))
RETURNS(unshare, S1(SYS_unshare, a[0]))

RETURNS(pidfd_send_signal, S4(SYS_pidfd_send_signal, a[0], a[1], 0, a[2]))
RETURNS(close, S1(SYS_close, a[0]))

static void cmd_fork(int ctl, const int64_t *a, int n)
{
	(void)a, (void)n;
	do_clone(ctl, 0, SIGCHLD, BY_CLONE, 0, 0);
}

static void cmd_vfork(int ctl, const int64_t *a, int n)
{
	(void)a, (void)n;
	do_clone(ctl, CLONE_VM | CLONE_VFORK, SIGCHLD, BY_VFORK, 0, 0);
}

// cmd_clone gets the flags, the exit signal and whether clone(2) makes the call, else clone3.
static void cmd_clone(int ctl, const int64_t *a, int n)
{
	(void)n;
	do_clone(ctl, (uint64_t)a[0], a[1], a[2] ? BY_CLONE : BY_CLONE3, 0, 0);
}

// cmd_clone3 gets the flags, the exit signal and set_tid's entries.
static void cmd_clone3(int ctl, const int64_t *a, int n)
{
	long tids = n - 2;
	if (tids < 0 || tids > 32) {
		reply(ctl, -22);
		return;
	}
	do_clone(ctl, (uint64_t)a[0], a[1], BY_CLONE3, a + 2, tids);
}

// cmd_pidfd_open passes the runner the pidfd it opened, which the runner holds to know it by.
static void cmd_pidfd_open(int ctl, const int64_t *a, int n)
{
	(void)n;
	long fd = S2(SYS_pidfd_open, a[0], a[1]);
	int64_t m[2] = {MSG_REPLY, fd};
	send_msg(ctl, m, 2, fd >= 0 ? (int)fd : -1);
}

// cmd_poll polls one descriptor for POLLIN without waiting: 1 or 0, or EBADF (POLLNVAL) for
// a descriptor that is not open.
static void cmd_poll(int ctl, const int64_t *a, int n)
{
	(void)n;
	struct pollfd p = {(int)a[0], POLLIN, 0};
	long r = S3(SYS_poll, &p, 1, 0);
	if (r >= 0 && (p.revents & POLLNVAL))
		r = -EBADF;
	reply(ctl, r);
}

static void cmd_prlimit(int ctl, const int64_t *a, int n)
{
	(void)n;
	do_prlimit(ctl, a[0], a[1], a[2], a[3], a[4]);
}

static void cmd_getrlimit(int ctl, const int64_t *a, int n)
{
	(void)n;
	struct rlimit old = {0, 0};
	long r = S2(SYS_getrlimit, a[0], &old);
	int64_t m[4] = {MSG_REPLY, r, (int64_t)old.rlim_cur, (int64_t)old.rlim_max};
	send_msg(ctl, m, 4, -1);
}

// cmd_exit and cmd_exit_group reply only if the call returned after all.
static void cmd_exit(int ctl, const int64_t *a, int n)
{
	(void)n;
	S1(SYS_exit, a[0]);
	reply(ctl, -38);
}

static void cmd_exit_group(int ctl, const int64_t *a, int n)
{
	(void)n;
	S1(SYS_exit_group, a[0]);
	reply(ctl, -38);
}

static void cmd_execve(int ctl, const int64_t *a, int n)
{
	(void)a, (void)n;
	do_execve(ctl);
}

// cmd_sigprocmask replies with the old mask after the return value.
static void cmd_sigprocmask(int ctl, const int64_t *a, int n)
{
	(void)n;
	uint64_t set = (uint64_t)a[1], old = 0;
	long r = S4(SYS_rt_sigprocmask, a[0], &set, &old, 8);
	int64_t m[3] = {MSG_REPLY, r, (int64_t)old};
	send_msg(ctl, m, 3, -1);
}

// cmd_sigpending replies with the pending set after the return value.
static void cmd_sigpending(int ctl, const int64_t *a, int n)
{
	(void)a, (void)n;
	uint64_t set = 0;
	long r = S2(SYS_rt_sigpending, &set, 8);
	int64_t m[3] = {MSG_REPLY, r, (int64_t)set};
	send_msg(ctl, m, 3, -1);
}

// cmd_wait4 replies with the status word after the return value.
static void cmd_wait4(int ctl, const int64_t *a, int n)
{
	(void)n;
	int status = 0;
	long r = S4(SYS_wait4, a[0], &status, a[1], 0);
	int64_t m[3] = {MSG_REPLY, r, status};
	send_msg(ctl, m, 3, -1);
}

// cmd_waitid replies with si_pid, si_code and si_status after the return value.
static void cmd_waitid(int ctl, const int64_t *a, int n)
{
	(void)n;
	siginfo_t si;
	for (size_t i = 0; i < sizeof si; i++)
		((char *)&si)[i] = 0;
	long r = S5(SYS_waitid, a[0], a[1], &si, a[2], 0);
	int64_t m[5] = {MSG_REPLY, r, si.si_pid, si.si_code, si.si_status};
	send_msg(ctl, m, 5, -1);
}

// handlers maps each command to its handler. The commands are numbered by the call table of
// tasklist/scenario (protocol.go); the kernel runner's tests check that every call has its
// entry here and that every entry is a call's.
static const handler handlers[] = {
	[OP_CLONE] = cmd_clone,
	[OP_CLONE3] = cmd_clone3,
	[OP_CLOSE] = cmd_close,
	[OP_EXECVE] = cmd_execve,
	[OP_EXIT] = cmd_exit,
	[OP_EXIT_GROUP] = cmd_exit_group,
	[OP_FORK] = cmd_fork,
	[OP_GETPGID] = cmd_getpgid,
	[OP_GETPGRP] = cmd_getpgrp,
	[OP_GETPID] = cmd_getpid,
	[OP_GETPPID] = cmd_getppid,
	[OP_GETPRIORITY] = cmd_getpriority,
	[OP_GETRLIMIT] = cmd_getrlimit,
	[OP_GETSID] = cmd_getsid,
	[OP_GETTID] = cmd_gettid,
	[OP_KILL] = cmd_kill,
	[OP_PIDFD_OPEN] = cmd_pidfd_open,
	[OP_PIDFD_SEND_SIGNAL] = cmd_pidfd_send_signal,
	[OP_POLL] = cmd_poll,
	[OP_PRCTL] = cmd_prctl,
	[OP_PRLIMIT] = cmd_prlimit,
	[OP_PTRACE] = cmd_ptrace,
	[OP_SEMCTL] = do_semctl,
	[OP_SEMGET] = cmd_semget,
	[OP_SEMOP] = cmd_semop,
	[OP_SEMTIMEDOP] = cmd_semop,
	[OP_SETGID] = cmd_setgid,
	[OP_SETPGID] = cmd_setpgid,
	[OP_SETPRIORITY] = cmd_setpriority,
	[OP_SETRESGID] = cmd_setresgid,
	[OP_SETRESUID] = cmd_setresuid,
	[OP_SETRLIMIT] = cmd_setrlimit,
	[OP_SETSID] = cmd_setsid,
	[OP_SETUID] = cmd_setuid,
	[OP_SIGACTION] = cmd_sigaction,
	[OP_SIGNAL] = cmd_sigaction,
	[OP_SIGPENDING] = cmd_sigpending,
	[OP_SIGPROCMASK] = cmd_sigprocmask,
	[OP_SIGSUSPEND] = cmd_sigsuspend,
	[OP_SIGTIMEDWAIT] = cmd_sigtimedwait,
	[OP_TGKILL] = cmd_tgkill,
	[OP_TKILL] = cmd_tkill,
	[OP_UNSHARE] = cmd_unshare,
	[OP_VFORK] = cmd_vfork,
	[OP_WAIT4] = cmd_wait4,
	[OP_WAITID] = cmd_waitid,
};

static void dispatch(int ctl, const int64_t *c, int n)
{
	if (c[0] > 0 && c[0] < (int64_t)(sizeof handlers / sizeof handlers[0]) && handlers[c[0]]) {
		handlers[c[0]](ctl, c + 1, n - 1);
		return;
	}
	reply(ctl, -38); // ENOSYS
}

static void loop(int ctl)
{
	int64_t cmd[MAXWORDS];
	for (;;) {
		long n = sys6(SYS_recvfrom, ctl, (long)cmd, sizeof cmd, 0, 0, 0);
		if (n == -EINTR)
			continue;
		if (n < (long)sizeof(int64_t))
			die(0); // the runner is gone
		dispatch(ctl, cmd, (int)(n / sizeof(int64_t)));
	}
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int ctl = (int)parse_long(argv[2]);
	if (argv[1][0] == 'i') { // init: the state the contract promises
		for (int sig = 1; sig <= 64; sig++)
			if (sig != SIGKILL && sig != SIGSTOP)
				do_sigaction(sig, 0, 0);
		uint64_t none = 0;
		S4(SYS_rt_sigprocmask, SIG_SETMASK, &none, 0, 8);
		S3(SYS_setpriority, PRIO_PROCESS, 0, 0);
		S2(SYS_setgroups, 0, 0); // no supplementary groups: ipcperms must not see the runner's
		loop(ctl);
	}
	// resume after execve: exec has unshared the file table, so closing is private.
	if (ctl > 3)
		S3(SYS_close_range, 3, ctl - 1, 0);
	S3(SYS_close_range, ctl + 1, ~0U, 0);
	int64_t m[3] = {MSG_REPLY, 0, host_tid()};
	send_msg(ctl, m, 3, -1);
	loop(ctl);
}
