package attn

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/mixer"
)

// KeyLister is implemented by patterns that list a causal query's allowed
// keys, so decoding visits only those (O(l + t/l) for strided) instead of
// asking Allow about every earlier position.
type KeyLister interface {
	// CausalKeys appends to dst the keys j ≤ i that query i of head h may
	// attend to, ascending, and returns it.
	CausalKeys(h, i int, dst []int) []int
}

// kvState is one causal sequence's key–value cache, per head: k[h] holds
// the keys as [positions, Dh] rows. A dense pattern (every query sees every
// earlier key) keeps the values transposed in vt[h], [Dh, cap] (row c holds
// channel c of every position), so that a query is two matrix–vector
// products, K·q then Vᵀ·p; a sparse one keeps them as rows in v[h], read
// at the few allowed positions.
type kvState[F kernels.Float] struct {
	n, max, cap int
	dense       bool
	k, v, vt    [][]F
	// Work of one Decode call (not counted in Bytes).
	q, kn, vn, o, sc []F
	keys             []int
}

func (s *kvState[F]) Len() int { return s.n }

// Bytes is the cache's memory: the keys and values held.
func (s *kvState[F]) Bytes() int64 {
	var z F
	var n int
	for h := range s.k {
		n += cap(s.k[h]) + cap(s.v[h]) + cap(s.vt[h])
	}
	return int64(unsafe.Sizeof(z)) * int64(n)
}

// NewState returns an empty key–value cache for a causal sequence of at
// most maxLen positions.
func (a *Attention[F]) NewState(maxLen int) mixer.State {
	s := &kvState[F]{max: maxLen, k: make([][]F, a.H), v: make([][]F, a.H), vt: make([][]F, a.H)}
	// Dense when the pattern lists every earlier key for a probe query of
	// each head.
	lister, ok := a.Pat.(KeyLister)
	s.dense = ok && a.Slopes == nil
	for h, i := 0, min(maxLen, 64)-1; h < a.H && s.dense; h++ {
		s.dense = len(lister.CausalKeys(h, i, nil)) == i+1
	}
	return s
}

func grow[F kernels.Float](b []F, n int) []F {
	if cap(b) < n {
		return make([]F, n)
	}
	return b[:n]
}

// Decode implements mixer.Decoder for a causal pattern: out [n,D] for the
// next n positions' inputs x [n,D]. Position t visits the cached keys and
// values its pattern allows (KeyLister, or Allow on every earlier
// position), O(allowed·D) arithmetic.
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
	s.q, s.kn, s.vn, s.o = grow(s.q, n*D), grow(s.kn, n*D), grow(s.vn, n*D), grow(s.o, n*D)
	s.sc = grow(s.sc, s.n+n)
	kernels.Linear(s.q, x, a.w[0], a.w[1], n, D, D)
	kernels.Linear(s.kn, x, a.w[2], a.w[3], n, D, D)
	kernels.Linear(s.vn, x, a.w[4], a.w[5], n, D, D)
	if s.dense && s.n+n > s.cap { // grow the transposed values, doubling
		c := min(max(2*s.cap, s.n+n, 64), s.max)
		for h := range H {
			vt := make([]F, Dh*c)
			for ch := 0; ch < Dh && s.n > 0; ch++ {
				copy(vt[ch*c:ch*c+s.n], s.vt[h][ch*s.cap:ch*s.cap+s.n])
			}
			s.vt[h] = vt
		}
		s.cap = c
	}
	for h := range H {
		for r := range n {
			s.k[h] = append(s.k[h], s.kn[r*D+h*Dh:r*D+(h+1)*Dh]...)
			if !s.dense {
				s.v[h] = append(s.v[h], s.vn[r*D+h*Dh:r*D+(h+1)*Dh]...)
				continue
			}
			for ch := range Dh {
				s.vt[h][ch*s.cap+s.n+r] = s.vn[r*D+h*Dh+ch]
			}
		}
	}
	lister, _ := a.Pat.(KeyLister)
	scale := 1 / math.Sqrt(float64(Dh))
	for r := range n {
		i := s.n + r
		for h := range H {
			s.keys = s.keys[:0]
			if lister != nil {
				s.keys = lister.CausalKeys(h, i, s.keys)
			} else {
				for j := 0; j <= i; j++ {
					if a.Pat.Allow(h, s.max, i, j) {
						s.keys = append(s.keys, j)
					}
				}
			}
			q := s.q[r*D+h*Dh : r*D+(h+1)*Dh]
			kh, vh, vt := s.k[h], s.v[h], s.vt[h]
			o := s.o[r*D+h*Dh : r*D+(h+1)*Dh]
			if s.dense {
				// Every earlier key: scores = K·q, o = Vᵀ·p.
				sc := s.sc[:i+1]
				kernels.Gemm(false, true, 1, i+1, Dh, F(scale), q, Dh, kh, Dh, 0, sc, i+1)
				sum := kernels.ExpSub(sc, sc, kernels.Max(sc))
				for c := range o {
					o[c] = kernels.Dot(sc, vt[c*s.cap:c*s.cap+i+1]) / sum
				}
				continue
			}
			sc := s.sc[:len(s.keys)]
			for m, j := range s.keys {
				v := float64(kernels.Dot(q, kh[j*Dh:(j+1)*Dh])) * scale
				if a.Slopes != nil {
					v -= a.Slopes[h] * float64(i-j)
				}
				sc[m] = F(v)
			}
			sum := kernels.ExpSub(sc, sc, kernels.Max(sc))
			clear(o)
			for m, j := range s.keys {
				kernels.Axpy(o, sc[m]/sum, vh[j*Dh:(j+1)*Dh])
			}
		}
	}
	kernels.Linear(out[:n*D], s.o, a.w[6], a.w[7], n, D, D)
	s.n += n
	return nil
}
