package kernel

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

type seqNode struct {
	id   int
	link seqLink[seqNode]
}

func seqNodeLink(n *seqNode) *seqLink[seqNode] { return &n.link }

func seqIDs(l *seqList[seqNode]) []int {
	var ids []int
	l.each(seqNodeLink, func(n *seqNode) bool {
		ids = append(ids, n.id)
		return true
	})
	return ids
}

// TestSeqListOps: the list's changes keep Linux's orders (pushFront for a
// process group's members, pushBack for a user's) and an even count
// outside changes, a move included.
func TestSeqListOps(t *testing.T) {
	nodes := make([]*seqNode, 5)
	for i := range nodes {
		nodes[i] = &seqNode{id: i}
	}
	var a, b seqList[seqNode]
	for _, c := range []struct {
		name       string
		change     func()
		wantA      []int
		wantB      []int
		changesOfA uint32
	}{
		{"pushBack", func() { a.pushBack(nodes[0], seqNodeLink); a.pushBack(nodes[1], seqNodeLink) }, []int{0, 1}, nil, 2},
		{"pushFront", func() { a.pushFront(nodes[2], seqNodeLink) }, []int{2, 0, 1}, nil, 1},
		{"remove middle", func() { a.remove(nodes[0], seqNodeLink) }, []int{2, 1}, nil, 1},
		{"remove tail", func() { a.remove(nodes[1], seqNodeLink) }, []int{2}, nil, 1},
		{"move to back", func() { b.pushBack(nodes[3], seqNodeLink); seqMove(nodes[2], &a, &b, seqNodeLink, false) }, nil, []int{3, 2}, 1},
		{"move to front", func() { seqMove(nodes[2], &b, &a, seqNodeLink, true) }, []int{2}, []int{3}, 1},
	} {
		before := a.seq.Load()
		c.change()
		if got := seqIDs(&a); !slices.Equal(got, c.wantA) {
			t.Errorf("%s: list a holds %v, want %v", c.name, got, c.wantA)
		}
		if got := seqIDs(&b); !slices.Equal(got, c.wantB) {
			t.Errorf("%s: list b holds %v, want %v", c.name, got, c.wantB)
		}
		// Each change moves the count by two: a move, though two steps
		// on each list, is one change of each.
		if got := a.seq.Load() - before; got != 2*c.changesOfA {
			t.Errorf("%s: count of a moved by %d, want %d", c.name, got, 2*c.changesOfA)
		}
	}
}

// TestSeqListLocklessSnapshot: writers move nodes between two lists under
// one lock, as setuid moves a thread between users' shards and setpgid a
// process between groups; readers walk both lists without it, as a
// PRIO_USER walk does its user's shards. Every walk that readEach and
// unchangedSince accept must see each node exactly once: a walk that saw a
// node in neither list or in both (a move half done, or a node followed
// into the list it was moved to) is a snapshot of no moment. Run it with
// -race: the readers' accesses are all atomic.
func TestSeqListLocklessSnapshot(t *testing.T) {
	const nodes, readers, moves = 16, 3, 20000
	var mu sync.Mutex
	var lists [2]seqList[seqNode]
	where := make([]int, nodes)
	all := make([]*seqNode, nodes)
	for i := range all {
		all[i] = &seqNode{id: i}
		lists[i%2].pushBack(all[i], seqNodeLink)
		where[i] = i % 2
	}
	var done atomic.Bool
	var accepted, rejected, torn atomic.Int64
	var wg sync.WaitGroup
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := make([]int, nodes)
			for walk := 0; !done.Load(); walk++ {
				if walk%16 == 0 {
					runtime.Gosched()
				}
				clear(seen)
				s0, ok0 := lists[0].readBegin()
				s1, ok1 := lists[1].readBegin()
				count := func(n *seqNode) { seen[n.id]++ }
				if !ok0 || !ok1 || !lists[0].readEach(s0, seqNodeLink, count) ||
					!lists[1].readEach(s1, seqNodeLink, count) || !lists[0].unchangedSince(s0) {
					rejected.Add(1)
					continue
				}
				accepted.Add(1)
				for _, n := range seen {
					if n != 1 {
						torn.Add(1)
						break
					}
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// Moves go on until the readers have had their share of walks.
	for m := 0; m < moves || accepted.Load()+rejected.Load() < moves; m++ {
		if m%64 == 0 {
			runtime.Gosched()
		}
		i := rng.IntN(nodes)
		mu.Lock()
		from := where[i]
		seqMove(all[i], &lists[from], &lists[1-from], seqNodeLink, rng.IntN(2) == 0)
		where[i] = 1 - from
		mu.Unlock()
	}
	done.Store(true)
	wg.Wait()
	if n := len(seqIDs(&lists[0])) + len(seqIDs(&lists[1])); n != nodes {
		t.Fatalf("lists hold %d nodes, want %d", n, nodes)
	}
	if n := torn.Load(); n != 0 {
		t.Errorf("%d of %d accepted walks saw a node in neither list or in both", n, accepted.Load())
	}
	t.Logf("%d walks accepted, %d rejected", accepted.Load(), rejected.Load())
}
