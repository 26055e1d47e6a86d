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
