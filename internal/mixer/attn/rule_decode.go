package attn

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/mixer"
)

// ruleKV is one causal sequence's key–value cache, per head.
type ruleKV[F kernels.Float] struct {
	n, max int
	k, v   [][]F // [H][positions·Dh]
	// Work of one Decode call (not counted in Bytes).
	q, kn, vn, o, z, tmp []F
}

func (s *ruleKV[F]) Len() int { return s.n }

// Bytes is the cache's memory: the keys and values held.
func (s *ruleKV[F]) Bytes() int64 {
	var z F
	var n int
	for h := range s.k {
		n += cap(s.k[h]) + cap(s.v[h])
	}
	return int64(unsafe.Sizeof(z)) * int64(n)
}

// NewState returns an empty key–value cache for a causal sequence of at
// most maxLen positions.
func (a *RuleAttention[F]) NewState(maxLen int, _ uint64) mixer.State {
	return &ruleKV[F]{max: maxLen, k: make([][]F, a.H), v: make([][]F, a.H)}
}

// Decode implements mixer.Decoder for causal attention under the layer's
// Rule: position t scores every cached key, the rule (α-entmax, top-k)
// turns the row into probabilities, and y = Σ p_j·v_j over its support.
// O(t·D) per position.
func (a *RuleAttention[F]) Decode(out, x []F, st mixer.State, n int) error {
	s, ok := st.(*ruleKV[F])
	if !ok {
		return fmt.Errorf("entmax: a decoding state of another mixer")
	}
	if !a.Causal {
		return fmt.Errorf("entmax: decoding needs a causal mixer")
	}
	if s.n+n > s.max {
		return fmt.Errorf("entmax: %d positions exceed the state's %d", s.n+n, s.max)
	}
	D, H, Dh := a.D, a.H, a.Dh
	s.q, s.kn, s.vn, s.o = grow(s.q, n*D), grow(s.kn, n*D), grow(s.vn, n*D), grow(s.o, n*D)
	s.z, s.tmp = grow(s.z, s.n+n), grow(s.tmp, s.n+n)
	kernels.Linear(s.q, x, a.wq, a.bq, n, D, D)
	kernels.Linear(s.kn, x, a.wk, a.bk, n, D, D)
	kernels.Linear(s.vn, x, a.wv, a.bv, n, D, D)
	for h := range H {
		for r := range n {
			s.k[h] = append(s.k[h], s.kn[r*D+h*Dh:r*D+(h+1)*Dh]...)
			s.v[h] = append(s.v[h], s.vn[r*D+h*Dh:r*D+(h+1)*Dh]...)
		}
	}
	scale := F(1 / math.Sqrt(float64(Dh)))
	for r := range n {
		i := s.n + r
		for h := range H {
			q := s.q[r*D+h*Dh : r*D+(h+1)*Dh]
			z, kh, vh := s.z[:i+1], s.k[h], s.v[h]
			for j := range z {
				z[j] = scale * kernels.Dot(q, kh[j*Dh:(j+1)*Dh])
			}
			a.rule.Normalize(z, s.tmp[:i+1], h)
			o := s.o[r*D+h*Dh : r*D+(h+1)*Dh]
			clear(o)
			for j, p := range z {
				if p != 0 {
					kernels.Axpy(o, p, vh[j*Dh:(j+1)*Dh])
				}
			}
		}
	}
	kernels.Linear(out[:n*D], s.o, a.wo, a.bo, n, D, D)
	s.n += n
	return nil
}
