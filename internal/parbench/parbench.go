// Package parbench runs a benchmark's operations on a given number of
// goroutines, so that a structure's benchmark can compare one goroutine
// with two side by side.
package parbench

import (
	"sync"
	"testing"
)

// Counts are the goroutine counts the structures' benchmarks run at.
var Counts = []int{1, 2}

// Split runs op(g, i) for every i in [0, b.N), split evenly over
// goroutines g in [0, n) that start together, and times only that: ns/op
// is then wall time per operation of the whole machine, half at two
// goroutines when they share nothing.
func Split(b *testing.B, n int, op func(g, i int)) {
	b.Helper()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() {
			<-start
			for i := g; i < b.N; i += n {
				op(g, i)
			}
		})
	}
	b.ResetTimer()
	close(start)
	wg.Wait()
	b.StopTimer()
}
