package aft

import (
	"math"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer"
)

// The banded engine serves aft_full, aft_local and aft_conv. Per sequence b
// and bias group h, row t of the mixing matrix is
//
//	a(t,t') = allowed(t,t')·( c0[t] + [t'−t−lo ∈ [0,W)]·(e^{w(t,t')−mw[t]} − c0[t]) ),
//
// the exp(w) weights shifted by the row maximum mw[t], written as a constant
// c0[t] = e^{−mw[t]} (the weight of the distant tokens, whose w is 0) plus a
// band correction of width W starting at offset lo. aft_full has c0 ≡ 0 and a
// band covering the whole row. With E = (e^{K−mK}⊙V | e^{K−mK}) [T,2·Dh],
//
//	(num | den)[t] = c0[t]·Σ_{allowed t'} E[t'] + Σ_band (e^{w−mw} − c0)·E[t'],
//
// the first sum a total (bidirectional) or prefix sum (causal), the second a
// product of a band tile with E computed by GEMM over blocks of rows.
// When no distant token is allowed in row t, c0[t] = 0, so the band alone
// carries the row and large |w| never cancels catastrophically.

// blockT is the number of rows per band tile.
const blockT = 64

// geom returns the band offset lo and width W at length T.
func (a *AFT[F]) geom(T int) (lo, W int) {
	switch a.v {
	case vFull:
		if a.Causal {
			return -(T - 1), T
		}
		return -(T - 1), 2*T - 1
	case vLocal:
		if a.Causal {
			return -(a.S - 1), a.S
		}
		return -(a.S - 1), 2*a.S - 1
	default: // vConv
		if a.Causal {
			return -(a.S - 1), a.S
		}
		return -(a.S - 1) / 2, a.S
	}
}

// tileCols is the widest band tile at length T.
func (a *AFT[F]) tileCols(T int) int {
	_, W := a.geom(T)
	return min(T, blockT+W-1)
}

// workerSize is one thread's tile space: a band tile [blockT, tileCols],
// then either a GEMM output [blockT, 2D] or a score tile plus one row, then
// aft_conv's partial rel_bias gradient [H,S].
func (a *AFT[F]) workerSize(T int) int {
	return a.partOff(T) + a.H*a.S
}

// partOff is the offset of the partial rel_bias gradient in a worker's
// space.
func (a *AFT[F]) partOff(T int) int {
	nc := a.tileCols(T)
	return blockT*nc + max(blockT*2*a.D, blockT*nc+nc)
}

// rowEnd returns the end of the columns of row t that causality allows.
func (a *AFT[F]) rowEnd(t, T int) int {
	if a.Causal {
		return t + 1
	}
	return T
}

// counts sets cnt[b*(T+1)+t] to the number of allowed tokens of sequence b
// before t.
func counts[F kernels.Float](cnt []F, p mixer.Pass) {
	for b := 0; b < p.B; b++ {
		c := cnt[b*(p.T+1) : (b+1)*(p.T+1)]
		c[0] = 0
		for t := 0; t < p.T; t++ {
			c[t+1] = c[t]
			if p.Allowed(b, t) {
				c[t+1]++
			}
		}
	}
}

// wRow writes the raw biases w(t,u) − mw for u in [ulo,uhi) of group h into
// seg.
func (a *AFT[F]) wRow(seg []F, t, h, ulo, lo int, mw F) {
	bias, _ := a.bias()
	switch a.v {
	case vConv:
		// u = t+lo+j has offset index o = S−1−j.
		base := h*a.S + a.S - 1 - (ulo - t - lo)
		for i := range seg {
			seg[i] = bias[base-i] - mw
		}
	default:
		row := bias[t*a.MaxLen+ulo : t*a.MaxLen+ulo+len(seg)]
		for i, v := range row {
			seg[i] = v - mw
		}
	}
}

// fill writes row t of group h over columns [u0,u1) into dst: the band
// weights e^{w−mw}, minus c0 when sub, zero outside the band, after causality
// and for padding.
func (a *AFT[F]) fill(dst []F, p mixer.Pass, b, t, h, u0, u1, lo, W int, mw, c0 F, sub bool) {
	dst = dst[:u1-u0]
	clear(dst)
	ulo, uhi := max(u0, t+lo), min(u1, t+lo+W, a.rowEnd(t, p.T))
	if ulo >= uhi {
		return
	}
	seg := dst[ulo-u0 : uhi-u0]
	a.wRow(seg, t, h, ulo, lo, mw)
	kernels.Exp(seg, seg)
	if !sub {
		c0 = 0
	}
	for i := range seg {
		if p.Allowed(b, ulo+i) {
			seg[i] -= c0
		} else {
			seg[i] = 0
		}
	}
}

// rowStats sets mw[t,h] (the row maximum of w over allowed t', counting the
// distant tokens' w = 0) and c0[t,h] (e^{−mw} if a distant token is allowed,
// else 0; always 0 without distant tokens: aft_full, or "distant": false).
// A row with no allowed token gets mw = 0, c0 = 0 and a zero band, so its
// den is 0 and R = 0.
func (a *AFT[F]) rowStats(s act[F], cnt []F, p mixer.Pass, b, t, lo, W int, scr []F) {
	T := p.T
	end := a.rowEnd(t, T)
	wlo, whi := max(0, t+lo), min(end, t+lo+W)
	c := cnt[b*(T+1):]
	outside := a.distant && c[end]-c[0] > c[max(whi, wlo)]-c[wlo]
	for h := 0; h < a.H; h++ {
		mx := math.Inf(-1)
		if wlo < whi {
			seg := scr[:whi-wlo]
			a.wRow(seg, t, h, wlo, lo, 0)
			for i, v := range seg {
				if float64(v) > mx && p.Allowed(b, wlo+i) {
					mx = float64(v)
				}
			}
		}
		if outside {
			mx = max(mx, 0)
		}
		i := (b*T+t)*a.H + h
		if math.IsInf(mx, -1) {
			s.mw[i], s.c0[i] = 0, 0
			continue
		}
		s.mw[i] = F(mx)
		s.c0[i] = 0
		if outside {
			s.c0[i] = F(math.Exp(-mx))
		}
	}
}

// bandForward fills e, mw, c0, r, den and y; k [B,T,D] is the key
// projection and scratch holds ScratchSize − B·T·D elements.
//
// Every phase streams whole rows, parallel over (sequence, row block of
// blockT): per-block channel maxima of K, reduced to mK; E and per-block
// sums of E, scanned over blocks into exclusive prefixes (causal) or
// totals; then per block the running prefix, the band GEMMs and the ratio.
func (a *AFT[F]) bandForward(s act[F], k, scratch []F, p mixer.Pass) {
	T, D, Dh, H := p.T, a.D, a.Dh, a.H
	lo, W := a.geom(T)
	nrb := (T + blockT - 1) / blockT
	nblk := p.B * nrb
	cnt := scratch[:p.B*(T+1)]
	mk := scratch[p.B*(T+1) : p.B*(T+1)+nblk*D]                 // [B,nrb,D] block maxima, then mK in block 0
	bs := scratch[p.B*(T+1)+nblk*D : p.B*(T+1)+nblk*D+nblk*2*D] // [B,nrb,2D] block sums of E
	work := scratch[p.B*(T+1)+nblk*3*D:]
	ws := a.workerSize(T)
	counts(cnt, p)
	sums := a.distant
	rows := func(b, blk int) (int, int) { return blk * blockT, min(blk*blockT+blockT, T) }

	// Block maxima of K over allowed rows (a block without any keeps −Inf).
	parallel.For(p.Threads, nblk, 1, func(_, lo2, hi2 int) {
		for it := lo2; it < hi2; it++ {
			b, blk := it/nrb, it%nrb
			t0, t1 := rows(b, blk)
			m := mk[it*D : (it+1)*D]
			for c := range m {
				m[c] = F(math.Inf(-1))
			}
			for t := t0; t < t1; t++ {
				if p.Allowed(b, t) {
					for c, v := range k[(b*T+t)*D : (b*T+t+1)*D] {
						m[c] = max(m[c], v)
					}
				}
			}
		}
	})
	for b := 0; b < p.B; b++ {
		m0 := mk[b*nrb*D : (b*nrb+1)*D]
		for blk := 1; blk < nrb; blk++ {
			for c, v := range mk[(b*nrb+blk)*D : (b*nrb+blk+1)*D] {
				m0[c] = max(m0[c], v)
			}
		}
		for c, v := range m0 {
			if math.IsInf(float64(v), -1) {
				m0[c] = 0 // no allowed token in the sequence
			}
		}
	}

	// E rows and block sums.
	parallel.For(p.Threads, nblk, 1, func(_, lo2, hi2 int) {
		for it := lo2; it < hi2; it++ {
			b, blk := it/nrb, it%nrb
			t0, t1 := rows(b, blk)
			m := mk[b*nrb*D : (b*nrb+1)*D]
			acc := bs[it*2*D : (it+1)*2*D]
			clear(acc)
			for t := t0; t < t1; t++ {
				er := s.e[(b*T+t)*2*D : (b*T+t+1)*2*D]
				if !p.Allowed(b, t) {
					clear(er)
					continue
				}
				kr, vr := k[(b*T+t)*D:(b*T+t+1)*D], s.v[(b*T+t)*D:(b*T+t+1)*D]
				for h := 0; h < H; h++ {
					ev, ek := er[h*2*Dh:h*2*Dh+Dh], er[h*2*Dh+Dh:(h+1)*2*Dh]
					kh, vh, mh := kr[h*Dh:(h+1)*Dh], vr[h*Dh:(h+1)*Dh], m[h*Dh:(h+1)*Dh]
					for j := range ek {
						ek[j] = kh[j] - mh[j]
					}
					kernels.Exp(ek, ek)
					for j, e := range ek {
						ev[j] = e * vh[j]
					}
				}
				if sums {
					kernels.AddTo(1, acc, er)
				}
			}
		}
	})
	if sums {
		blockScan(bs, p.B, nrb, 2*D, false, a.Causal)
	}

	// Per row block: row statistics, the band GEMMs and the ratio.
	parallel.For(p.Threads, nblk, 1, func(w, lo2, hi2 int) {
		ww := work[w*ws : (w+1)*ws]
		nc := a.tileCols(T)
		tile, nd := ww[:blockT*nc], ww[blockT*nc:blockT*nc+blockT*2*D]
		for it := lo2; it < hi2; it++ {
			b, blk := it/nrb, it%nrb
			t0, t1 := rows(b, blk)
			for t := t0; t < t1; t++ {
				a.rowStats(s, cnt, p, b, t, lo, W, tile)
			}
			cLo, cHi := max(0, t0+lo), min(T, t1-1+lo+W, a.rowEnd(t1-1, T))
			ncol := cHi - cLo
			for h := 0; h < H; h++ {
				for t := t0; t < t1; t++ {
					i := (b*T+t)*H + h
					a.fill(tile[(t-t0)*ncol:], p, b, t, h, cLo, cHi, lo, W, s.mw[i], s.c0[i], true)
				}
				kernels.Gemm(1, kernels.PrecFP32, false, false, t1-t0, 2*Dh, ncol, 1, tile, ncol,
					s.e[(b*T+cLo)*2*D+h*2*Dh:], 2*D, 0, nd[h*2*Dh:], 2*D)
			}
			acc := bs[it*2*D : (it+1)*2*D] // prefix before t0, or the total
			for t := t0; t < t1; t++ {
				ndr := nd[(t-t0)*2*D : (t-t0+1)*2*D]
				row := (b*T + t) * D
				if sums {
					if a.Causal {
						kernels.AddTo(1, acc, s.e[(b*T+t)*2*D:(b*T+t+1)*2*D])
					}
					for h := 0; h < H; h++ {
						c0 := s.c0[(b*T+t)*H+h]
						x, y := ndr[h*2*Dh:(h+1)*2*Dh], acc[h*2*Dh:(h+1)*2*Dh]
						for j := range x {
							x[j] += c0 * y[j]
						}
					}
				}
				for h := 0; h < H; h++ {
					num, den := ndr[h*2*Dh:h*2*Dh+Dh], ndr[h*2*Dh+Dh:(h+1)*2*Dh]
					c := row + h*Dh
					rr, dr, yr, sq := s.r[c:c+Dh], s.den[c:c+Dh], s.y[c:c+Dh], s.sq[c:c+Dh]
					for j := range num {
						r, de := F(0), den[j]
						if de > 0 {
							r = num[j] / de
						} else {
							de = 0
						}
						rr[j], dr[j], yr[j] = r, de, sq[j]*r
					}
				}
			}
		}
	})
}

// bandBackward turns dy into dk in place and writes dv, accumulating the
// bias gradient. scratch holds ScratchSize − 3·B·T·D elements.
//
// With g = dY⊙σ(Q)/den and Hh = (g | −g⊙R) [T,2D] (the sign lets one GEMM
// form the bias gradient), the transposed operator gives
// G = aᵀ·Hh = (G1 | −G2), and for allowed t'
//
//	dV[t'] = eK[t']⊙G1[t'],  dK[t'] = eK[t']⊙(V[t']⊙G1[t'] − G2[t']),
//	dw(t,t') = e^{w−mw}·Σ_{c in group} (g[t]⊙(eK⊙V)[t'] − g[t]⊙R[t]⊙eK[t'])_c.
func (a *AFT[F]) bandBackward(dy, dv []F, s act[F], scratch []F, p mixer.Pass) {
	T, D := p.T, a.D
	N := p.B * T
	lo, W := a.geom(T)
	nrb := (T + blockT - 1) / blockT
	nblk := p.B * nrb
	g := &bandGrad[F]{a: a, s: s, p: p, dy: dy, dv: dv,
		hh: scratch[:2*N*D], gg: scratch[2*N*D : 4*N*D],
		bs: scratch[4*N*D : 4*N*D+nblk*2*D], work: scratch[4*N*D+nblk*2*D:],
		lo: lo, W: W, nrb: nrb, nblk: nblk, ws: a.workerSize(T), sums: a.distant}
	g.rowGrads()
	if g.sums {
		g.blockSuffix()
	}
	g.columnGrads()
	g.keyValueGrads()
	g.biasGrad()
}

// bandGrad is one bandBackward call: its shapes and the views of its
// scratch, shared by the phases.
type bandGrad[F kernels.Float] struct {
	a      *AFT[F]
	s      act[F]
	p      mixer.Pass
	dy, dv []F
	hh     []F // [B,T,2D]: Hh = (g | −g⊙R) per row
	gg     []F // [B,T,2D]: G = aᵀ·Hh
	bs     []F // [B,nrb,2D]: block sums of c0⊙Hh, then their suffixes or totals
	work   []F // the worker tiles, ws each
	lo, W  int // the band
	nrb    int // row blocks per sequence
	nblk   int // row blocks in all
	ws     int
	sums   bool // the layer has distant tokens (c0), unlike aft_full
}

// rowGrads writes Hh and, with distant tokens, the block sums of c0⊙Hh.
func (g *bandGrad[F]) rowGrads() {
	a, s, p := g.a, g.s, g.p
	T, D, Dh, H := p.T, a.D, a.Dh, a.H
	nrb, nblk := g.nrb, g.nblk
	sums := g.sums
	dy, hh, bs := g.dy, g.hh, g.bs

	parallel.For(p.Threads, nblk, 1, func(_, lo2, hi2 int) {
		for it := lo2; it < hi2; it++ {
			b, t0 := it/nrb, (it%nrb)*blockT
			t1 := min(t0+blockT, T)
			acc := bs[it*2*D : (it+1)*2*D]
			clear(acc)
			for t := t0; t < t1; t++ {
				i := b*T + t
				for h := 0; h < H; h++ {
					o := i*2*D + h*2*Dh
					g1, g2 := hh[o:o+Dh], hh[o+Dh:o+2*Dh]
					c := i*D + h*Dh
					dyr, sqr, der, rr := dy[c:c+Dh], s.sq[c:c+Dh], s.den[c:c+Dh], s.r[c:c+Dh]
					for j := range g1 {
						g := F(0)
						if der[j] > 0 {
							g = dyr[j] * sqr[j] / der[j]
						}
						g1[j], g2[j] = g, -g*rr[j]
					}
					if sums {
						c0 := s.c0[i*H+h]
						x := acc[h*2*Dh : (h+1)*2*Dh]
						for j, v := range hh[o : o+2*Dh] {
							x[j] += c0 * v
						}
					}
				}
			}
		}
	})
}

// blockSuffix replaces the block sums by their exclusive suffixes over
// the blocks (causal) or puts the total in every block.
func (g *bandGrad[F]) blockSuffix() {
	blockScan(g.bs, g.p.B, g.nrb, 2*g.a.D, true, g.a.Causal)
}

// blockScan replaces the block sums bs [B,nrb,w] of each sequence by their
// exclusive prefix sums over the blocks (suffix sums with reverse) when
// causal, or by the sequence's total in every block.
func blockScan[F kernels.Float](bs []F, B, nrb, w int, reverse, causal bool) {
	tmp := make([]F, w)
	for b := range B {
		clear(tmp)
		for i := range nrb {
			blk := i
			if reverse {
				blk = nrb - 1 - i
			}
			x := bs[(b*nrb+blk)*w : (b*nrb+blk+1)*w]
			for j := range x {
				x[j], tmp[j] = tmp[j], tmp[j]+x[j]
			}
		}
		if !causal {
			for blk := range nrb {
				copy(bs[(b*nrb+blk)*w:(b*nrb+blk+1)*w], tmp)
			}
		}
	}
}

// columnGrads writes G per column block of 64 keys.
func (g *bandGrad[F]) columnGrads() {
	a, s, p := g.a, g.s, g.p
	T, D, Dh, H := p.T, a.D, a.Dh, a.H
	nrb, nblk := g.nrb, g.nblk
	lo, W, ws, sums := g.lo, g.W, g.ws, g.sums
	hh, gg, bs, work := g.hh, g.gg, g.bs, g.work

	// Per column block [u0,u1): G rows get the c0 part (running suffix or
	// total), then G += band tileᵀ·Hh over the rows whose band reaches the
	// block.
	parallel.For(p.Threads, nblk, 1, func(w, lo2, hi2 int) {
		tile := work[w*ws : w*ws+blockT*a.tileCols(T)]
		for it := lo2; it < hi2; it++ {
			b, u0 := it/nrb, (it%nrb)*blockT
			u1 := min(u0+blockT, T)
			nu := u1 - u0
			acc := bs[it*2*D : (it+1)*2*D]
			for t := u1 - 1; t >= u0; t-- {
				gr := gg[(b*T+t)*2*D : (b*T+t+1)*2*D]
				switch {
				case !sums:
					clear(gr)
				case a.Causal:
					i := b*T + t
					for h := 0; h < H; h++ {
						c0 := s.c0[i*H+h]
						x := acc[h*2*Dh : (h+1)*2*Dh]
						for j, v := range hh[i*2*D+h*2*Dh : i*2*D+(h+1)*2*Dh] {
							x[j] += c0 * v
						}
					}
					copy(gr, acc)
				default:
					copy(gr, acc)
				}
			}
			rLo, rHi := max(0, u0-lo-W+1), min(T, u1-lo)
			if a.Causal {
				rLo = max(rLo, u0)
			}
			if rLo >= rHi {
				continue
			}
			for h := 0; h < H; h++ {
				for t := rLo; t < rHi; t++ {
					i := (b*T+t)*H + h
					a.fill(tile[(t-rLo)*nu:], p, b, t, h, u0, u1, lo, W, s.mw[i], s.c0[i], true)
				}
				kernels.Gemm(1, kernels.PrecFP32, true, false, nu, 2*Dh, rHi-rLo, 1, tile, nu,
					hh[(b*T+rLo)*2*D+h*2*Dh:], 2*D, 1, gg[(b*T+u0)*2*D+h*2*Dh:], 2*D)
			}
		}
	})
}

// keyValueGrads writes dV and dK (into dy) per row.
func (g *bandGrad[F]) keyValueGrads() {
	a, s, p := g.a, g.s, g.p
	T, D, Dh, H := p.T, a.D, a.Dh, a.H
	N := p.B * T
	dy, dv, gg := g.dy, g.dv, g.gg

	parallel.For(p.Threads, N, 16, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			b, t := i/T, i%T
			if !p.Allowed(b, t) {
				clear(dy[i*D : (i+1)*D])
				clear(dv[i*D : (i+1)*D])
				continue
			}
			for h := 0; h < H; h++ {
				o, c0 := i*2*D+h*2*Dh, i*D+h*Dh
				ek, g1, g2 := s.e[o+Dh:o+2*Dh], gg[o:o+Dh], gg[o+Dh:o+2*Dh]
				vr, dvr, dkr := s.v[c0:c0+Dh], dv[c0:c0+Dh], dy[c0:c0+Dh]
				for j := range ek {
					dvr[j] = ek[j] * g1[j]
					dkr[j] = ek[j] * (vr[j]*g1[j] + g2[j])
				}
			}
		}
	})
}

// biasGrad accumulates the pos_bias or rel_bias gradient.
func (g *bandGrad[F]) biasGrad() {
	a, s, p := g.a, g.s, g.p
	T, D, Dh, H := p.T, a.D, a.Dh, a.H
	nrb := g.nrb
	lo, W, ws := g.lo, g.W, g.ws
	hh, work := g.hh, g.work

	// Per row block with the sequences inside (pos_bias rows belong to one
	// block), or per (sequence, block) with per-thread partial sums
	// (rel_bias).
	_, gbias := a.bias()
	conv := a.v == vConv
	items := nrb
	if conv {
		items = p.B * nrb
	}
	nc, po := a.tileCols(T), a.partOff(T)
	th := p.Threads
	for w := 0; w < th; w++ {
		clear(work[w*ws+po : (w+1)*ws])
	}
	parallel.For(th, items, 1, func(w, lo2, hi2 int) {
		ww := work[w*ws : (w+1)*ws]
		m, arow := ww[blockT*nc:2*blockT*nc], ww[2*blockT*nc:2*blockT*nc+nc]
		part := ww[po : po+H*a.S]
		for it := lo2; it < hi2; it++ {
			b0, b1 := 0, p.B
			blk := it
			if conv {
				b0, b1, blk = it/nrb, it/nrb+1, it%nrb
			}
			t0 := blk * blockT
			t1 := min(t0+blockT, T)
			cLo, cHi := max(0, t0+lo), min(T, t1-1+lo+W, a.rowEnd(t1-1, T))
			ncol := cHi - cLo
			for b := b0; b < b1; b++ {
				for h := 0; h < H; h++ {
					hb := hh[(b*T+t0)*2*D+h*2*Dh:]
					eb := s.e[(b*T+cLo)*2*D+h*2*Dh:]
					kernels.Gemm(1, kernels.PrecFP32, false, true, t1-t0, ncol, 2*Dh, 1, hb, 2*D, eb, 2*D, 0, m, ncol)
					for t := t0; t < t1; t++ {
						i := (b*T+t)*H + h
						a.fill(arow, p, b, t, h, cLo, cHi, lo, W, s.mw[i], 0, false)
						mr := m[(t-t0)*ncol : (t-t0+1)*ncol]
						ulo, uhi := max(cLo, t+lo), min(cHi, t+lo+W, a.rowEnd(t, T))
						if conv {
							// u = t+lo+j ↦ rel_bias[h, S−1−j].
							for u := ulo; u < uhi; u++ {
								part[h*a.S+a.S-1-(u-t-lo)] += arow[u-cLo] * mr[u-cLo]
							}
							continue
						}
						gr := gbias[t*a.MaxLen:]
						for u := ulo; u < uhi; u++ {
							gr[u] += arow[u-cLo] * mr[u-cLo]
						}
					}
				}
			}
		}
	})
	if conv {
		for w := 0; w < th; w++ {
			kernels.AddTo(th, gbias, work[w*ws+po:w*ws+po+H*a.S])
		}
	}
}
