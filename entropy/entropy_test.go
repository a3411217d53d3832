package entropy

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"

	"tasklist/lockstat"
)

// Every sample from concurrent adders is counted, and the pool's output
// depends on what was added.
func TestAddCountsEverySample(t *testing.T) {
	p := New(8)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 500 {
				p.Add(uint64(w*1000+i), uint64(i*i))
			}
		})
	}
	wg.Wait()
	if got := p.Samples(); got != 16*500 {
		t.Fatalf("Samples() = %d, want %d", got, 16*500)
	}
}

// Two pools fed the same samples read the same bytes; a different sample
// changes them; two reads of one pool differ.
func TestReadDependsOnSamples(t *testing.T) {
	feed := func(last uint64) *Pool {
		p := New(4)
		for i := range uint64(100) {
			p.Add(i, i*7)
		}
		p.Add(1000, last)
		return p
	}
	read := func(p *Pool) []byte {
		b := make([]byte, 48) // more than one digest
		if n, err := p.Read(b); n != len(b) || err != nil {
			t.Fatalf("Read = %d, %v", n, err)
		}
		return b
	}
	a, b, c := feed(1), feed(1), feed(2)
	ra, rb, rc := read(a), read(b), read(c)
	if !bytes.Equal(ra, rb) {
		t.Fatal("same samples, different output")
	}
	if bytes.Equal(ra, rc) {
		t.Fatal("a different sample did not change the output")
	}
	if bytes.Equal(ra[:32], ra[32:48]) || bytes.Equal(ra, read(a)) {
		t.Fatal("reads repeat themselves")
	}
}

func TestShardCountIsAPowerOfTwo(t *testing.T) {
	for n, want := range map[int]int{1: 1, 3: 4, 8: 8, 9: 16} {
		if got := len(New(n).shards); got != want {
			t.Errorf("New(%d) has %d shards, want %d", n, got, want)
		}
	}
	if len(New(0).shards) == 0 {
		t.Error("New(0) has no shards")
	}
}

// BenchmarkAdd compares one shard, which every adder shares as Linux's
// input pool lock is shared, with a sharded pool.
func BenchmarkAdd(b *testing.B) {
	prev := lockstat.SetChecking(false)
	defer lockstat.SetChecking(prev)
	for _, shards := range []int{1, 0} {
		name := "single"
		if shards == 0 {
			name = "sharded"
		}
		b.Run(name, func(b *testing.B) {
			p := New(shards)
			var next atomic.Uint64
			b.RunParallel(func(pb *testing.PB) {
				// Each adder is a different worker: its tasks' serials
				// differ from the others'.
				hint := next.Add(1) << 32
				for pb.Next() {
					hint += 7919
					p.Add(hint, hint)
				}
			})
		})
	}
}
