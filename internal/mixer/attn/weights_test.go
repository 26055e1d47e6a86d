package attn_test

import (
	"math/rand/v2"
	"testing"

	"github.com/tokenmix/tokenmix/internal/mixer/attn"
	"github.com/tokenmix/tokenmix/internal/mixer/attn/attntest"
	"github.com/tokenmix/tokenmix/internal/mixer/full"
	"github.com/tokenmix/tokenmix/internal/mixer/sparse"
	"github.com/tokenmix/tokenmix/mixer"
)

// TestAttentionWeights checks that the weights AttentionWeights reports are
// those the fast kernels use: o(concat_h P_h·v_h) equals Forward, rows sum
// to 1 and disallowed pairs are exactly 0 (full causal and bidirectional,
// strided causal).
func TestAttentionWeights(t *testing.T) {
	const D, H, T = 8, 2, 19
	for _, tc := range []struct {
		kind   mixer.Kind
		opts   map[string]any
		causal bool
	}{
		{full.Kinds()[0], nil, true},
		{full.Kinds()[0], nil, false},
		{sparse.Kinds()[0], map[string]any{"block": 4, "combine": "heads"}, true},
	} {
		c := mixer.Config{D: D, Heads: H, MaxLen: T, Causal: tc.causal, NLayers: 1, Opts: mixer.OptionsOf(tc.kind.Name, tc.opts)}
		m, err := tc.kind.New64(c)
		if err != nil {
			t.Fatal(err)
		}
		a := m.(*attn.Attention[float64])
		rng := rand.New(rand.NewPCG(3, 4))
		var w, g [][]float64
		for _, s := range a.Params() {
			v := make([]float64, s.Size())
			for i := range v {
				v[i] = rng.NormFloat64()
			}
			w, g = append(w, v), append(g, make([]float64, s.Size()))
		}
		a.Bind(w, g)
		x := make([]float64, T*D)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		p := mixer.Pass{B: 1, T: T}
		out := make([]float64, T*D)
		a.Forward(out, make([]float64, a.ActSize(1, T)), make([]float64, a.ScratchSize(1, T, 0)), x, p)

		P := a.AttentionWeights(x, T)
		lin := func(y, x, w, b []float64) { // y [T,D] = x·wᵀ + b
			for i := 0; i < T; i++ {
				for o := 0; o < D; o++ {
					s := b[o]
					for c := 0; c < D; c++ {
						s += x[i*D+c] * w[o*D+c]
					}
					y[i*D+o] = s
				}
			}
		}
		v, cat, want := make([]float64, T*D), make([]float64, T*D), make([]float64, T*D)
		lin(v, x, w[4], w[5])
		Dh := D / H
		for h := 0; h < H; h++ {
			for i := 0; i < T; i++ {
				sum := 0.0
				for j := 0; j < T; j++ {
					pij := P[h][i*T+j]
					sum += pij
					if !a.Pat.Allow(h, T, i, j) && pij != 0 {
						t.Fatalf("%s H%d (%d,%d): disallowed pair has weight %g", tc.kind.Name, h, i, j, pij)
					}
					for c := 0; c < Dh; c++ {
						cat[i*D+h*Dh+c] += pij * v[j*D+h*Dh+c]
					}
				}
				if sum < 1-1e-12 || sum > 1+1e-12 {
					t.Fatalf("%s H%d row %d sums to %g", tc.kind.Name, h, i, sum)
				}
			}
		}
		lin(want, cat, w[6], w[7])
		attntest.Close(t, tc.kind.Name, out, want, 1e-10)
	}
}
