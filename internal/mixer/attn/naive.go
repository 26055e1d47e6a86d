package attn

import (
	"math"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/mixer"
)

// Naive is the masked-dense twin of Attention: it materialises every T×T
// score matrix, masks it with Pattern.Allow and the padding, and keeps the
// probabilities for backward. It is the test oracle (O(T²) memory); its
// projections are plain loops too (naiveLinear), independent of package
// proj.
type Naive[F kernels.Float] struct {
	*Attention[F]
	w, g [][]F // q.weight, q.bias, k.…, v.…, o.…
}

// NewNaive returns the naive twin with the same parameters as New (in
// float32 or float64 whatever c.Precision says: it is the oracle).
func NewNaive[F kernels.Float](c mixer.Config, pat Pattern) (*Naive[F], error) {
	c.Precision = ""
	a, err := New[F](c, pat)
	if err != nil {
		return nil, err
	}
	return &Naive[F]{Attention: a}, nil
}

// Bind stores the parameter and gradient slices (in Params order).
func (n *Naive[F]) Bind(w, g [][]F) { n.w, n.g = w, g }

// naiveLinear writes y [N,D] = x·Wᵀ + b by the reference triple loop.
func naiveLinear[F kernels.Float](y, x, w, b []F, N, D int) {
	for r := range N {
		copy(y[r*D:(r+1)*D], b)
	}
	kernels.RefGemm(false, true, N, D, D, 1, x, D, w, D, 1, y, D)
}

// naiveLinearBack is naiveLinear's backward: dw += dyᵀ·x, db += Σ dy and
// dx = dy·W + beta·dx, by the reference loops.
func naiveLinearBack[F kernels.Float](dx, dw, db, dy, x, w []F, N, D int, beta F) {
	kernels.RefGemm(true, false, D, D, N, 1, dy, D, x, D, 1, dw, D)
	for r := range N {
		for c := range D {
			db[c] += dy[r*D+c]
		}
	}
	kernels.RefGemm(false, false, N, D, D, 1, dy, D, w, D, beta, dx, D)
}

// ActSize is q, k, v, o [B,T,D] and the probabilities [B,H,T,T].
func (n *Naive[F]) ActSize(b, t int) int { return 4*b*t*n.D + b*n.H*t*t }

// ScratchSize is dout·Wo, dq, dk, dv [B,T,D] and one T-vector.
func (n *Naive[F]) ScratchSize(b, t, _ int) int { return 4*b*t*n.D + t }

// Forward writes out [B,T,D] from x [B,T,D].
func (n *Naive[F]) Forward(out, act, scratch, x []F, p mixer.Pass) {
	B, T, D, H, Dh := p.B, p.T, n.D, n.H, n.Dh
	N := B * T
	q, k, v, o := act[:N*D], act[N*D:2*N*D], act[2*N*D:3*N*D], act[3*N*D:4*N*D]
	P := act[4*N*D : 4*N*D+B*H*T*T]
	naiveLinear(q, x, n.w[0], n.w[1], N, D)
	naiveLinear(k, x, n.w[2], n.w[3], N, D)
	naiveLinear(v, x, n.w[4], n.w[5], N, D)
	RopeRef(q, B, T, D, Dh, RopeBase(n.Rope), false)
	RopeRef(k, B, T, D, Dh, RopeBase(n.Rope), false)
	scale := F(1 / math.Sqrt(float64(Dh)))
	ninf := F(math.Inf(-1))
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			ph := P[(b*H+h)*T*T : (b*H+h+1)*T*T]
			for i := 0; i < T; i++ {
				for j := 0; j < T; j++ {
					if !n.Pat.Allow(h, T, i, j) || !p.Allowed(b, j) {
						ph[i*T+j] = ninf
						continue
					}
					var s F
					for c := 0; c < Dh; c++ {
						s += q[(b*T+i)*D+h*Dh+c] * k[(b*T+j)*D+h*Dh+c]
					}
					ph[i*T+j] = s * scale
					if n.Slopes != nil {
						ph[i*T+j] -= F(n.Slopes[h] * math.Abs(float64(i-j)))
					}
				}
			}
			kernels.SoftmaxRows(ph, T, T)
			for i := 0; i < T; i++ {
				for c := 0; c < Dh; c++ {
					var s F
					for j := 0; j < T; j++ {
						s += ph[i*T+j] * v[(b*T+j)*D+h*Dh+c]
					}
					o[(b*T+i)*D+h*Dh+c] = s
				}
			}
		}
	}
	naiveLinear(out, o, n.w[6], n.w[7], N, D)
}

// Backward accumulates into dx [B,T,D] and the parameter gradients.
func (n *Naive[F]) Backward(dx, scratch, dout, act, x []F, p mixer.Pass) {
	B, T, D, H, Dh := p.B, p.T, n.D, n.H, n.Dh
	N := B * T
	q, k, v, o := act[:N*D], act[N*D:2*N*D], act[2*N*D:3*N*D], act[3*N*D:4*N*D]
	P := act[4*N*D : 4*N*D+B*H*T*T]
	do, dq, dk, dv := scratch[:N*D], scratch[N*D:2*N*D], scratch[2*N*D:3*N*D], scratch[3*N*D:4*N*D]
	dp := scratch[4*N*D : 4*N*D+T]
	naiveLinearBack(do, n.g[6], n.g[7], dout, o, n.w[6], N, D, 0)
	clear(dq)
	clear(dk)
	clear(dv)
	scale := F(1 / math.Sqrt(float64(Dh)))
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			ph := P[(b*H+h)*T*T : (b*H+h+1)*T*T]
			for i := 0; i < T; i++ {
				ri := (b*T+i)*D + h*Dh
				// dP_ij = dO_i·v_j; dS_ij = P_ij (dP_ij − Σ_j' P_ij' dP_ij')
				var sum F
				for j := 0; j < T; j++ {
					rj := (b*T+j)*D + h*Dh
					var s F
					for c := 0; c < Dh; c++ {
						s += do[ri+c] * v[rj+c]
						dv[rj+c] += ph[i*T+j] * do[ri+c]
					}
					dp[j] = s
					sum += ph[i*T+j] * s
				}
				for j := 0; j < T; j++ {
					ds := ph[i*T+j] * (dp[j] - sum) * scale
					if ds == 0 {
						continue
					}
					rj := (b*T+j)*D + h*Dh
					for c := 0; c < Dh; c++ {
						dq[ri+c] += ds * k[rj+c]
						dk[rj+c] += ds * q[ri+c]
					}
				}
			}
		}
	}
	RopeRef(dq, B, T, D, Dh, RopeBase(n.Rope), true)
	RopeRef(dk, B, T, D, Dh, RopeBase(n.Rope), true)
	for i, dy := range [][]F{dq, dk, dv} {
		naiveLinearBack(dx, n.g[2*i], n.g[2*i+1], dy, x, n.w[2*i], N, D, 1)
	}
}
