// hostbench runs tasklist's benchmark workloads (package workload) on the
// host's own kernel, with real processes, threads and semaphores, under
// the harness rules of package bench: the workers start together, warm
// up, then count their iterations over fixed-length samples, each in a
// counter of its own cache line.
//
//   hostbench run WORKLOAD WORKERS WARMUP_NS SAMPLE_NS SAMPLES POPULATION MIX
//
// prints, for each sample i (from 1), "sample i NS C0 C1 ..." with the
// sample's length and each worker's iterations in it; for pthread-create
// also "lat i NS..." with the time of each timed call. "note TEXT" lines
// say where the run differs from the model's workload. MIX is
// "NAME:WEIGHT,..." for the mix, "-" otherwise. SIGTERM, SIGINT or SIGHUP
// stops a run: everything it made is removed and it exits 3 without
// results. The exec-child and exec-grandchild commands are fork-exec's own
// images.
//
// Nothing a run makes may outlive it. Its semaphore sets live, when it
// may make one (as root), in an IPC namespace of its own, which the kernel
// frees with every set in it when the run's last process is gone, however
// they die. The workers ignore the terminal's signals and stop only at
// the last epoch, which the parent sets when it is told to stop, so that
// none dies between a semget and its IPC_RMID and the parent removes its
// own set once they are gone; every process it starts dies with it
// (PR_SET_PDEATHSIG). Its caller is expected to put it in a process group
// of its own, out of reach of a terminal's signals, and to make it a
// SIGTERM when the caller dies.
#define _GNU_SOURCE
#if !defined(__x86_64__)
#error "hostbench supports only amd64"
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXWORKERS 1024
#define MAXSAMPLES 64
#define LATCAP (1 << 16)
#define BATCH 8 // libMicro's -B for pthread-create
#define SEMSHM_ROUNDS 100
#define MAXJOBS 16
#define DECKCAP 4096

enum job {
	J_THREADSPAWN, J_THREADSPAWN_USERS, J_THREADSPAWN_THREADS, J_PTHREAD_CREATE,
	J_FORK_EXIT, J_FORK_EXEC, J_GET, J_SETPRIO, J_SEMOP_MULTI, J_SEMOP_SHARED,
	J_SEM_SHM, J_MIX, NJOBS
};

static const char *job_names[NJOBS] = {
	"threadspawn", "threadspawn-users", "threadspawn-threads", "pthread-create",
	"fork-exit", "fork-exec", "get", "setprio", "semop-multi", "semop-shared",
	"sem-shm", "mix",
};

// slot is one worker's counters: marks[k] is its iteration count when it
// first saw epoch k, latmarks[k] how many latencies it had recorded then.
struct slot {
	uint64_t marks[MAXSAMPLES + 2];
	uint64_t latmarks[MAXSAMPLES + 2];
	int err;
	int failed_job;
} __attribute__((aligned(128)));

struct shared {
	int ready;
	int go;
	int epoch;
	char pad[128 - 3 * sizeof(int)];
	struct slot slots[];
};

static struct shared *sh;
static uint32_t *lat; // LATCAP per worker, for pthread-create
static int nworkers, nsamples, semid = -1, privileged;
static char self[4096];
static volatile sig_atomic_t stopping;
static pid_t main_pid; // the run's parent process

// The mix: each worker's deck of job numbers.
static int mix_jobs[MAXJOBS], mix_weights[MAXJOBS], nmix;

struct wctx {
	int w;
	unsigned long iter;
	uint64_t rng;
	int deck[DECKCAP], ndeck, next;
	pthread_rwlock_t gate; // pthread-create's threads wait on it
	uint64_t nlat;
};

static int64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until(int64_t t) {
	struct timespec ts = {t / 1000000000, t % 1000000000};
	while (!stopping && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void die(const char *what) {
	fprintf(stderr, "hostbench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void *noop(void *arg) { return arg; }

static void *gated(void *arg) {
	pthread_rwlock_t *gate = arg;
	pthread_rwlock_rdlock(gate);
	pthread_rwlock_unlock(gate);
	return NULL;
}

// reap_only waits for pid, which must be the caller's only child, then
// checks that no child is left, as AIM7's jobs wait until wait fails.
static int reap_only(pid_t pid) {
	int status;
	if (waitpid(-1, &status, 0) != pid)
		return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		errno = EPROTO; // the child failed
		return -1;
	}
	if (waitpid(-1, &status, 0) != -1 || errno != ECHILD) {
		errno = EPROTO;
		return -1;
	}
	return 0;
}

static int sem_one(int id, unsigned short num, short op) {
	struct sembuf b = {num, op, 0};
	return semop(id, &b, 1);
}

// run_job is one iteration of job j by worker c.
static int run_job(int j, struct wctx *c) {
	pthread_t t;
	pid_t pid;
	switch (j) {
	case J_THREADSPAWN:
	case J_THREADSPAWN_USERS:
	case J_THREADSPAWN_THREADS:
		if ((errno = pthread_create(&t, NULL, noop, NULL)) != 0)
			return -1;
		return (errno = pthread_join(t, NULL)) == 0 ? 0 : -1;
	case J_PTHREAD_CREATE: {
		pthread_t ts[BATCH];
		pthread_rwlock_wrlock(&c->gate);
		int64_t start = now_ns();
		for (int i = 0; i < BATCH; i++)
			if ((errno = pthread_create(&ts[i], NULL, gated, &c->gate)) != 0)
				return -1;
		int64_t took = now_ns() - start;
		pthread_rwlock_unlock(&c->gate);
		for (int i = 0; i < BATCH; i++)
			pthread_join(ts[i], NULL);
		if (lat != NULL && c->nlat < LATCAP)
			lat[(size_t)c->w * LATCAP + c->nlat++] = (uint32_t)(took / BATCH);
		return 0;
	}
	case J_FORK_EXIT:
		if ((pid = fork()) < 0)
			return -1;
		if (pid == 0)
			_exit(0);
		return reap_only(pid);
	case J_FORK_EXEC:
		if ((pid = fork()) < 0)
			return -1;
		if (pid == 0) {
			execl(self, self, "exec-child", (char *)NULL);
			_exit(127);
		}
		return reap_only(pid);
	case J_GET:
		syscall(SYS_getpid);
		syscall(SYS_getppid);
		syscall(SYS_getpgid, 0);
		syscall(SYS_getsid, 0);
		if (syscall(SYS_getpriority, PRIO_PROCESS, 0) < 0 || syscall(SYS_getpriority, PRIO_PGRP, 0) < 0 ||
		    syscall(SYS_getpriority, PRIO_USER, 0) < 0)
			return -1;
		syscall(SYS_gettid);
		return 0;
	case J_SETPRIO: {
		int which = c->iter % 4 == 3 ? PRIO_PGRP : PRIO_PROCESS;
		// Unprivileged, a nice value can only go up: keep it.
		int nice = privileged ? (int)(c->iter & 1) : 0;
		c->iter++;
		return setpriority(which, 0, nice);
	}
	case J_SEMOP_MULTI:
	case J_SEMOP_SHARED: {
		unsigned short num = j == J_SEMOP_MULTI ? (unsigned short)c->w : 0;
		if (sem_one(semid, num, 1) < 0)
			return -1;
		return sem_one(semid, num, -1);
	}
	case J_SEM_SHM: {
		int id = semget(IPC_PRIVATE, 1, 0600);
		if (id < 0 || semctl(id, 0, SETVAL, 1) < 0)
			return -1;
		for (int i = 0; i < SEMSHM_ROUNDS; i++)
			if (sem_one(id, 0, -1) < 0 || sem_one(id, 0, 1) < 0 || sem_one(id, 0, -1) < 0 ||
			    sem_one(id, 0, 1) < 0)
				return -1;
		return semctl(id, 0, IPC_RMID);
	}
	case J_MIX:
		if (c->next == c->ndeck) {
			for (int i = c->ndeck - 1; i > 0; i--) {
				c->rng ^= c->rng << 13, c->rng ^= c->rng >> 7, c->rng ^= c->rng << 17;
				int k = (int)(c->rng % (uint64_t)(i + 1)), tmp = c->deck[i];
				c->deck[i] = c->deck[k], c->deck[k] = tmp;
			}
			c->next = 0;
		}
		return run_job(c->deck[c->next++], c);
	}
	errno = EINVAL;
	return -1;
}

// worker_loop waits at the barrier, then runs job until the last epoch.
static void worker_loop(int j, int w) {
	struct slot *s = &sh->slots[w];
	struct wctx *c = calloc(1, sizeof *c);
	if (c == NULL)
		die("calloc");
	c->w = w;
	c->rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)(w + 1);
	pthread_rwlock_init(&c->gate, NULL);
	for (int i = 0; i < nmix; i++)
		for (int k = 0; k < mix_weights[i] && c->ndeck < DECKCAP; k++)
			c->deck[c->ndeck++] = mix_jobs[i];
	c->next = c->ndeck;
	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE))
		sched_yield();
	uint64_t count = 0;
	int seen = 0;
	for (;;) {
		int e = __atomic_load_n(&sh->epoch, __ATOMIC_RELAXED);
		if (e != seen) {
			for (int k = seen + 1; k <= e; k++) {
				s->marks[k] = count;
				s->latmarks[k] = c->nlat;
			}
			seen = e;
			if (e > nsamples)
				break;
		}
		if (run_job(j, c) < 0) {
			__atomic_store_n(&s->err, errno ? errno : EIO, __ATOMIC_RELEASE);
			break;
		}
		count++;
	}
	free(c);
}

struct thread_arg {
	int job, w;
};

static void *worker_thread(void *arg) {
	struct thread_arg *a = arg;
	worker_loop(a->job, a->w);
	return NULL;
}

// become makes the calling process run as uid, when the run may change
// users.
static void become(int uid) {
	if (privileged && (setgid(uid) < 0 || setuid(uid) < 0))
		die("setuid");
}

// The users a privileged run makes its workers and its population
// processes: as package workload's, but from a range no scenario uses,
// since RLIMIT_NPROC counts a uid's processes over the whole host and the
// kernel runner's scenarios may run beside a benchmark.
#define WORKER_UID 61000
#define POPULATION_UID 62000

// worker_uid is the user a job's worker w runs as (one user, or one each
// for threadspawn-users, as in package workload), or -1 for the caller's
// own.
static int worker_uid(int j, int w) {
	switch (j) {
	case J_THREADSPAWN:
	case J_THREADSPAWN_THREADS:
	case J_PTHREAD_CREATE:
	case J_GET:
		return WORKER_UID;
	case J_THREADSPAWN_USERS:
		return WORKER_UID + w;
	}
	return -1;
}

static pid_t *population;
static int npopulation;

#define POPSTACK (16 * 1024)

// pop_main is a population process: it shares the parent's memory (a
// fork's page-table copy is most of its cost) and so makes only raw
// system calls, which touch neither errno nor anything else of the
// parent's, then sleeps until killed.
static long sys2(long n, long a, long b) {
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b) : "rcx", "r11", "memory");
	return ret;
}

static int pop_main(void *arg) {
	long uid = (long)arg;
	sys2(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
	if (sys2(SYS_getppid, 0, 0) != main_pid)
		sys2(SYS_exit, 1, 0);
	if (uid >= 0) {
		sys2(SYS_setgid, uid, 0);
		sys2(SYS_setuid, uid, 0);
	}
	for (;;)
		sys2(SYS_pause, 0, 0);
	return 0;
}

// populate starts n sleeping processes spread over 8 process groups, each
// of one of 4 users when privileged, as package workload's population.
static void populate(int n) {
	pid_t leaders[8] = {0};
	population = calloc((size_t)n + 1, sizeof *population);
	char *stacks = mmap(NULL, (size_t)n * POPSTACK, PROT_READ | PROT_WRITE,
	                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (population == NULL || stacks == MAP_FAILED)
		die("allocating the population");
	for (int i = 0; i < n; i++) {
		int g = i % 8;
		long uid = privileged ? POPULATION_UID + g % 4 : -1;
		pid_t pid = clone(pop_main, stacks + (size_t)(i + 1) * POPSTACK, CLONE_VM | SIGCHLD, (void *)uid);
		if (pid < 0)
			die("clone (population)");
		if (setpgid(pid, leaders[g]) < 0)
			die("setpgid (population)");
		if (leaders[g] == 0)
			leaders[g] = pid;
		population[npopulation++] = pid;
	}
}

static void on_term(int sig) {
	(void)sig;
	stopping = 1;
}

// The signals that stop a run: the parent's SIGTERM on a cancel or a
// death, and a terminal's, should one reach the program.
static const int stop_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};

// remove_set removes the parent's semaphore set when it exits early (die);
// a worker's exit leaves it to the parent.
static void remove_set(void) {
	if (getpid() == main_pid && semid >= 0)
		semctl(semid, 0, IPC_RMID);
}

// die_with_parent makes the calling process get SIGKILL when parent, which
// forked it, dies, and exits at once if it already has.
static void die_with_parent(pid_t parent) {
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(1);
}

// parse_mix reads "NAME:WEIGHT,..." into mix_jobs and mix_weights.
static void parse_mix(char *spec) {
	for (char *item = strtok(spec, ","); item != NULL; item = strtok(NULL, ",")) {
		char *colon = strchr(item, ':');
		if (colon == NULL || nmix == MAXJOBS)
			goto bad;
		*colon = 0;
		int j = -1;
		for (int k = 0; k < J_MIX; k++)
			if (strcmp(item, job_names[k]) == 0)
				j = k;
		int weight = atoi(colon + 1);
		if (j < 0 || weight <= 0)
			goto bad;
		mix_jobs[nmix] = j;
		mix_weights[nmix++] = weight;
	}
	if (nmix > 0)
		return;
bad:
	fprintf(stderr, "hostbench: bad mix\n");
	exit(2);
}

static int mix_has(int j) {
	for (int i = 0; i < nmix; i++)
		if (mix_jobs[i] == j)
			return 1;
	return 0;
}

static int run(int argc, char **argv) {
	if (argc != 9) {
		fprintf(stderr, "usage: hostbench run WORKLOAD WORKERS WARMUP_NS SAMPLE_NS SAMPLES POPULATION MIX\n");
		return 2;
	}
	int job = -1;
	for (int k = 0; k < NJOBS; k++)
		if (strcmp(argv[2], job_names[k]) == 0)
			job = k;
	nworkers = atoi(argv[3]);
	int64_t warmup = atoll(argv[4]), sample = atoll(argv[5]);
	nsamples = atoi(argv[6]);
	int npop = atoi(argv[7]);
	if (job < 0 || nworkers < 1 || nworkers > MAXWORKERS || nsamples < 1 || nsamples > MAXSAMPLES ||
	    warmup < 0 || sample <= 0) {
		fprintf(stderr, "hostbench: bad arguments\n");
		return 2;
	}
	if (job == J_MIX)
		parse_mix(argv[8]);
	privileged = geteuid() == 0;
	if (readlink("/proc/self/exe", self, sizeof self - 1) < 0)
		die("readlink /proc/self/exe");

	struct sigaction sa = {0};
	sa.sa_handler = on_term;
	for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
		sigaction(stop_signals[i], &sa, NULL);
	// Unprivileged, the sets are made in the caller's namespace, and only
	// the protocol above removes them.
	if (privileged && unshare(CLONE_NEWIPC) < 0)
		die("unshare(CLONE_NEWIPC)");
	main_pid = getpid();
	atexit(remove_set);

	size_t size = sizeof(struct shared) + (size_t)nworkers * sizeof(struct slot);
	sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap");
	if (job == J_PTHREAD_CREATE || mix_has(J_PTHREAD_CREATE)) {
		lat = mmap(NULL, (size_t)nworkers * LATCAP * sizeof *lat, PROT_READ | PROT_WRITE,
		           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (lat == MAP_FAILED)
			die("mmap");
	}
	if (!privileged && (job == J_THREADSPAWN_USERS || job == J_GET || job == J_SETPRIO || job == J_MIX))
		printf("note unprivileged: every process runs as one user and nice values never go down\n");
	if (job == J_GET || mix_has(J_GET))
		populate(npop);
	if (job == J_SEMOP_MULTI || job == J_SEMOP_SHARED || mix_has(J_SEMOP_MULTI) || mix_has(J_SEMOP_SHARED)) {
		semid = semget(IPC_PRIVATE, nworkers, 0600);
		if (semid < 0)
			die("semget");
		for (int k = 0; k < nworkers; k++)
			if (semctl(semid, k, SETVAL, 200) < 0)
				die("semctl");
	}

	pid_t *pids = calloc((size_t)nworkers, sizeof *pids);
	int nprocs = job == J_THREADSPAWN_THREADS ? 1 : nworkers;
	for (int p = 0; p < nprocs; p++) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork (worker)");
		if (pid == 0) {
			for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
				signal(stop_signals[i], SIG_IGN);
			die_with_parent(main_pid);
			if (job == J_SETPRIO || (job == J_MIX && mix_has(J_SETPRIO)))
				setpgid(0, 0);
			int uid = worker_uid(job, p);
			if (uid >= 0)
				become(uid);
			if (job != J_THREADSPAWN_THREADS) {
				worker_loop(job, p);
				_exit(0);
			}
			pthread_t *ts = calloc((size_t)nworkers, sizeof *ts);
			struct thread_arg *args = calloc((size_t)nworkers, sizeof *args);
			for (int w = 0; w < nworkers; w++) {
				args[w] = (struct thread_arg){job, w};
				if ((errno = pthread_create(&ts[w], NULL, worker_thread, &args[w])) != 0)
					die("pthread_create (worker)");
			}
			for (int w = 0; w < nworkers; w++)
				pthread_join(ts[w], NULL);
			_exit(0);
		}
		pids[p] = pid;
	}

	while (__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) < nworkers && !stopping)
		usleep(100);
	int64_t *starts = calloc((size_t)nsamples + 2, sizeof *starts);
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	int64_t t = now_ns() + warmup;
	sleep_until(t);
	for (int k = 1; k <= nsamples + 1 && !stopping; k++) {
		starts[k] = now_ns();
		__atomic_store_n(&sh->epoch, k, __ATOMIC_RELEASE);
		if (k <= nsamples)
			sleep_until(starts[k] + sample);
	}
	__atomic_store_n(&sh->epoch, nsamples + 1, __ATOMIC_RELEASE);
	// A stop signal interrupts a wait: each is waited for to its end, so
	// that no worker dies by our exit in the middle of an iteration.
	for (int p = 0; p < nprocs; p++)
		while (waitpid(pids[p], NULL, 0) < 0 && errno == EINTR)
			;
	for (int i = 0; i < npopulation; i++)
		kill(population[i], SIGKILL);
	for (int i = 0; i < npopulation; i++)
		while (waitpid(population[i], NULL, 0) < 0 && errno == EINTR)
			;
	if (semid >= 0 && semctl(semid, 0, IPC_RMID) == 0)
		semid = -1;
	if (stopping)
		return 3;

	for (int w = 0; w < nworkers; w++)
		if (sh->slots[w].err != 0) {
			errno = sh->slots[w].err;
			fprintf(stderr, "hostbench: %s: worker %d: %s\n", job_names[job], w, strerror(errno));
			return 1;
		}
	for (int k = 1; k <= nsamples; k++) {
		printf("sample %d %lld", k, (long long)(starts[k + 1] - starts[k]));
		for (int w = 0; w < nworkers; w++)
			printf(" %llu", (unsigned long long)(sh->slots[w].marks[k + 1] - sh->slots[w].marks[k]));
		printf("\n");
		if (lat == NULL)
			continue;
		printf("lat %d", k);
		for (int w = 0; w < nworkers; w++)
			for (uint64_t i = sh->slots[w].latmarks[k]; i < sh->slots[w].latmarks[k + 1]; i++)
				printf(" %u", lat[(size_t)w * LATCAP + i]);
		printf("\n");
	}
	return fflush(stdout) == 0 ? 0 : 1;
}

// exec_child is fork-exec's child after its exec: it forks and execs a
// grandchild, which exits at once, and reaps it.
static int exec_child(void) {
	if (readlink("/proc/self/exe", self, sizeof self - 1) < 0)
		return 1;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		execl(self, self, "exec-grandchild", (char *)NULL);
		_exit(127);
	}
	return reap_only(pid) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
	if (argc >= 2 && strcmp(argv[1], "exec-child") == 0)
		return exec_child();
	if (argc >= 2 && strcmp(argv[1], "exec-grandchild") == 0)
		return 0;
	if (argc >= 2 && strcmp(argv[1], "run") == 0)
		return run(argc, argv);
	fprintf(stderr, "usage: hostbench run WORKLOAD WORKERS WARMUP_NS SAMPLE_NS SAMPLES POPULATION MIX\n");
	return 2;
}
