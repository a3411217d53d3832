// Package entropy is the exit-time entropy feed: Linux's release_task mixes
// each dead task's runtime into the input pool (add_device_randomness).
//
// Seed 004 (docs/seeds.md) moved that call out of tasklist_lock because parallel callers
// contend on the pool's own lock. Pool goes one step further: it has no
// single hot lock. Samples go to one of several shards, each on its own
// cache line with its own lock, picked by a hint the caller chooses: the
// shard of the process that created the exiting task, so that workers
// releasing their own tasks side by side each write a shard of their own.
// Reading hashes every shard's state with SHA-256.
//
// The mixing on the add side is a cheap non-cryptographic accumulator;
// what comes out of Read is a SHA-256 digest of all accumulators and a read
// counter, and every read stirs its output back into the shards, so two
// reads never return the same bytes.
package entropy

import (
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
	"runtime"
	"unsafe"

	"tasklist/lockstat"
)

var shardClass = lockstat.NewClass("entropy.shard.mu")

// cacheLine is the size shards are padded to, so that two shards never
// share a line.
const cacheLine = 64

// Pool is an entropy pool fed from many goroutines at once.
type Pool struct {
	shards []shard
	mask   uint64
}

type shard struct {
	shardState
	_ [cacheLine - unsafe.Sizeof(shardState{})%cacheLine]byte
}

type shardState struct {
	mu lockstat.Mutex
	// state is the shard's accumulator.
	// +checklocks:mu
	state [4]uint64
	// samples counts what was mixed in.
	// +checklocks:mu
	samples uint64
}

// New returns a pool with at least n shards (rounded up to a power of
// two); n <= 0 means four per CPU.
func New(n int) *Pool {
	if n <= 0 {
		n = 4 * runtime.GOMAXPROCS(0)
	}
	size := 1
	for size < n {
		size <<= 1
	}
	p := &Pool{shards: make([]shard, size), mask: uint64(size - 1)}
	for i := range p.shards {
		p.shards[i].mu.Init(shardClass, 0)
	}
	return p
}

// Add mixes sample into shard hint modulo the number of shards: adders
// that give different small hints never share a shard while there are as
// many shards as hints. It never blocks on anything but that shard's
// lock, which no other lock is held under.
func (p *Pool) Add(hint, sample uint64) {
	sh := &p.shards[hint&p.mask]
	// The shard's lock serialises the read-modify-write of its state.
	sh.mu.Lock()
	stir(&sh.state, sample)
	sh.samples++
	sh.mu.Unlock()
}

// Samples returns how many samples have been added.
func (p *Pool) Samples() uint64 {
	var n uint64
	for i := range p.shards {
		sh := &p.shards[i]
		// Each shard's lock makes its count consistent with its state.
		sh.mu.Lock()
		n += sh.samples
		sh.mu.Unlock()
	}
	return n
}

// Read fills b with bytes derived from everything added so far and
// returns len(b). It never fails.
func (p *Pool) Read(b []byte) (int, error) {
	var buf [8]byte
	for done := 0; done < len(b); {
		h := sha256.New()
		for i := range p.shards {
			sh := &p.shards[i]
			// The lock gives a consistent snapshot of the shard.
			sh.mu.Lock()
			for _, w := range sh.state {
				binary.LittleEndian.PutUint64(buf[:], w)
				h.Write(buf[:])
			}
			sh.mu.Unlock()
		}
		sum := h.Sum(nil)
		done += copy(b[done:], sum)
		// Stirring the digest back makes the next block, and the next
		// Read, differ from this one.
		for i := range p.shards {
			sh := &p.shards[i]
			sh.mu.Lock()
			stir(&sh.state, binary.LittleEndian.Uint64(sum[(i%4)*8:]))
			sh.mu.Unlock()
		}
	}
	return len(b), nil
}

// stir is an add-rotate-xor accumulator step: every input bit reaches
// every state word within a few steps.
func stir(s *[4]uint64, v uint64) {
	s[0] += v
	s[1] = bits.RotateLeft64(s[1]^s[0], 23) * 0x9e3779b97f4a7c15
	s[2] += s[1]
	s[3] = bits.RotateLeft64(s[3]^s[2], 41) + s[0]
	s[0] ^= bits.RotateLeft64(s[3], 17)
}
