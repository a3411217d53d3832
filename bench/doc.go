// Package bench is tasklist's benchmark laboratory: it runs the workloads
// of package workload on lock plans (package plan), on two controls and on
// the host's own kernel, and turns the measurements into statistics, an
// mmtests-style table, machine-readable results and a report with charts.
// `tasklist bench` is its command line.
//
// # What a point runs on
//
// A plan name is a preset of package plan with its toggles
// ("linux-2.6.35,prio-without-tasklist"): the workers share one kernel
// running that plan. Private gives each worker a kernel of its own,
// nothing shared: the limit on this machine. PrivateCursor gives each a
// kernel of its own that still draws pids from one shared cursor
// (kernel.Config.PIDSpace): the limit of any table that keeps Linux's
// global pid order. Host runs the same workload on the machine's kernel
// with real processes, threads and semaphores (package bench/host); its
// rows stand on their own and are never part of a comparison. A workload
// the host cannot run (workload.Workload.NotOnHost: a trace's replay) is
// refused on it.
//
// # The harness
//
// Following will-it-scale, libMicro and mmtests: each run sets its table
// up afresh and collects garbage, the workers start together behind a
// barrier, warm up, then count their iterations over fixed-length samples,
// each in a record of its own away from the others' cache lines; they
// notice the end of a sample from an epoch they read once per iteration,
// so the hot loop shares nothing that is written. A rate is the
// iterations over the samples' time; a latency (pthread-create) is the
// median of the timed calls after removing those more than three standard
// deviations out. Heap allocations per iteration come from runtime/metrics,
// read without stopping the world. Each point is repeated (five times by
// default) and the repetitions are interleaved: the first of every plan,
// then the second, so that a disturbance of the machine falls on all plans
// alike; within a repetition the model plans run in a freshly shuffled
// order and the host last, so that no plan always follows the same one.
// How much other work ran beside each repetition is measured from
// /proc/stat and reported; Config.MaxLoad reruns the noisiest. Lock statistics are gathered in one more run per point, after the
// timed ones, so that those pay nothing for them.
//
// # Statistics
//
// Per point, the harmonic mean of the repetitions for a rate (the
// arithmetic mean for a latency) with its 95% confidence interval
// (Student's t on the reciprocals) and the extremes. Each model plan is
// compared with the first plan of its workload: the change in percent,
// positive when better, and golang.org/x/perf/benchmath's Mann-Whitney U
// test, significant below p = 0.05. From the lock profile, the serial
// fraction, where the workers wait, and what they share: the class of
// reader-writer locks whose line their acquisitions, reads included,
// passed between CPUs most. The projection follows the measured speedups
// wherever scaling was measured: the Universal Scalability Law fitted to
// them with four or more worker counts (Gunther's linearisation, least
// squares through the origin), its contention term σ alone with two or
// three (with one and two workers, from the 1 → 2 ratio); Amdahl's law
// from the serial fraction only where one worker count was measured.
// Amdahl's bound is printed beside it, marked as contradicted wherever
// it exceeds a measured speedup. The speedups are projected at 8, 64 and
// 128 cores, labelled as a projection.
//
// # Seeds
//
// Claims lists each seed thread's own measurement of its change; a sweep
// of SeedGroups runs each change's toggle off and on under linux-2.6.35
// on its workload, and Results.SeedResults sets our change beside the
// claim.
package bench
