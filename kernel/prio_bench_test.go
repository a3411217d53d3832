package kernel

import (
	"flag"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"tasklist/lockstat"
)

var prioHuge = flag.Bool("prio.huge", false, "also run BenchmarkGetpriorityUser with 10^6 tasks of other users")

// BenchmarkGetpriorityUser measures getpriority(PRIO_USER) for a user with
// 10 tasks while other users own 10^3 to 10^5 tasks (10^6 with
// -prio.huge). A user's threads sit on its own list, so the cost stays flat
// as the other users' tasks grow; Linux's walk over every thread does not.
func BenchmarkGetpriorityUser(b *testing.B) {
	sizes := []int{1_000, 10_000, 100_000}
	if *prioHuge {
		sizes = append(sizes, 1_000_000)
	}
	for _, others := range sizes {
		b.Run(fmt.Sprintf("others=%d", others), func(b *testing.B) {
			defer lockstat.SetChecking(lockstat.SetChecking(false))
			k, err := New(Config{PIDMax: 4 * 1024 * 1024})
			if err != nil {
				b.Fatal(err)
			}
			init := k.Init()
			spawn := func(uid, n int) *Task {
				p, err := init.Fork()
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Setuid(uid); err != nil {
					b.Fatal(err)
				}
				for range n - 1 {
					if _, err := p.Fork(); err != nil {
						b.Fatal(err)
					}
				}
				return p
			}
			spawn(2000, others)
			me := spawn(1000, 10)
			b.ResetTimer()
			for b.Loop() {
				if _, err := me.Getpriority(unix.PRIO_USER, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
