// Package workload holds the benchmark jobs of docs/workloads.md as
// Go code over the kernel API: the workloads behind the seed threads'
// measurements, and a few that complete them.
//
// A Workload is set up on an Env, which gives each of N workers its
// kernel: the same kernel for every worker when the workers share one
// table (under any lock plan), a kernel each for the private control.
// Setup creates the worker processes and whatever else the job needs (a
// semaphore set, get's population of other tasks) and returns each
// worker's Op: one iteration of the job, which the harness (package bench)
// calls in a loop from one goroutine per worker.
//
// The workloads, by name:
//
//   - threadspawn, threadspawn-users, threadspawn-threads: will-it-scale
//     threadspawn1, a thread spawned and joined per iteration, by worker
//     processes of one user, of a user each, or by the threads of one
//     process (seed 004, docs/seeds.md; Linux 6.15's free_pid change).
//   - pthread-create: libMicro's pthread_create -B 8, a latency in µs per
//     call (seed 001).
//   - fork-exit and fork-exec: AIM7's fork_test and exec_test (seed 000).
//   - get: stress-ng get in a table that also holds a population of other
//     tasks (seed 002); setprio: setpriority, which seed 002's second
//     patch changed and no benchmark measured.
//   - semop-multi: each worker +1 and -1 on its own semaphore of one set
//     (seed 003); semop-shared: all of them on one semaphore; sem-shm:
//     AIM7's shared_memory job on a set of the worker's own.
//   - mix: a weighted mix of the others, from a workfile (default.mix,
//     ParseMix).
//   - replay:FILE: the replay of a trace `tasklist trace` recorded (Replay,
//     package replay), each worker replaying its own copy, each traced task
//     a goroutine, as fast as the trace's causal order allows; its figure is
//     the trace's calls made on the model per second. Named makes it from
//     its name; All does not list it.
//
// Every workload but a replay also has a version for the host's own kernel
// in the host program of package bench; a Workload's HostNote says where
// the two differ, NotOnHost why the host cannot run one. The workloads are also `go test -bench` benchmarks in this
// package, each next to its private control:
//
//	go test -run '^$' -bench . ./workload/
package workload
