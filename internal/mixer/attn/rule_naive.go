package attn

import (
	"math"

	"github.com/tokenmix/tokenmix/mixer"
)

// NaiveRuleForward is the dense test twin of a sparse attention layer, in
// float64: it materialises every T×T score matrix, masks it, applies row to
// each query row of head h (row gets the scores with −Inf for disallowed keys
// and must replace them by probabilities) and writes
// out [B,T,D] = o(concat_heads(P·v)). w holds q, k, v, o weights and biases
// as in Attention.Params; ropeBase, when not 0, rotates q and k by RoPE
// (RopeRef). It also returns P [B,H,T,T]. NaiveRuleForward panics if a
// slice is too short.
func NaiveRuleForward(out, x []float64, w [][]float64, D, H int, causal bool, ropeBase float64, p mixer.Pass, row func(z []float64, h int)) []float64 {
	B, T, Dh := p.B, p.T, D/H
	lin := func(wt, bs []float64) []float64 {
		y := make([]float64, B*T*D)
		for n := 0; n < B*T; n++ {
			for o := 0; o < D; o++ {
				s := bs[o]
				for i := 0; i < D; i++ {
					s += x[n*D+i] * wt[o*D+i]
				}
				y[n*D+o] = s
			}
		}
		return y
	}
	q, k, v := lin(w[0], w[1]), lin(w[2], w[3]), lin(w[4], w[5])
	RopeRef(q, B, T, D, Dh, ropeBase, false)
	RopeRef(k, B, T, D, Dh, ropeBase, false)
	y := make([]float64, B*T*D)
	P := make([]float64, B*H*T*T)
	scale := 1 / math.Sqrt(float64(Dh))
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			for i := 0; i < T; i++ {
				z := P[((b*H+h)*T+i)*T : ((b*H+h)*T+i+1)*T]
				for j := 0; j < T; j++ {
					if (causal && j > i) || !p.Allowed(b, j) {
						z[j] = math.Inf(-1)
						continue
					}
					var s float64
					for c := 0; c < Dh; c++ {
						s += q[(b*T+i)*D+h*Dh+c] * k[(b*T+j)*D+h*Dh+c]
					}
					z[j] = s * scale
				}
				row(z, h)
				for j := 0; j < T; j++ {
					for c := 0; c < Dh; c++ {
						y[(b*T+i)*D+h*Dh+c] += z[j] * v[(b*T+j)*D+h*Dh+c]
					}
				}
			}
		}
	}
	for n := 0; n < B*T; n++ {
		for o := 0; o < D; o++ {
			s := w[7][o]
			for i := 0; i < D; i++ {
				s += y[n*D+i] * w[6][o*D+i]
			}
			out[n*D+o] = s
		}
	}
	return P
}
