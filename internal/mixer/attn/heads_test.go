package attn

import (
	"fmt"
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
