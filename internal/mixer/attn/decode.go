package attn

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/mixer"
)

// kvState is one causal sequence's key–value cache.
type kvState[F kernels.Float] struct {
	n, max   int
	k, v     []F // [n, D], grown as positions arrive
	q, o, sc []F // work: [rows, D], [rows, D], scores [max]
}

func (s *kvState[F]) Len() int { return s.n }

func (s *kvState[F]) Bytes() int64 {
	var z F
	return int64(unsafe.Sizeof(z)) * int64(cap(s.k)+cap(s.v)+cap(s.q)+cap(s.o)+cap(s.sc))
}

// NewState returns an empty key–value cache for a causal sequence of at
// most maxLen positions.
func (a *Attention[F]) NewState(maxLen int) mixer.State {
	return &kvState[F]{max: maxLen}
}

// Decode implements mixer.Decoder for a causal pattern: out [n,D] for the
// next n positions' inputs x [n,D]. Position t reads the cached keys and
// values of the positions its pattern allows (Pattern.Allow), so it costs
// O(t) pattern checks and O(allowed·D) arithmetic.
func (a *Attention[F]) Decode(out, x []F, st mixer.State, n int) error {
	s, ok := st.(*kvState[F])
	if !ok {
		return fmt.Errorf("attn: a decoding state of another mixer")
	}
	if !a.Causal {
		return fmt.Errorf("attn: decoding needs a causal pattern")
	}
	if s.n+n > s.max {
		return fmt.Errorf("attn: %d positions exceed the state's %d", s.n+n, s.max)
	}
	D, H, Dh := a.D, a.H, a.Dh
	grow := func(b *[]F, m int) {
		if cap(*b) < m {
			nb := make([]F, m, max(m, 2*cap(*b)))
			copy(nb, *b)
			*b = nb
		}
		*b = (*b)[:m]
	}
	grow(&s.k, (s.n+n)*D)
	grow(&s.v, (s.n+n)*D)
	grow(&s.q, n*D)
	grow(&s.o, n*D)
	grow(&s.sc, s.n+n)
	kernels.Linear(s.q, x, a.w[0], a.w[1], n, D, D)
	kernels.Linear(s.k[s.n*D:], x, a.w[2], a.w[3], n, D, D)
	kernels.Linear(s.v[s.n*D:], x, a.w[4], a.w[5], n, D, D)
	scale := 1 / math.Sqrt(float64(Dh))
	for r := range n {
		i := s.n + r
		for h := range H {
			q := s.q[r*D+h*Dh : r*D+(h+1)*Dh]
			mx := math.Inf(-1)
			for j := 0; j <= i; j++ {
				if !a.Pat.Allow(h, s.max, i, j) {
					s.sc[j] = F(math.Inf(-1))
					continue
				}
				k := s.k[j*D+h*Dh : j*D+(h+1)*Dh]
				var dot F
				for c := range Dh {
					dot += q[c] * k[c]
				}
				v := float64(dot) * scale
				if a.Slopes != nil {
					v -= a.Slopes[h] * float64(i-j)
				}
				s.sc[j] = F(v)
				mx = math.Max(mx, float64(s.sc[j]))
			}
			var sum float64
			for j := 0; j <= i; j++ {
				e := math.Exp(float64(s.sc[j]) - mx) // exp(−Inf) = 0 for a disallowed key
				s.sc[j] = F(e)
				sum += e
			}
			o := s.o[r*D+h*Dh : r*D+(h+1)*Dh]
			clear(o)
			for j := 0; j <= i; j++ {
				p := s.sc[j] / F(sum)
				if p == 0 {
					continue
				}
				v := s.v[j*D+h*Dh : j*D+(h+1)*Dh]
				for c := range Dh {
					o[c] += p * v[c]
				}
			}
		}
	}
	kernels.Linear(out[:n*D], s.o, a.w[6], a.w[7], n, D, D)
	s.n += n
	return nil
}
