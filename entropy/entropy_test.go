package entropy

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"tasklist/internal/parbench"
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

// TestHintPicksShard: a hint selects its shard modulo the shard count,
// so that adders with different hints below it never share one.
func TestHintPicksShard(t *testing.T) {
	p := New(8)
	for hint := range uint64(8) {
		for range hint + 1 {
			p.Add(hint, hint)
		}
	}
	p.Add(8+3, 0) // shard 3 again
	for i := range p.shards {
		want := uint64(i + 1)
		if i == 3 {
			want++
		}
		sh := &p.shards[i]
		sh.mu.Lock()
		got := sh.samples
		sh.mu.Unlock()
		if got != want {
			t.Errorf("shard %d holds %d samples, want %d", i, got, want)
		}
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

// BenchmarkAdd is what the release of a task writes in the pool, at one
// and two goroutines, each an adder standing for a worker that releases
// its own tasks: with one shard, which every adder shares as Linux's input
// pool lock is shared; with a hint per task (a hash of its serial), which
// spreads samples over the shards whoever adds them; and with a hint per
// adder, the creating process's shard, which keeps each adder on its own.
func BenchmarkAdd(b *testing.B) {
	prev := lockstat.SetChecking(false)
	defer lockstat.SetChecking(prev)
	for _, v := range []struct {
		name   string
		shards int
		hint   func(g, i int) uint64
	}{
		{"single", 1, func(g, i int) uint64 { return uint64(i) }},
		{"by-task", 8, func(g, i int) uint64 { return uint64(i) * 0x9e3779b97f4a7c15 >> 61 }},
		{"by-creator", 8, func(g, i int) uint64 { return uint64(g) }},
	} {
		for _, n := range parbench.Counts {
			b.Run(fmt.Sprintf("%s/goroutines=%d", v.name, n), func(b *testing.B) {
				p := New(v.shards)
				parbench.Split(b, n, func(g, i int) { p.Add(v.hint(g, i), uint64(i)) })
			})
		}
	}
}
