package attn

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tokenmix/tokenmix/mixer"
)

// densePat is full attention's pattern (causal or not).
type densePat struct{ causal bool }

func (p densePat) Allow(h, T, i, j int) bool        { return !p.causal || j <= i }
func (p densePat) Layout(h, T int, t Tiles) *Layout { return Dense(T, t, p.causal) }

// TestBF16Packed: in precision bf16, the tile products on operands packed
// once per pass (headPacks) give bitwise the outputs and gradients of
// packing every tile's operands (kernels.Gemm with PrecBF16): both round the same
// values to bf16 and multiply them in the same order. The lengths span
// several key tiles, with a partial last one; d_head 128 spans two
// panels of packed B.
func TestBF16Packed(t *testing.T) {
	for _, c := range []struct {
		D, H, T int
		causal  bool
		pad     bool
	}{{64, 2, 200, true, false}, {64, 2, 150, false, true}, {128, 1, 130, true, true}, {64, 4, 64, false, false}} {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			B := 2
			cfg := mixer.Config{D: c.D, Heads: c.H, MaxLen: c.T, Causal: c.causal, Precision: "bf16"}
			var outs [2][]float32
			var grads [2][][]float32
			var dxs [2][]float32
			for i, unpacked := range []bool{false, true} {
				a, err := New[float32](cfg, densePat{c.causal})
				if err != nil {
					t.Fatal(err)
				}
				a.unpacked = unpacked
				rng := rand.New(rand.NewPCG(1, 2))
				var w, g [][]float32
				for _, s := range a.Params() {
					x := make([]float32, s.Size())
					for j := range x {
						x[j] = float32(rng.NormFloat64() * 0.2)
					}
					w, g = append(w, x), append(g, make([]float32, s.Size()))
				}
				a.Bind(w, g)
				x := make([]float32, B*c.T*c.D)
				dout := make([]float32, len(x))
				for j := range x {
					x[j], dout[j] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
				}
				p := mixer.Pass{B: B, T: c.T}
				if c.pad {
					p.Pad = make([]bool, B*c.T)
					for j := c.T - 7; j < c.T; j++ {
						p.Pad[c.T+j] = true
					}
				}
				act := make([]float32, a.ActSize(B, c.T))
				scr := make([]float32, a.ScratchSize(B, c.T, 0))
				outs[i] = make([]float32, len(x))
				a.Forward(outs[i], act, scr, x, p)
				dxs[i] = make([]float32, len(x))
				a.Backward(dxs[i], scr, dout, act, x, p)
				grads[i] = g
				if hp := a.bf16Packs(); (hp == nil) != unpacked {
					t.Fatalf("unpacked=%v: bf16Packs %v", unpacked, hp)
				} else if hp != nil {
					if n := len(hp.qT); n < B*c.H {
						t.Fatalf("%d units packed", n)
					}
					packPool.put(hp)
				}
			}
			if !slices.Equal(outs[0], outs[1]) {
				t.Error("outputs differ")
			}
			if !slices.Equal(dxs[0], dxs[1]) {
				t.Error("input gradients differ")
			}
			for j := range grads[0] {
				if !slices.Equal(grads[0][j], grads[1][j]) {
					t.Errorf("gradient %d differs", j)
				}
			}
		})
	}
}
