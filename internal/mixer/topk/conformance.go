package topk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/tokenmix/tokenmix/internal/mixer/attn"
	"github.com/tokenmix/tokenmix/mixer"
)

// tests are the conformance suite's configurations of "topk": k beyond T
// (every key kept) and k = 3, both masking modes, with padding; k = 3 keeps
// its inputs away from ties (withGap) so that finite differences do not
// flip a top-k set.
func tests() []mixer.TestCase {
	var out []mixer.TestCase
	for _, causal := range []bool{true, false} {
		for _, k := range []int{40, 3} {
			c := mixer.TestCase{Name: fmt.Sprintf("k=%d/causal=%v", k, causal), D: 12, Heads: 3, MaxLen: 64,
				Causal: causal, Opts: map[string]any{"k": k}, B: 2, T: 37, Pad: true}
			if k == 3 {
				c.B = 1
				c.Setup = withGap(c.Config("topk"), c.B, c.T, k)
			}
			out = append(out, c)
		}
	}
	// Without padding, so the suite also checks decoding.
	c := mixer.TestCase{Name: "k=3/causal/nopad", D: 12, Heads: 3, MaxLen: 64, Causal: true, Opts: map[string]any{"k": 3}, B: 1, T: 37}
	c.Setup = withGap(c.Config("topk"), c.B, c.T, 3)
	out = append(out, c)
	// RoPE, with and without padding (rope_base small enough that every
	// pair turns at this length).
	for _, pad := range []bool{false, true} {
		c := mixer.TestCase{Name: fmt.Sprintf("k=3/causal/rope/pad=%v", pad), D: 12, Heads: 3, MaxLen: 64, Causal: true,
			Opts: map[string]any{"k": 3, "rope": true, "rope_base": 100}, B: 1, T: 37, Pad: pad}
		c.Setup = withGap(c.Config("topk"), c.B, c.T, 3)
		out = append(out, c)
	}
	return out
}

// suitePad is the padding mask mixertest builds for B, T.
func suitePad(B, T int) []bool {
	pad := make([]bool, B*T)
	for b := 0; b < B; b++ {
		for j := T - 1 - b; j < T; j++ {
			if j > 0 {
				pad[b*T+j] = true
			}
		}
		if T > 3 {
			pad[b*T+T/2] = true
		}
	}
	return pad
}

// gap returns the smallest difference between the k-th and (k+1)-th
// largest allowed scores of any row of the naive twin, with and without the
// suite's padding: when it is large, the perturbations of finite
// differences cannot flip a top-k set.
func gap(w [][]float64, x []float64, c mixer.Config, B, T, k int) float64 {
	g := math.Inf(1)
	out := make([]float64, B*T*c.D)
	for _, pad := range [][]bool{nil, suitePad(B, T)} {
		attn.NaiveRuleForward(out, x, w, c.D, c.Heads, c.Causal, attn.RopeBase(attn.RopeOption(&c.Opts, c.D, c.Heads, false)), mixer.Pass{B: B, T: T, Pad: pad}, func(z []float64, h int) {
			var s []float64
			for _, v := range z {
				if !math.IsInf(v, -1) {
					s = append(s, v)
				}
			}
			sort.Sort(sort.Reverse(sort.Float64Slice(s)))
			if len(s) > k {
				g = min(g, s[k-1]-s[k])
			}
		})
	}
	return g
}

func withGap(c mixer.Config, B, T, k int) func(w [][]float64, x []float64) {
	return func(w [][]float64, x []float64) {
		rng := rand.New(rand.NewPCG(5, 6))
		for try := 0; try < 500; try++ {
			if gap(w, x, c, B, T, k) > 1e-3 {
				return
			}
			for i := range x {
				x[i] = rng.NormFloat64()
			}
		}
		panic("topk test: no input with margins found")
	}
}
