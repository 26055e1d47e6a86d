package aft

import (
	"tokenmix/kernels"
	"tokenmix/mixer"
	"tokenmix/parallel"
)

// SimpleKind returns the registry entry of "aft_simple" (w ≡ 0).
func SimpleKind() mixer.Kind {
	return mixer.Kind{
		Name:   "aft_simple",
		Causal: true, Bidirectional: true, KeyPadding: true,
		Paper: "Zhai et al. 2021, An Attention Free Transformer (AFT-simple)",
		New32: func(c mixer.Config) (mixer.Mixer[float32], error) { return New[float32]("aft_simple", c) },
		New64: func(c mixer.Config) (mixer.Mixer[float64], error) { return New[float64]("aft_simple", c) },
	}
}

// chanBlock is the channel width of one aft_simple work item: its rows are
// streamed through T with the per-channel state in registers/L1.
const chanBlock = 32

// simpleForward computes R and Y for w ≡ 0 in O(T·D): per channel, a softmax
// of K over the allowed positions (bidirectional) or running sums with a
// running maximum (causal). k [B,T,D] is the key projection.
func (a *AFT[F]) simpleForward(s act[F], k []F, p mixer.Pass) {
	T, D := p.T, a.D
	nb := (D + chanBlock - 1) / chanBlock
	parallel.For(p.B*nb, 1, func(_, lo, hi int) {
		var mBuf, num, den, tmp, tmp2 [chanBlock]F
		for it := lo; it < hi; it++ {
			b, c0 := it/nb, (it%nb)*chanBlock
			c1 := min(c0+chanBlock, D)
			w := c1 - c0
			m, nu, de, e, sc := mBuf[:w], num[:w], den[:w], tmp[:w], tmp2[:w]
			clear(nu)
			clear(de)
			row := func(x []F, t int) []F { return x[(b*T+t)*D+c0 : (b*T+t)*D+c1] }
			if !a.Causal {
				seen := false
				for t := 0; t < T; t++ {
					if !p.Allowed(b, t) {
						continue
					}
					kr := row(k, t)
					if !seen {
						copy(m, kr)
						seen = true
					}
					for j, v := range kr {
						m[j] = max(m[j], v)
					}
				}
				for t := 0; t < T; t++ {
					ek := row(s.ek, t)
					if !p.Allowed(b, t) {
						clear(ek)
						continue
					}
					kr, vr := row(k, t), row(s.v, t)
					for j := range ek {
						ek[j] = kr[j] - m[j]
					}
					kernels.Exp(ek, ek)
					for j, e := range ek {
						nu[j] += e * vr[j]
						de[j] += e
					}
				}
				for j := range nu {
					if de[j] > 0 {
						nu[j] /= de[j]
					} else {
						nu[j] = 0
					}
				}
				for t := 0; t < T; t++ {
					copy(row(s.r, t), nu)
					copy(row(s.den, t), de)
					yr, sq := row(s.y, t), row(s.sq, t)
					for j := range yr {
						yr[j] = sq[j] * nu[j]
					}
				}
				continue
			}
			// Causal: num and den are relative to the running max m; a new
			// maximum rescales them by exp(m_old − m_new) ≤ 1.
			seen := false
			clear(m)
			for t := 0; t < T; t++ {
				ek, mr := row(s.ek, t), row(s.m, t)
				if p.Allowed(b, t) {
					kr, vr := row(k, t), row(s.v, t)
					if !seen {
						copy(m, kr)
						seen = true
					}
					for j, v := range kr {
						mn := max(m[j], v)
						sc[j] = m[j] - mn
						e[j] = v - mn
						m[j] = mn
					}
					kernels.Exp(sc, sc)
					kernels.Exp(e, e)
					for j := range nu {
						nu[j] = nu[j]*sc[j] + e[j]*vr[j]
						de[j] = de[j]*sc[j] + e[j]
					}
					copy(ek, e)
				} else {
					clear(ek)
				}
				copy(mr, m)
				copy(row(s.den, t), de)
				rr, yr, sq := row(s.r, t), row(s.y, t), row(s.sq, t)
				for j := range rr {
					r := F(0)
					if de[j] > 0 {
						r = nu[j] / de[j]
					}
					rr[j] = r
					yr[j] = sq[j] * r
				}
			}
		}
	})
}

// simpleBackward turns dy [B,T,D] into dk in place and writes dv, given the
// forward activations. With g = dY⊙σ(Q)/den, for allowed t':
//
//	dV[t'] = ek[t']·Σ_t e^{m[t']−m[t]}·g[t]
//	dK[t'] = ek[t']·(V[t']·Σ_t e^{m[t']−m[t]}·g[t] − Σ_t e^{m[t']−m[t]}·g[t]·R[t])
//
// summing over t ≥ t' (causal, as a suffix scan; m is non-decreasing so every
// factor is ≤ 1) or over all t (bidirectional, with m constant).
func (a *AFT[F]) simpleBackward(dy, dv []F, s act[F], p mixer.Pass) {
	T, D := p.T, a.D
	nb := (D + chanBlock - 1) / chanBlock
	parallel.For(p.B*nb, 1, func(_, lo, hi int) {
		var s1b, s2b, fb [chanBlock]F
		for it := lo; it < hi; it++ {
			b, c0 := it/nb, (it%nb)*chanBlock
			c1 := min(c0+chanBlock, D)
			w := c1 - c0
			s1, s2, f := s1b[:w], s2b[:w], fb[:w]
			clear(s1)
			clear(s2)
			row := func(x []F, t int) []F { return x[(b*T+t)*D+c0 : (b*T+t)*D+c1] }
			if !a.Causal {
				for t := 0; t < T; t++ {
					g, sq, de, rr := row(dy, t), row(s.sq, t), row(s.den, t), row(s.r, t)
					for j := range s1 {
						if de[j] > 0 {
							gj := g[j] * sq[j] / de[j]
							s1[j] += gj
							s2[j] += gj * rr[j]
						}
					}
				}
				for t := 0; t < T; t++ {
					dk, dvr := row(dy, t), row(dv, t)
					if !p.Allowed(b, t) {
						clear(dk)
						clear(dvr)
						continue
					}
					ek, vr := row(s.ek, t), row(s.v, t)
					for j := range dk {
						dvr[j] = ek[j] * s1[j]
						dk[j] = ek[j] * (vr[j]*s1[j] - s2[j])
					}
				}
				continue
			}
			// Rows before the first allowed token are all padding: their
			// gradients are zero and the scan stops there.
			first := 0
			for first < T && !p.Allowed(b, first) {
				first++
			}
			for t := T - 1; t >= 0; t-- {
				dk, dvr := row(dy, t), row(dv, t)
				if t < first {
					clear(dk)
					clear(dvr)
					continue
				}
				mr := row(s.m, t)
				if t < T-1 {
					mn := row(s.m, t+1)
					for j := range f {
						f[j] = mr[j] - mn[j]
					}
					kernels.Exp(f, f)
					for j := range s1 {
						s1[j] *= f[j]
						s2[j] *= f[j]
					}
				}
				sq, de, rr := row(s.sq, t), row(s.den, t), row(s.r, t)
				for j := range s1 {
					if de[j] > 0 {
						gj := dk[j] * sq[j] / de[j]
						s1[j] += gj
						s2[j] += gj * rr[j]
					}
				}
				if !p.Allowed(b, t) {
					clear(dk)
					clear(dvr)
					continue
				}
				ek, vr := row(s.ek, t), row(s.v, t)
				for j := range dk {
					dvr[j] = ek[j] * s1[j]
					dk[j] = ek[j] * (vr[j]*s1[j] - s2[j])
				}
			}
		}
	})
}
