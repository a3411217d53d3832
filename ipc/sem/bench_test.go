package sem

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"tasklist/lockstat"
	"tasklist/plan"
)

// eachDesign runs bench once per locking design and worker count, as
// sub-benchmarks named design/workers=N.
func eachDesign(b *testing.B, bench func(b *testing.B, lk plan.SemLocking, workers int)) {
	for _, m := range lockings {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d", m.name, workers), func(b *testing.B) { bench(b, m.lk, workers) })
		}
	}
}

// runWorkers runs work(w, n) on each of workers goroutines, splitting total
// iterations between them, with the timer running only while they do.
func runWorkers(b *testing.B, workers, total int, work func(w, n int)) {
	var ready, wg sync.WaitGroup
	start := make(chan struct{})
	ready.Add(workers)
	for w := range workers {
		n := total / workers
		if w < total%workers {
			n++
		}
		wg.Go(func() {
			ready.Done()
			<-start
			work(w, n)
		})
	}
	ready.Wait()
	b.ResetTimer()
	close(start)
	wg.Wait()
	b.StopTimer()
}

// BenchmarkSemopMulti is Rik van Riel's semop-multi (seed 003, docs/seeds.md): workers
// share one set of as many semaphores, all starting at 200; worker w's
// i-th loop does semop {k,+1} then semop {k,-1} with k = (w+i) mod N. One
// b.N iteration is one semop call (two per loop).
func BenchmarkSemopMulti(b *testing.B) {
	defer lockstat.SetChecking(lockstat.SetChecking(false))
	eachDesign(b, func(b *testing.B, lk plan.SemLocking, workers int) {
		ns := newNS(lk)
		c := rootCaller()
		id, err := ns.Semget(c, unix.IPC_PRIVATE, workers, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		vals := make([]uint16, workers)
		for i := range vals {
			vals[i] = 200
		}
		if _, err := ns.Semctl(c, id, 0, SETALL, Semun{Array: vals}); err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		runWorkers(b, workers, (b.N+1)/2, func(w, n int) {
			c := rootCaller()
			// On the worker's stack: heap slices of two workers could
			// share a cache line and bounce it on every write.
			var up, down [1]Sembuf
			for i := range n {
				k := uint16((w + i) % workers)
				up[0] = Sembuf{Num: k, Op: 1}
				down[0] = Sembuf{Num: k, Op: -1}
				if err := ns.Semop(ctx, c, id, up[:]); err != nil {
					b.Error(err)
					return
				}
				if err := ns.Semop(ctx, c, id, down[:]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkSemShm is AIM7's shared_memory job as workloads.md describes it:
// each worker creates its own one-semaphore set, sets it to 1, does 100
// rounds of the single-op semops -1, +1, -1, +1, and removes the set. One
// b.N iteration is one job (402 semop/semctl calls plus semget).
func BenchmarkSemShm(b *testing.B) {
	defer lockstat.SetChecking(lockstat.SetChecking(false))
	eachDesign(b, func(b *testing.B, lk plan.SemLocking, workers int) {
		ns := newNS(lk)
		ctx := context.Background()
		runWorkers(b, workers, b.N, func(w, n int) {
			c := rootCaller()
			round := [4][]Sembuf{{{Op: -1}}, {{Op: 1}}, {{Op: -1}}, {{Op: 1}}}
			for range n {
				id, err := ns.Semget(c, unix.IPC_PRIVATE, 1, 0o600)
				if err == nil {
					_, err = ns.Semctl(c, id, 0, SETVAL, Semun{Val: 1})
				}
				for i := 0; i < 100 && err == nil; i++ {
					for _, ops := range round {
						if err = ns.Semop(ctx, c, id, ops); err != nil {
							break
						}
					}
				}
				if err == nil {
					_, err = ns.Semctl(c, id, 0, unix.IPC_RMID, Semun{})
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
