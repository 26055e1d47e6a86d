package attn

import "github.com/tokenmix/tokenmix/mixer"

// AttentionWeights returns, per head, the [T,T] row-major softmax weights
// (query rows, key columns; exactly 0 where Pattern.Allow forbids the pair)
// of a forward pass on x [1,T,D] with the bound parameters and no padding:
// the heat maps of `tokenmix pattern --weights` (plot/pattern.Weights). It
// runs the masked-dense twin Naive, so it allocates O(H·T²) and is for
// inspection, not training. It panics if len(x) < T·D or the parameters are
// not bound.
func (a *Attention[F]) AttentionWeights(x []float64, T int) [][]float64 {
	n := &Naive[F]{Attention: a}
	n.w, n.g = a.proj.Bound()
	D := a.D
	xf := make([]F, T*D)
	for i := range xf {
		xf[i] = F(x[i])
	}
	act := make([]F, n.ActSize(1, T))
	n.Forward(make([]F, T*D), act, nil, xf, mixer.Pass{B: 1, T: T})
	P := act[4*T*D:]
	out := make([][]float64, a.H)
	for h := range out {
		v := make([]float64, T*T)
		for i, p := range P[h*T*T : (h+1)*T*T] {
			v[i] = float64(p)
		}
		out[h] = v
	}
	return out
}
