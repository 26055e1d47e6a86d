package aft

import (
	"math"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer"
)

// simpleForward computes R and Y for w ≡ 0 in O(T·D), streaming whole rows
// in parallel over (sequence, row block of blockT). Per channel it is a
// softmax of K over the allowed positions (bidirectional) or running sums of
// exp(K−m)⊙V and exp(K−m) with the running maximum m (causal). Both are
// evaluated as a blocked scan: each block's summary (m_b, Σe^{K−m_b}⊙V,
// Σe^{K−m_b}) is combined across blocks with
//
//	(M,N,S)∘(m,n,s) = (M', N·e^{M−M'} + n·e^{m−M'}, S·e^{M−M'} + s·e^{m−M'}),  M' = max(M,m),
//
// and each block then replays its rows from the state before it.
// k [B,T,D] is the key projection; scratch is the rest of ScratchSize after
// k.
func (a *AFT[F]) simpleForward(s act[F], k, scratch []F, p mixer.Pass) {
	T, D := p.T, a.D
	nrb := (T + blockT - 1) / blockT
	nblk := p.B * nrb
	bm, bn, bd := scratch[:nblk*D], scratch[nblk*D:2*nblk*D], scratch[2*nblk*D:3*nblk*D]
	// has[it] ≠ 0: block it has an allowed row; then: the state before it
	// is not empty.
	has := scratch[3*nblk*D : 3*nblk*D+nblk]
	M, N, S := scratch[3*nblk*D+nblk:][:D], scratch[3*nblk*D+nblk+D:][:D], scratch[3*nblk*D+nblk+2*D:][:D]
	work := scratch[3*nblk*D+nblk+3*D:] // 4·D per worker
	row := func(x []F, b, t int) []F { return x[(b*T+t)*D : (b*T+t+1)*D] }

	// Block summaries; ek rows hold exp(K − m_b) meanwhile.
	parallel.For(p.Threads, nblk, 1, func(_, lo, hi int) {
		for it := lo; it < hi; it++ {
			b, t0 := it/nrb, (it%nrb)*blockT
			t1 := min(t0+blockT, T)
			m, nu, de := bm[it*D:(it+1)*D], bn[it*D:(it+1)*D], bd[it*D:(it+1)*D]
			clear(nu)
			clear(de)
			has[it] = 0
			for t := t0; t < t1; t++ {
				if !p.Allowed(b, t) {
					continue
				}
				if has[it] == 0 {
					copy(m, row(k, b, t))
					has[it] = 1
				}
				for c, v := range row(k, b, t) {
					m[c] = max(m[c], v)
				}
			}
			for t := t0; t < t1; t++ {
				ek := row(s.ek, b, t)
				if !p.Allowed(b, t) {
					clear(ek)
					continue
				}
				kr, vr := row(k, b, t), row(s.v, b, t)
				for c := range ek {
					ek[c] = kr[c] - m[c]
				}
				kernels.Exp(ek, ek)
				for c, e := range ek {
					nu[c] += e * vr[c]
					de[c] += e
				}
			}
		}
	})

	// Combine across blocks: exclusive states (causal) or the total.
	for b := 0; b < p.B; b++ {
		seen := false
		clear(M) // a sequence without allowed rows has the empty total
		clear(N)
		clear(S)
		for blk := 0; blk < nrb; blk++ {
			it := b*nrb + blk
			m, nu, de := bm[it*D:(it+1)*D], bn[it*D:(it+1)*D], bd[it*D:(it+1)*D]
			h := has[it] != 0
			if a.Causal {
				// Swap in the state before this block.
				for c := range m {
					m[c], M[c] = M[c], m[c]
					nu[c], N[c] = N[c], nu[c]
					de[c], S[c] = S[c], de[c]
				}
				has[it] = 0
				if seen {
					has[it] = 1
				}
				// Now (M,N,S) is this block's summary and (m,nu,de) the
				// state before it; fold them into (M,N,S).
				switch {
				case !h:
					copy(M, m)
					copy(N, nu)
					copy(S, de)
				case seen:
					combine(M, N, S, m, nu, de)
				}
				seen = seen || h
				continue
			}
			if !h {
				continue
			}
			if !seen {
				copy(M, m)
				copy(N, nu)
				copy(S, de)
				seen = true
				continue
			}
			combine(M, N, S, m, nu, de)
		}
		if !a.Causal {
			// Every block gets the total in bn, bd, and in bm the log
			// rescale factor m_b − M of its ek rows.
			for blk := 0; blk < nrb; blk++ {
				it := b*nrb + blk
				copy(bn[it*D:(it+1)*D], N)
				copy(bd[it*D:(it+1)*D], S)
				m := bm[it*D : (it+1)*D]
				for c := range m {
					m[c] -= M[c]
				}
			}
		}
	}

	// Replay each block from the state before it.
	parallel.For(p.Threads, nblk, 1, func(w, lo, hi int) {
		ws := work[4*w*D : 4*(w+1)*D]
		m, nu, de, sc := ws[:D], ws[D:2*D], ws[2*D:3*D], ws[3*D:]
		for it := lo; it < hi; it++ {
			b, t0 := it/nrb, (it%nrb)*blockT
			t1 := min(t0+blockT, T)
			if !a.Causal {
				copy(sc, bm[it*D:(it+1)*D])
				kernels.Exp(sc, sc)
				nt, dt := bn[it*D:(it+1)*D], bd[it*D:(it+1)*D]
				for c := range nu {
					nu[c] = 0
					if dt[c] > 0 {
						nu[c] = nt[c] / dt[c]
					}
				}
				for t := t0; t < t1; t++ {
					if ek := row(s.ek, b, t); has[it] != 0 {
						for c := range ek {
							ek[c] *= sc[c]
						}
					}
					copy(row(s.r, b, t), nu)
					copy(row(s.den, b, t), dt)
					yr, sq := row(s.y, b, t), row(s.sq, b, t)
					for c := range yr {
						yr[c] = sq[c] * nu[c]
					}
				}
				continue
			}
			seen := has[it] != 0
			copy(m, bm[it*D:(it+1)*D])
			copy(nu, bn[it*D:(it+1)*D])
			copy(de, bd[it*D:(it+1)*D])
			if !seen {
				clear(m)
				clear(nu)
				clear(de)
			}
			for t := t0; t < t1; t++ {
				ek := row(s.ek, b, t)
				if p.Allowed(b, t) {
					kr, vr := row(k, b, t), row(s.v, b, t)
					if !seen {
						copy(m, kr)
						seen = true
					}
					for c, v := range kr {
						mn := max(m[c], v)
						sc[c] = m[c] - mn
						ek[c] = v - mn
						m[c] = mn
					}
					kernels.Exp(sc, sc)
					kernels.Exp(ek, ek)
					for c := range nu {
						nu[c] = nu[c]*sc[c] + ek[c]*vr[c]
						de[c] = de[c]*sc[c] + ek[c]
					}
				} else {
					clear(ek)
				}
				copy(row(s.m, b, t), m)
				copy(row(s.den, b, t), de)
				rr, yr, sq := row(s.r, b, t), row(s.y, b, t), row(s.sq, b, t)
				for c := range rr {
					r := F(0)
					if de[c] > 0 {
						r = nu[c] / de[c]
					}
					rr[c] = r
					yr[c] = sq[c] * r
				}
			}
		}
	})
}

// combine folds the state (m, n, s) into (M, N, S): the running-max merge of
// two softmax partial sums.
func combine[F kernels.Float](M, N, S, m, n, s []F) {
	for c := range M {
		mx := max(M[c], m[c])
		f1, f2 := F(math.Exp(float64(M[c]-mx))), F(math.Exp(float64(m[c]-mx)))
		N[c] = N[c]*f1 + n[c]*f2
		S[c] = S[c]*f1 + s[c]*f2
		M[c] = mx
	}
}

// simpleBackward turns dy [B,T,D] into dk in place and writes dv, given the
// forward activations. With g = dY⊙σ(Q)/den, for allowed t':
//
//	dV[t'] = ek[t']·Σ_t e^{m[t']−m[t]}·g[t]
//	dK[t'] = ek[t']·(V[t']·Σ_t e^{m[t']−m[t]}·g[t] − Σ_t e^{m[t']−m[t]}·g[t]·R[t])
//
// summing over t ≥ t' (causal: the suffix scan S[t] = g[t] + e^{m[t]−m[t+1]}·S[t+1],
// m non-decreasing so every factor is ≤ 1, run blockwise like the forward)
// or over all t (bidirectional, with m constant). Rows before a sequence's
// first allowed position are dead: their gradients are 0 and no sum runs
// through them. scratch is the rest of ScratchSize after dY, dQ and dV.
func (a *AFT[F]) simpleBackward(dy, dv, scratch []F, s act[F], p mixer.Pass) {
	T, D := p.T, a.D
	nrb := (T + blockT - 1) / blockT
	nblk := p.B * nrb
	loc, in := scratch[:nblk*2*D], scratch[nblk*2*D:nblk*4*D] // [B,nrb,2D]: block-local S at t0, S entering at t1
	// dead[it]: the dead rows at the start of block it (its length if all).
	dead := scratch[nblk*4*D : nblk*4*D+nblk]
	work := scratch[nblk*4*D+nblk:] // 4·D per worker
	row := func(x []F, b, t int) []F { return x[(b*T+t)*D : (b*T+t+1)*D] }
	for b := range p.B {
		first := T
		for t := 0; t < T; t++ {
			if p.Allowed(b, t) {
				first = t
				break
			}
		}
		for blk := range nrb {
			t0 := blk * blockT
			dead[b*nrb+blk] = F(min(max(first, t0), t0+blockT, T) - t0)
		}
	}
	// gAt returns g and g⊙R of row t into g1, g2.
	gAt := func(g1, g2 []F, b, t int) {
		d, sq, de, rr := row(dy, b, t), row(s.sq, b, t), row(s.den, b, t), row(s.r, b, t)
		for c := range g1 {
			g := F(0)
			if de[c] > 0 {
				g = d[c] * sq[c] / de[c]
			}
			g1[c], g2[c] = g, g*rr[c]
		}
	}

	// Block-local sums: Σ g and Σ g⊙R (bidirectional), or the block-local
	// suffix S at the block's first live row (causal), with the factors
	// e^{m[t]−m[t+1]} parked in dv.
	parallel.For(p.Threads, nblk, 1, func(w, lo, hi int) {
		g1, g2 := work[4*w*D:(4*w+1)*D], work[(4*w+1)*D:(4*w+2)*D]
		for it := lo; it < hi; it++ {
			b, t0 := it/nrb, (it%nrb)*blockT
			t1 := min(t0+blockT, T)
			s1, s2 := loc[it*2*D:it*2*D+D], loc[it*2*D+D:(it+1)*2*D]
			clear(s1)
			clear(s2)
			if !a.Causal {
				for t := t0; t < t1; t++ {
					gAt(g1, g2, b, t)
					kernels.AddTo(1, s1, g1)
					kernels.AddTo(1, s2, g2)
				}
				continue
			}
			for t := t1 - 1; t >= t0+int(dead[it]); t-- {
				f := row(dv, b, t)
				if t+1 < T {
					mr, mn := row(s.m, b, t), row(s.m, b, t+1)
					for c := range f {
						f[c] = mr[c] - mn[c]
					}
					kernels.Exp(f, f)
				} else {
					clear(f)
				}
				if t < t1-1 {
					for c := range s1 {
						s1[c] *= f[c]
						s2[c] *= f[c]
					}
				}
				gAt(g1, g2, b, t)
				kernels.AddTo(1, s1, g1)
				kernels.AddTo(1, s2, g2)
			}
		}
	})
	// Across blocks: totals (bidirectional) or the S entering each block at
	// t1 (causal): in[i] = loc[i+1] + e^{m[t0']−m[t1']}·in[i+1].
	for b := 0; b < p.B; b++ {
		if !a.Causal {
			tot := in[b*nrb*2*D : (b*nrb+1)*2*D]
			clear(tot)
			for blk := 0; blk < nrb; blk++ {
				kernels.AddTo(p.Threads, tot, loc[(b*nrb+blk)*2*D:(b*nrb+blk+1)*2*D])
			}
			for blk := 1; blk < nrb; blk++ {
				copy(in[(b*nrb+blk)*2*D:(b*nrb+blk+1)*2*D], tot)
			}
			continue
		}
		clear(in[(b*nrb+nrb-1)*2*D : (b*nrb+nrb)*2*D])
		for blk := nrb - 2; blk >= 0; blk-- {
			nx := blk + 1
			t0n, t1n := nx*blockT, min(nx*blockT+blockT, T)
			dst := in[(b*nrb+blk)*2*D : (b*nrb+blk+1)*2*D]
			copy(dst, loc[(b*nrb+nx)*2*D:(b*nrb+nx+1)*2*D])
			if dead[b*nrb+nx] > 0 || t1n >= T {
				continue // next block has dead rows (and so do all before it), or nothing enters it
			}
			src := in[(b*nrb+nx)*2*D : (b*nrb+nx+1)*2*D]
			m0, m1 := row(s.m, b, t0n), row(s.m, b, t1n)
			for c := 0; c < D; c++ {
				f := F(math.Exp(float64(m0[c] - m1[c])))
				dst[c] += f * src[c]
				dst[D+c] += f * src[D+c]
			}
		}
	}

	// Gradients, per block.
	parallel.For(p.Threads, nblk, 1, func(w, lo, hi int) {
		ws := work[4*w*D : 4*(w+1)*D]
		g1, g2, s1, s2 := ws[:D], ws[D:2*D], ws[2*D:3*D], ws[3*D:]
		for it := lo; it < hi; it++ {
			b, t0 := it/nrb, (it%nrb)*blockT
			t1 := min(t0+blockT, T)
			if !a.Causal {
				tot := in[b*nrb*2*D : (b*nrb+1)*2*D]
				copy(s1, tot[:D])
				copy(s2, tot[D:])
				for t := t0; t < t1; t++ {
					dk, dvr := row(dy, b, t), row(dv, b, t)
					if !p.Allowed(b, t) {
						clear(dk)
						clear(dvr)
						continue
					}
					ek, vr := row(s.ek, b, t), row(s.v, b, t)
					for c := range dk {
						dvr[c] = ek[c] * s1[c]
						dk[c] = ek[c] * (vr[c]*s1[c] - s2[c])
					}
				}
				continue
			}
			copy(s1, in[it*2*D:it*2*D+D])
			copy(s2, in[it*2*D+D:(it+1)*2*D])
			for t := t1 - 1; t >= t0; t-- {
				dk, dvr := row(dy, b, t), row(dv, b, t)
				if t < t0+int(dead[it]) {
					clear(dk)
					clear(dvr)
					continue
				}
				// dvr holds e^{m[t]−m[t+1]} (0 at t = T−1, where s is 0).
				for c := range s1 {
					s1[c] *= dvr[c]
					s2[c] *= dvr[c]
				}
				gAt(g1, g2, b, t)
				kernels.AddTo(1, s1, g1)
				kernels.AddTo(1, s2, g2)
				if !p.Allowed(b, t) {
					clear(dk)
					clear(dvr)
					continue
				}
				ek, vr := row(s.ek, b, t), row(s.v, b, t)
				for c := range dk {
					dvr[c] = ek[c] * s1[c]
					dk[c] = ek[c] * (vr[c]*s1[c] - s2[c])
				}
			}
		}
	})
}
