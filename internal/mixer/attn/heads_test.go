package attn

import (
	"fmt"
	"math"
	"testing"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/mixer"
)

// TestCopiesBitwise: reading the tile products' operands from the
// head-major copies and the panel-form transposed copies (in place where
// they are already packed panels) gives bitwise the outputs and gradients
// of packing them from [B,T,D] and the row-major copies for every tile:
// the same values meet the same kernels in the same order. Heads of 16, 48,
// 64 and 128 channels (in place on AVX-512 up to 64; 128 spans two
// panels), several key tiles with a partial last one, padding, on every
// kernel path and with the tiles of full attention and of the sparse kinds
// (64×64), a 4×4 tiling whose blocks are not panel-aligned, and 128×128.
func TestCopiesBitwise(t *testing.T) {
	for _, path := range kernels.Paths() {
		old := kernels.SetPath(path)
		for _, c := range []struct {
			D, H, T int
			causal  bool
			pad     bool
			tiles   Tiles
		}{
			{64, 4, 265, true, true, Tiles{128, 64}},
			{128, 2, 200, true, false, Tiles{128, 64}},
			{96, 2, 193, false, true, Tiles{64, 64}},
			{128, 1, 130, true, true, Tiles{128, 64}},
			{64, 1, 70, false, false, Tiles{128, 128}},
			{32, 2, 23, true, true, Tiles{4, 4}},
		} {
			t.Run(fmt.Sprintf("%s/%+v", path, c), func(t *testing.T) {
				cfg := mixer.Config{D: c.D, Heads: c.H, MaxLen: c.T, Causal: c.causal}
				var out, dx [2][]float32
				var g [2][][]float32
				for i, plain := range []bool{false, true} {
					out[i], dx[i], g[i], _ = passOnce(t, cfg, 2, c.T, c.pad, func(a *Attention[float32]) {
						a.plain, a.Tiles = plain, c.tiles
					})
				}
				sameBits(t, out, dx, g)
			})
		}
		kernels.SetPath(old)
	}
}

// bandPat is a causal pattern with panel-aligned blocks beside strided
// ones: query block i0 (64 queries) sees its own 64 keys up to the
// diagonal and every stride-th earlier key, in blocks of at most 64 keys.
type bandPat struct{ stride int }

func (p bandPat) Allow(h, T, i, j int) bool {
	return j <= i && (j/64 == i/64 || j < i/64*64 && j%p.stride == 0)
}

func (p bandPat) Layout(h, T int, t Tiles) *Layout {
	b := NewBuilder(T)
	b.Phase()
	for i0 := 0; i0 < T; i0 += 64 {
		nq := min(64, T-i0)
		b.Group()
		b.Add(Block{Q0: i0, QS: 1, NQ: nq, K0: i0, KS: 1, NK: nq}, func(i, j int) bool { return j <= i })
		n := (i0 + p.stride - 1) / p.stride // keys 0, stride, … below i0
		for c0 := 0; c0 < n; c0 += 64 {
			b.Add(Block{Q0: i0, QS: 1, NQ: nq, K0: c0 * p.stride, KS: p.stride, NK: min(64, n-c0)}, nil)
		}
	}
	return b.Layout()
}

// TestCopiesStrided is TestCopiesBitwise on a layout whose
// contiguous blocks use the panel copies while its strided blocks read the
// residue-class copies. With heads of 64 channels the results are bitwise
// those of the packing path. With heads of 16, the contiguous blocks' key
// and value gradients are summed in the transposed buffers and added to
// dk and dv after the strided blocks' terms, a different order of the same
// sums: they agree to float32 rounding.
func TestCopiesStrided(t *testing.T) {
	for _, path := range kernels.Paths() {
		old := kernels.SetPath(path)
		for _, c := range []struct{ D, H, T int }{{64, 4, 300}, {128, 2, 1100}} {
			t.Run(fmt.Sprintf("%s/%+v", path, c), func(t *testing.T) {
				cfg := mixer.Config{D: c.D, Heads: c.H, MaxLen: c.T, Causal: true}
				pat := bandPat{stride: 8}
				if l := pat.Layout(0, c.T, DefaultTiles); !l.Panels || l.Stride != 8 {
					t.Fatalf("layout: panels %v, stride %d", l.Panels, l.Stride)
				}
				var out, dx [2][]float32
				var g [2][][]float32
				for i, plain := range []bool{false, true} {
					out[i], dx[i], g[i], _ = passOn(t, cfg, pat, 2, c.T, true, func(a *Attention[float32]) {
						a.plain, a.Stride = plain, 8
					})
				}
				if c.D/c.H > MaxNarrowHead {
					sameBits(t, out, dx, g)
					return
				}
				near(t, "output", out[0], out[1])
				near(t, "input gradient", dx[0], dx[1])
				for j := range g[0] {
					near(t, fmt.Sprint("gradient ", j), g[0][j], g[1][j])
				}
			})
		}
		kernels.SetPath(old)
	}
}

// near fails unless max|a−b| ≤ 1e-5·max(1, max|b|).
func near(t *testing.T, name string, a, b []float32) {
	t.Helper()
	var d, m float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-b[i])))
		m = max(m, math.Abs(float64(b[i])))
	}
	if d > 1e-5*max(1, m) {
		t.Errorf("%s: max difference %.3g (max |value| %.3g)", name, d, m)
	}
}
