package attn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/mixer"
)

// densePat is full attention's pattern (causal or not).
type densePat struct{ causal bool }

func (p densePat) Allow(h, T, i, j int) bool        { return !p.causal || j <= i }
func (p densePat) Layout(h, T int, t Tiles) *Layout { return Dense(T, t, p.causal) }

// passOnce builds float32 attention over densePat{causal} with cfg, lets
// setup adjust it, and runs one forward and backward on B sequences of
// length T drawn from a fixed seed (with pad, the last 7 positions of the
// second sequence are padding). It returns the output, the input gradient,
// the parameter gradients and the mixer.
func passOnce(t *testing.T, cfg mixer.Config, B, T int, pad bool, setup func(*Attention[float32])) (out, dx []float32, g [][]float32, a *Attention[float32]) {
	t.Helper()
	return passOn(t, cfg, densePat{cfg.Causal}, B, T, pad, setup)
}

// passOn is passOnce over pattern pat.
func passOn(t *testing.T, cfg mixer.Config, pat Pattern, B, T int, pad bool, setup func(*Attention[float32])) (out, dx []float32, g [][]float32, a *Attention[float32]) {
	t.Helper()
	a, err := New[float32](cfg, pat)
	if err != nil {
		t.Fatal(err)
	}
	setup(a)
	rng := rand.New(rand.NewPCG(1, 2))
	var w [][]float32
	for _, s := range a.Params() {
		x := make([]float32, s.Size())
		for j := range x {
			x[j] = float32(rng.NormFloat64() * 0.2)
		}
		w, g = append(w, x), append(g, make([]float32, s.Size()))
	}
	a.Bind(w, g)
	D := cfg.D
	x := make([]float32, B*T*D)
	dout := make([]float32, len(x))
	for j := range x {
		x[j], dout[j] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	p := mixer.Pass{B: B, T: T}
	if pad {
		p.Pad = make([]bool, B*T)
		for j := T - 7; j < T; j++ {
			p.Pad[T+j] = true
		}
	}
	act := make([]float32, a.ActSize(B, T))
	scr := make([]float32, a.ScratchSize(B, T, 0))
	out = make([]float32, len(x))
	a.Forward(out, act, scr, x, p)
	for j := range scr { // Backward reads nothing of Forward's scratch
		scr[j] = float32(math.NaN())
	}
	dx = make([]float32, len(x))
	a.Backward(dx, scr, dout, act, x, p)
	return out, dx, g, a
}

// sameBits fails unless two passOnce results are bitwise equal.
func sameBits(t *testing.T, out, dx [2][]float32, g [2][][]float32) {
	t.Helper()
	if !slices.Equal(out[0], out[1]) {
		t.Error("outputs differ")
	}
	if !slices.Equal(dx[0], dx[1]) {
		t.Error("input gradients differ")
	}
	for j := range g[0] {
		if !slices.Equal(g[0][j], g[1][j]) {
			t.Errorf("gradient %d differs", j)
		}
	}
}

// TestBF16Packed: in precision bf16, on every bf16 kernel path, the tile
// products on operands prepared once per pass give bitwise the outputs and
// gradients of packing every tile's operands (kernels.Gemm with
// PrecBF16): on operands packed once (headPacks, from the bf16 bits of
// the stored q, k and v), or, on the paths that
// widen bf16 values to float32 (kernels.BF16Widens), on operands rounded
// in place and multiplied in float32 (roundBF16). Both round the same
// values to bf16 and multiply them in the same order. The lengths span
// several key tiles, with a partial last one; d_head 128 spans two panels
// of packed B.
func TestBF16Packed(t *testing.T) {
	for _, bp := range kernels.BF16Paths() {
		old, _ := kernels.SetBF16Path(bp)
		for _, c := range []struct {
			D, H, T int
			causal  bool
			pad     bool
		}{{64, 2, 200, true, false}, {64, 2, 150, false, true}, {128, 1, 130, true, true}, {64, 4, 64, false, false}} {
			t.Run(fmt.Sprintf("%s/%+v", bp, c), func(t *testing.T) {
				B := 2
				cfg := mixer.Config{D: c.D, Heads: c.H, MaxLen: c.T, Causal: c.causal, Precision: "bf16"}
				var out, dx [2][]float32
				var g [2][][]float32
				for i, unpacked := range []bool{false, true} {
					var a *Attention[float32]
					out[i], dx[i], g[i], a = passOnce(t, cfg, B, c.T, c.pad, func(a *Attention[float32]) { a.unpacked = unpacked })
					if a.roundBF16() != (!unpacked && kernels.BF16Widens()) {
						t.Fatalf("unpacked=%v: roundBF16 %v on %s", unpacked, a.roundBF16(), bp)
					}
					if hp := a.bf16Packs(); (hp == nil) != (unpacked || kernels.BF16Widens()) {
						t.Fatalf("unpacked=%v: bf16Packs %v on %s", unpacked, hp, bp)
					} else if hp != nil {
						if n := len(hp.qT); n < B*c.H {
							t.Fatalf("%d units packed", n)
						}
						if !hp.rows || !packsEvery(a.layouts(c.T)) {
							t.Fatal("the packs were not made from the stored bf16 q, k, v, or do not serve every block")
						}
						packPool.put(hp)
					}
				}
				sameBits(t, out, dx, g)
			})
		}
		kernels.SetBF16Path(old)
	}
}

// partialPat's blocks cover a key tile partly and leave keys unseen:
// query rows 0…63 see keys 0…31, rows 64…191 keys 0…63; keys 64…191 are
// seen by no query.
type partialPat struct{}

func (partialPat) Allow(h, T, i, j int) bool { return j < 32 || j < 64 && i >= 64 }
func (partialPat) Layout(h, T int, t Tiles) *Layout {
	b := NewBuilder(T)
	b.Phase()
	b.Group()
	b.Add(Block{Q0: 0, QS: 1, NQ: 64, K0: 0, KS: 1, NK: 32}, nil)
	for q0 := 64; q0 < T; q0 += 64 {
		b.Group()
		b.Add(Block{Q0: q0, QS: 1, NQ: min(64, T-q0), K0: 0, KS: 1, NK: 64}, nil)
	}
	return b.Layout()
}

// TestBF16PackedPartialKeys: the products on operands packed once give
// the unpacked products' bits where blocks cover a key tile partly and
// where no block sees some keys, on every bf16 path, with the stores'
// transposed key gradients holding NaNs before.
func TestBF16PackedPartialKeys(t *testing.T) {
	for _, bp := range kernels.BF16Paths() {
		old, _ := kernels.SetBF16Path(bp)
		cfg := mixer.Config{D: 64, Heads: 2, MaxLen: 192, Precision: "bf16"}
		for range 2 {
			var hps []*headPacks
			for range 4 {
				hp := packPool.get()
				nan := make([]float32, 2*2*64*ldT(192))
				for i := range nan {
					nan[i] = float32(math.NaN())
				}
				hp.dkT, hp.dvT = nan, slices.Clone(nan)
				hps = append(hps, hp)
			}
			for _, hp := range hps {
				packPool.put(hp)
			}
			var out, dx [2][]float32
			var g [2][][]float32
			for i, unpacked := range []bool{false, true} {
				out[i], dx[i], g[i], _ = passOn(t, cfg, partialPat{}, 2, 192, false, func(a *Attention[float32]) { a.unpacked = unpacked })
			}
			sameBits(t, out, dx, g)
		}
		kernels.SetBF16Path(old)
	}
}
