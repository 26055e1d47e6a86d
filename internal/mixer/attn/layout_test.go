package attn

import "testing"

// TestDenseExact checks that Dense visits each allowed pair once, for tiles
// that divide T, do not, and exceed it.
func TestDenseExact(t *testing.T) {
	for _, causal := range []bool{true, false} {
		for _, T := range []int{1, 5, 64, 130} {
			for _, tl := range []Tiles{{Q: 1, K: 1}, {Q: 3, K: 5}, {Q: 128, K: 64}} {
				seen := make([]int, T*T)
				l := Dense(T, tl, causal)
				l.Each(func(i, j int) { seen[i*T+j]++ })
				for i := 0; i < T; i++ {
					for j := 0; j < T; j++ {
						want := 1
						if causal && j > i {
							want = 0
						}
						if seen[i*T+j] != want {
							t.Fatalf("causal=%v T=%d tiles=%v: (%d,%d) visited %d times", causal, T, tl, i, j, seen[i*T+j])
						}
					}
				}
				if l.MaxNQ > tl.Q || l.MaxNK > tl.K || !l.Contig || l.Stride != 0 {
					t.Fatalf("causal=%v T=%d tiles=%v: bad bounds or flags %+v", causal, T, tl, l)
				}
			}
		}
	}
}

// TestBuilder checks masks, dropped blocks and the splitting of diagonal
// blocks into allowed runs.
func TestBuilder(t *testing.T) {
	b := NewBuilder(10)
	b.Phase()
	b.Group()
	b.Add(Block{Q0: 0, QS: 2, NQ: 3, K0: 1, KS: 3, NK: 3}, func(i, j int) bool { return j < i }) // partial
	b.Add(Block{Q0: 0, QS: 1, NQ: 2, K0: 8, KS: 1, NK: 2}, func(i, j int) bool { return false }) // dropped
	b.Add(Block{Q0: 0, QS: 1, NQ: 10, K0: 0, KS: 1, NK: 10, Diag: true}, func(i, j int) bool { return i%4 != 1 })
	l := b.Layout()
	var got [][2]int
	l.Each(func(i, j int) { got = append(got, [2]int{i, j}) })
	want := [][2]int{{2, 1}, {4, 1}, {0, 0}, {2, 2}, {3, 3}, {4, 4}, {6, 6}, {7, 7}, {8, 8}}
	// Pairs from the partial block: queries 0,2,4 × keys 1,4,7 with j < i.
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if n := len(l.Phases[0].Groups[0].Blocks); n != 4 {
		t.Fatalf("%d blocks, want 1 partial + 3 diagonal runs", n)
	}
	if l.Stride != 3 || l.Contig { // the only KS = 1 blocks are dropped or diagonal
		t.Fatalf("flags: stride %d contig %v", l.Stride, l.Contig)
	}
}

// TestTShape checks that the permuted column order is a bijection on
// positions and keeps each residue class contiguous.
func TestTShape(t *testing.T) {
	for _, T := range []int{1, 7, 64, 65} {
		for _, s := range []int{0, 2, 3, 8, 100} {
			sh := newTShape(T, s)
			seen := map[int]bool{}
			for j := 0; j < T; j++ {
				c := sh.col(j)
				if c < 0 || c >= sh.ld-16 || seen[c] || sh.pos(c) != j {
					t.Fatalf("T=%d s=%d: position %d → column %d (pos %d)", T, s, j, c, sh.pos(c))
				}
				seen[c] = true
				if s > 1 && j+s < T && sh.col(j+s) != c+1 {
					t.Fatalf("T=%d s=%d: class of %d not contiguous", T, s, j)
				}
			}
		}
	}
}

// TestTrimRows: a masked block loses its leading rows with no allowed key
// (in pairs, keeping Q0's parity) and its trailing ones, and keeps every
// allowed pair; Dense's causal tiles then start no earlier than their keys.
func TestTrimRows(t *testing.T) {
	b := NewBuilder(20)
	b.Phase()
	b.Group()
	// Rows 0..9 (stride 2: positions 0..18) against keys 5..9: rows at
	// positions 0, 2, 4 allow nothing; position 18 allows nothing either
	// (the allow rule stops at i < 18).
	allow := func(i, j int) bool { return j <= i && i < 18 }
	b.Add(Block{Q0: 0, QS: 2, NQ: 10, K0: 5, KS: 1, NK: 5}, allow)
	l := b.Layout()
	blk := l.Phases[0].Groups[0].Blocks[0]
	// Three empty leading rows trim to two (parity), one empty trailing row.
	if blk.Q0 != 4 || blk.NQ != 7 {
		t.Fatalf("trimmed block Q0=%d NQ=%d, want 4 and 7", blk.Q0, blk.NQ)
	}
	n := 0
	l.Each(func(i, j int) {
		if !allow(i, j) {
			t.Fatalf("pair (%d,%d) not allowed", i, j)
		}
		n++
	})
	want := 0
	for i := 0; i < 20; i += 2 {
		for j := 5; j < 10; j++ {
			if allow(i, j) {
				want++
			}
		}
	}
	if n != want || l.Cost != 7*5 {
		t.Fatalf("%d pairs (want %d), cost %d (want 35)", n, want, l.Cost)
	}
	for _, T := range []int{130, 784, 1024} {
		l := Dense(T, Tiles{Q: 128, K: 64}, true)
		for _, g := range l.Phases[0].Groups {
			for _, blk := range g.Blocks {
				if blk.Q0 < blk.K0 || blk.Q0%2 != 0 {
					t.Fatalf("T=%d: block %+v starts before its keys or at an odd row", T, blk)
				}
			}
		}
	}
}
