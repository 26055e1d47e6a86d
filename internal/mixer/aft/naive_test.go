package aft

import (
	"math"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/mixer"
)

// naive is the O(T²·D) twin of AFT[float64]: the direct formula of the
// package doc, with w written out from its table of definitions (not from
// the band geometry), and its gradient by the chain rule term by term. It shares
// only the parameter slices with the layer under test.
type naive struct {
	a *AFT[float64]
}

// w returns w[t,u] for channel c and, for the gradient, the index of the
// bias entry it reads (−1 when w is a constant: 0 for a distant token, −∞
// for one beyond a window without distant tokens).
func (n naive) w(t, u, c int) (float64, int) {
	a := n.a
	bias, _ := a.bias()
	switch a.v {
	case vFull:
		return bias[t*a.MaxLen+u], t*a.MaxLen + u
	case vLocal:
		if d := t - u; d < a.S && -d < a.S {
			return bias[t*a.MaxLen+u], t*a.MaxLen + u
		}
	case vConv:
		h := c / (a.D / a.H)
		for o := 0; o < a.S; o++ {
			delta := o
			if !a.Causal {
				delta = o - (a.S-1)/2
			}
			if t-u == delta {
				return bias[h*a.S+o], h*a.S + o
			}
		}
	}
	if (a.v == vLocal || a.v == vConv) && !a.distant {
		return math.Inf(-1), -1
	}
	return 0, -1
}

func (n naive) allowed(p mixer.Pass, b, t, u int) bool {
	return p.Allowed(b, u) && (!n.a.Causal || u <= t)
}

// run returns out and, when dout is non-nil, accumulates the gradients into
// dx and the bound gradient slices.
func (n naive) run(x []float64, p mixer.Pass, dout, dx []float64) []float64 {
	a := n.a
	pw, pg := a.proj.Bound() // q, k, v, o weights and biases
	T, D, N := p.T, a.D, p.B*p.T
	lin := func(w, b []float64) []float64 {
		y := make([]float64, N*D)
		kernels.RefGemm(false, true, N, D, D, 1, x, D, w, D, 0, y, D)
		for i := 0; i < N; i++ {
			for c := 0; c < D; c++ {
				y[i*D+c] += b[c]
			}
		}
		return y
	}
	q, k, v := lin(pw[0], pw[1]), lin(pw[2], pw[3]), lin(pw[4], pw[5])
	sq := make([]float64, N*D)
	for i := range q {
		sq[i] = 1 / (1 + math.Exp(-q[i]))
	}
	r := make([]float64, N*D)
	logits := func(b, t, c int) ([]float64, float64) {
		l := make([]float64, T)
		mx := math.Inf(-1)
		for u := 0; u < T; u++ {
			l[u] = math.Inf(-1)
			if n.allowed(p, b, t, u) {
				w, _ := n.w(t, u, c)
				l[u] = k[(b*T+u)*D+c] + w
				mx = math.Max(mx, l[u])
			}
		}
		return l, mx
	}
	for b := 0; b < p.B; b++ {
		for t := 0; t < T; t++ {
			for c := 0; c < D; c++ {
				l, mx := logits(b, t, c)
				if math.IsInf(mx, -1) {
					continue // no allowed t': R = 0
				}
				var num, den float64
				for u := 0; u < T; u++ {
					e := math.Exp(l[u] - mx)
					num += e * v[(b*T+u)*D+c]
					den += e
				}
				r[(b*T+t)*D+c] = num / den
			}
		}
	}
	y := make([]float64, N*D)
	for i := range y {
		y[i] = sq[i] * r[i]
	}
	out := make([]float64, N*D)
	kernels.RefGemm(false, true, N, D, D, 1, y, D, pw[6], D, 0, out, D)
	for i := 0; i < N; i++ {
		for c := 0; c < D; c++ {
			out[i*D+c] += pw[7][c]
		}
	}
	if dout == nil {
		return out
	}
	// Output linear.
	kernels.RefGemm(true, false, D, D, N, 1, dout, D, y, D, 1, pg[6], D)
	for i := 0; i < N; i++ {
		for c := 0; c < D; c++ {
			pg[7][c] += dout[i*D+c]
		}
	}
	dy := make([]float64, N*D)
	kernels.RefGemm(false, false, N, D, D, 1, dout, D, pw[6], D, 0, dy, D)
	dq, dk, dv := make([]float64, N*D), make([]float64, N*D), make([]float64, N*D)
	_, gbias := a.bias()
	for b := 0; b < p.B; b++ {
		for t := 0; t < T; t++ {
			for c := 0; c < D; c++ {
				i := (b*T+t)*D + c
				dq[i] = dy[i] * r[i] * sq[i] * (1 - sq[i])
				l, mx := logits(b, t, c)
				if math.IsInf(mx, -1) {
					continue
				}
				var den float64
				for u := 0; u < T; u++ {
					den += math.Exp(l[u] - mx)
				}
				dr := dy[i] * sq[i]
				for u := 0; u < T; u++ {
					if !n.allowed(p, b, t, u) {
						continue
					}
					pr := math.Exp(l[u]-mx) / den
					j := (b*T+u)*D + c
					dv[j] += pr * dr
					dl := pr * (v[j] - r[i]) * dr // ∂L/∂logit[t,u,c]
					dk[j] += dl
					if _, wi := n.w(t, u, c); wi >= 0 {
						gbias[wi] += dl
					}
				}
			}
		}
	}
	for i, dz := range [][]float64{dq, dk, dv} {
		kernels.RefGemm(false, false, N, D, D, 1, dz, D, pw[2*i], D, 1, dx, D)
		kernels.RefGemm(true, false, D, D, N, 1, dz, D, x, D, 1, pg[2*i], D)
		for j := 0; j < N; j++ {
			for c := 0; c < D; c++ {
				pg[2*i+1][c] += dz[j*D+c]
			}
		}
	}
	return out
}
