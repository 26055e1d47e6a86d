package attn

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"sync/atomic"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer"
)

// Shapes: B batch, T time, D channels, H heads, Dh = D/H head size.
// q, k, v, o are [B,T,D] with head h in channels [h·Dh, (h+1)·Dh), so a
// head's rows are read in place with row stride D; only the score GEMMs read
// per-head transposed copies of k and v (transpose.go).

// dims are the sizes one Forward/Backward call works on.
type dims struct {
	B, T, D, H, Dh int
	scale          float64 // 1/√Dh
	// s is the key stride with a permuted transposed copy (0: none), see
	// transpose.go.
	s int
	// slopes are the per-head ALiBi slopes (nil: no position bias): the
	// score of query i and key j gets −slopes[h]·|i−j| after scaling.
	slopes []float64
	// prec is the arithmetic of the score and value products.
	prec kernels.Prec
	// round: bf16 products on a kernels path that widens bf16 values to
	// float32 (kernels.BF16Widens). q, k and v hold bf16 values already
	// (16-bit storage); backward rounds dO once the row sums D_i have
	// read it, and each tile rounds P and dS before their products, which
	// then run in float32 (prec) without packing.
	round bool
	// threads is the call's thread budget (Pass.Threads resolved, ≥ 1).
	threads int
}

// biasScores adds the ALiBi bias −slope·|i−j| to the nq×nk score tile s of
// blk (gl is the layout's Gather list, for gathered blocks). tab is the
// head's bias by offset, tab[j − i + n − 1] = −slope·|i − j| for lengths up
// to n (see Attention.biasTable): a block of consecutive keys adds one
// slice of it per row.
func biasScores[F kernels.Float](s []F, blk *Block, gl []int, tab []F, n int) {
	nq, nk := blk.NQ, blk.NK
	for a := 0; a < nq; a++ {
		i := blk.Q0 + a*blk.QS
		row := s[a*nk : (a+1)*nk]
		if !blk.Gathered && blk.KS == 1 {
			off := blk.K0 - i + n - 1
			kernels.AddTo(1, row, tab[off:off+nk])
			continue
		}
		for c := range row {
			j := blk.K0 + c*blk.KS
			if blk.Gathered {
				j = gl[j]
			}
			row[c] += tab[j-i+n-1]
		}
	}
}

// addBias adds head h's ALiBi bias to the score tile s of blk (biasScores
// on that head's row of the table); without ALiBi it does nothing.
func (ks *keySrc[F]) addBias(s []F, blk *Block, gl []int, h int) {
	if ks.bias == nil {
		return
	}
	w := 2*ks.biasN - 1
	biasScores(s, blk, gl, ks.bias[h*w:(h+1)*w], ks.biasN)
}

// bias is the ALiBi bias of query i and key j in head h (0 without slopes).
func (d *dims) bias(h, i, j int) float64 {
	if d.slopes == nil {
		return 0
	}
	return d.slopes[h] * float64(abs(i-j))
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// workerSize is the scratch one worker needs: a score tile and a dP tile.
func workerSize(t Tiles) int {
	n := t.Q * t.K
	return (2*n + 15) &^ 15 // keep every worker's tiles 64-byte congruent
}

// runUnits runs fn(w, u) for u in [0,n) on up to nw workers, at most
// threads of them, that pull units from a shared counter (dynamic
// scheduling: groups differ in cost). Every unit runs exactly once; w < nw
// indexes per-worker scratch.
func runUnits(threads, nw, n int, fn func(w, u int)) {
	nw = min(nw, n, threads)
	if nw <= 1 {
		for u := 0; u < n; u++ {
			fn(0, u)
		}
		return
	}
	var next atomic.Int64
	parallel.For(threads, nw, 1, func(_, lo, hi int) {
		for w := lo; w < hi; w++ {
			for {
				u := int(next.Add(1) - 1)
				if u >= n {
					break
				}
				fn(w, u)
			}
		}
	})
}

type unit struct{ b, h, g, cost int }

// sortUnits orders us by decreasing cost, stably.
func sortUnits(us []unit) {
	slices.SortStableFunc(us, func(a, b unit) int { return cmp.Compare(b.cost, a.cost) })
}

// forward computes the attention of every head over its layout:
// o = softmax(scale·q·kᵀ over allowed keys)·v, written into o [B,T,D], and
// the per-row log-sum-exp into lse [B,H,T] (+Inf for a row with no allowed
// key, whose output is 0). l [B,H,T] is scratch for the running row sums;
// ks holds k, v and the scratch for their transposed and gathered copies;
// work holds nw worker tiles of workerSize(tiles) each; units is kept
// between calls for the list of work units. Keys j with p.Pad[b·T+j] are
// excluded.
func forward[F kernels.Float](o, lse, l []F, ks *keySrc[F], work []F, q []F, lay []*Layout, d dims, p mixer.Pass, tiles Tiles, units *[]unit) {
	B, T, D, H := d.B, d.T, d.D, d.H
	pclear(d.threads, o[:B*T*D])
	ninf := F(math.Inf(-1))
	for i := range lse[:B*H*T] {
		lse[i] = ninf // running max m
	}
	clear(l[:B*H*T])
	if !ks.hp.coversAll(lay) {
		ks.kt.fill(ks.k, d, lay, ks.panels)
	}
	ks.g.fill(ks.k, ks.v, d, lay)
	ks.lay = lay
	ws, tn := workerSize(tiles), tiles.Q*tiles.K
	nw := len(work) / ws
	if nw < 1 {
		panic("attn: scratch too small")
	}
	nph := 0
	for _, ly := range lay {
		nph = max(nph, len(ly.Phases))
	}
	us := *units
	for ph := 0; ph < nph; ph++ {
		us = us[:0]
		for h := 0; h < H; h++ {
			if ph >= len(lay[h].Phases) {
				continue
			}
			for g, gr := range lay[h].Phases[ph].Groups {
				for b := 0; b < B; b++ {
					us = append(us, unit{b, h, g, gr.Cost})
				}
			}
		}
		sortUnits(us)
		if ks.hp != nil {
			ks.hp.growTiles(nw)
		}
		runUnits(d.threads, nw, len(us), func(w, u int) {
			un := us[u]
			gr := &lay[un.h].Phases[ph].Groups[un.g]
			s, alpha := work[w*ws:w*ws+tn], work[w*ws+tn:w*ws+2*tn]
			for bi := range gr.Blocks {
				blk := &gr.Blocks[bi]
				if blk.Diag {
					fwdDiag(o, lse, l, q, ks.k, ks.v, blk, d, p, un.b, un.h)
				} else {
					fwdBlock(o, lse, l, s, alpha, q, ks, lay[un.h].Gather, blk, d, p, un.b, un.h, w)
				}
			}
		})
	}
	*units = us
	// Normalise: o /= l, lse = m + log l.
	parallel.For(d.threads, B*T, 64, func(_, lo, hi int) {
		for r := lo; r < hi; r++ {
			b, i := r/T, r%T
			for h := 0; h < H; h++ {
				si := (b*H+h)*T + i
				orow := o[r*D+h*d.Dh : r*D+(h+1)*d.Dh]
				if l[si] == 0 {
					clear(orow)
					lse[si] = F(math.Inf(1))
					continue
				}
				inv := 1 / l[si]
				for c := range orow {
					orow[c] *= inv
				}
				lse[si] += F(math.Log(float64(l[si])))
			}
		}
	})
}

// maskScores sets the disallowed entries of the nq×nk score tile s to −Inf:
// pairs outside blk's mask and keys that are padding (gl is the layout's
// Gather list, for gathered blocks).
func maskScores[F kernels.Float](s []F, blk *Block, gl []int, d dims, p mixer.Pass, b int) {
	nq, nk := blk.NQ, blk.NK
	ninf := F(math.Inf(-1))
	if blk.Mask != nil {
		// 64 pairs at a time: only the disallowed ones are visited, a run
		// of them (a causal tile's row tail) copied from ninfs.
		var ninfs [64]F
		for i := range ninfs {
			ninfs[i] = ninf
		}
		for a := 0; a < nq; a++ {
			row := s[a*nk : (a+1)*nk]
			for c0 := 0; c0 < nk; c0 += 64 {
				n := min(64, nk-c0)
				z := ^maskBits(blk.Mask, a*nk+c0, n) & (1<<n - 1)
				if z == 0 {
					continue
				}
				lo := bits.TrailingZeros64(z)
				if run := z >> lo; run&(run+1) == 0 { // one run of ones
					copy(row[c0+lo:c0+lo+bits.OnesCount64(run)], ninfs[:])
					continue
				}
				for ; z != 0; z &= z - 1 {
					row[c0+bits.TrailingZeros64(z)] = ninf
				}
			}
		}
	}
	if p.Pad != nil {
		pad := p.Pad[b*d.T : (b+1)*d.T]
		for c := 0; c < nk; c++ {
			j := blk.K0 + c*blk.KS
			if blk.Gathered {
				j = gl[j]
			}
			if pad[j] {
				for a := 0; a < nq; a++ {
					s[a*nk+c] = ninf
				}
			}
		}
	}
}

// maskBits returns the n ≤ 64 bits of the bit set m starting at bit off,
// in the low bits.
func maskBits(m []uint64, off, n int) uint64 {
	i, sh := off>>6, off&63
	v := m[i] >> sh
	if sh+n > 64 {
		v |= m[i+1] << (64 - sh)
	}
	return v
}

// fwdBlock runs one block of forward on worker w; s is the score tile,
// alpha scratch for a factor per row.
func fwdBlock[F kernels.Float](o, m, l, s, alpha []F, q []F, ks *keySrc[F], gl []int, blk *Block, d dims, p mixer.Pass, b, h, w int) {
	T, D, Dh := d.T, d.D, d.Dh
	nq, nk := blk.NQ, blk.NK
	s = s[:nq*nk]
	qoff := (b*T+blk.Q0)*D + h*Dh
	hp, u := ks.hp, b*d.H+h
	packed := hp.covers(blk)
	if packed {
		hp.scores(any(s).([]float32), float32(d.scale), blk, d, u)
	} else {
		ks.scores(s, F(d.scale), q[qoff:], blk.QS*D, false, blk, d, b, h)
	}
	ks.addBias(s, blk, gl, h)
	maskScores(s, blk, gl, d, p, b)
	si := (b*d.H+h)*T + blk.Q0
	alpha = alpha[:nq]
	if packed { // P in bf16 straight from the exps
		pa := &hp.tiles[w].dsa
		f := kernels.F32[F]
		kernels.OnlineSoftmaxBF16(f(s), nq, nk, f(m[si:]), f(l[si:]), blk.QS, f(alpha), pa)
		kernels.ScaleRows(o[qoff:], nq, Dh, blk.QS*D, alpha)
		vb := hp.vb[u].View(blk.K0, nk, 0, Dh)
		kernels.GemmBF16(1, 1, kernels.PackedA(pa), kernels.PackedB(&vb), 1, f(o)[qoff:], D)
		return
	}
	kernels.OnlineSoftmax(s, nq, nk, m[si:], l[si:], blk.QS, alpha)
	kernels.ScaleRows(o[qoff:], nq, Dh, blk.QS*D, alpha)
	if d.round {
		kernels.RoundBF16(1, any(s).([]float32))
	}
	vr, lv := ks.rows(ks.v, ks.vh, ks.g.v, blk, d, b, h)
	kernels.Gemm(1, d.prec, false, false, nq, Dh, nk, 1, s, nk, vr, lv, 1, o[qoff:], blk.QS*D)
}

func fwdDiag[F kernels.Float](o, m, l []F, q, k, v []F, blk *Block, d dims, p mixer.Pass, b, h int) {
	T, D, Dh := d.T, d.D, d.Dh
	for a := 0; a < blk.NQ; a++ {
		i, j := blk.Q0+a*blk.QS, blk.K0+a*blk.KS
		if p.Pad != nil && p.Pad[b*T+j] {
			continue
		}
		qi := q[(b*T+i)*D+h*Dh : (b*T+i)*D+(h+1)*Dh]
		kj := k[(b*T+j)*D+h*Dh : (b*T+j)*D+(h+1)*Dh]
		vj := v[(b*T+j)*D+h*Dh : (b*T+j)*D+(h+1)*Dh]
		orow := o[(b*T+i)*D+h*Dh : (b*T+i)*D+(h+1)*Dh]
		sc := dot(qi, kj)*F(d.scale) - F(d.bias(h, i, j))
		si := (b*d.H+h)*T + i
		mOld := m[si]
		mNew := max(mOld, sc)
		al := F(math.Exp(float64(mOld - mNew)))
		pe := F(math.Exp(float64(sc - mNew)))
		l[si] = l[si]*al + pe
		m[si] = mNew
		for c := range orow {
			orow[c] = orow[c]*al + pe*vj[c]
		}
	}
}

// backward accumulates dq, dk, dv [B,T,D] given do [B,T,D] (the gradient of
// forward's o), the forward's o and lse, and the same q, k, v, layouts and
// pass (ks also holds dk, dv and the scratch for the transposed and gathered
// copies). drow [B,H,T] is scratch for rowsum(do ⊙ o). It recomputes every score
// tile (FlashAttention-2): P = exp(S − lse), dS = P ⊙ (dP − rowsum(dO ⊙ O)).
// Work is split over (batch, head): each unit owns its head's dq, dk, dv.
func backward[F kernels.Float](dq, drow []F, ks *keySrc[F], work []F, do, o, lse, q []F, lay []*Layout, d dims, p mixer.Pass, tiles Tiles, units *[]unit) {
	B, T, D, H, Dh := d.B, d.T, d.D, d.H, d.Dh
	parallel.For(d.threads, B*T, 64, func(_, lo, hi int) {
		for r := lo; r < hi; r++ {
			b, i := r/T, r%T
			for h := 0; h < H; h++ {
				drow[(b*H+h)*T+i] = dot(do[r*D+h*Dh:r*D+(h+1)*Dh], o[r*D+h*Dh:r*D+(h+1)*Dh])
			}
		}
	})
	if d.round {
		kernels.RoundBF16(d.threads, any(do[:B*T*D]).([]float32))
	}
	if !ks.hp.coversAll(lay) {
		ks.kt.fill(ks.k, d, lay, ks.panels)
		ks.vt.fill(ks.v, d, lay, ks.panels)
	}
	ks.g.fill(ks.k, ks.v, d, lay)
	ks.lay = lay
	ws, tn := workerSize(tiles)+ks.tg, tiles.Q*tiles.K
	nw := len(work) / ws
	if nw < 1 {
		panic("attn: scratch too small")
	}
	us := (*units)[:0]
	for h := 0; h < H; h++ {
		for b := 0; b < B; b++ {
			us = append(us, unit{b: b, h: h, cost: lay[h].Cost})
		}
	}
	*units = us
	sortUnits(us)
	if ks.hp != nil {
		ks.hp.growTiles(nw)
	}
	runUnits(d.threads, nw, len(us), func(w, u int) {
		un := us[u]
		s := work[w*ws : w*ws+tn]
		dp := work[w*ws+tn : w*ws+2*tn]
		var dkT, dvT []F // transposed dK, dV [Dh, T+16] (heads.go)
		if ks.tg > 0 {
			n, o := Dh*ldT(T), w*ws+workerSize(tiles)
			dkT, dvT = work[o:o+n], work[o+n:o+2*n]
			clear(dkT)
			clear(dvT)
		}
		gl := lay[un.h].Gather
		if gl != nil {
			ks.g.clearGrads(d, un.b, un.h)
		}
		for _, ph := range lay[un.h].Phases {
			for _, gr := range ph.Groups {
				for bi := range gr.Blocks {
					blk := &gr.Blocks[bi]
					if blk.Diag {
						bwdDiag(dq, ks.dk, ks.dv, drow, do, lse, q, ks.k, ks.v, blk, d, p, un.b, un.h)
					} else {
						bwdBlock(dq, s, dp, dkT, dvT, drow, do, lse, q, ks, gl, blk, d, p, un.b, un.h, w)
					}
				}
			}
		}
		if gl != nil {
			ks.g.scatter(ks.dk, ks.dv, gl, d, un.b, un.h)
		}
		if dkT != nil {
			addTransposed(ks.dk, dkT, d, un.b, un.h)
			addTransposed(ks.dv, dvT, d, un.b, un.h)
		}
	})
	if ks.hp != nil {
		ks.hp.addKeyGrads(any(ks.dk).([]float32), any(ks.dv).([]float32), d)
	}
}

// bwdBlock runs one block of backward on worker w. With dkT and dvT
// (narrow heads, see heads.go), a block of contiguous keys accumulates dKᵀ
// and dVᵀ there.
func bwdBlock[F kernels.Float](dq, s, dp, dkT, dvT, drow, do, lse, q []F, ks *keySrc[F], gl []int, blk *Block, d dims, p mixer.Pass, b, h, w int) {
	T, D, Dh := d.T, d.D, d.Dh
	nq, nk := blk.NQ, blk.NK
	s, dp = s[:nq*nk], dp[:nq*nk]
	qoff := (b*T+blk.Q0)*D + h*Dh
	lq := blk.QS * D
	sc := F(d.scale)
	kr, lk := ks.rows(ks.k, ks.kh, ks.g.k, blk, d, b, h)
	dkr, ldk := ks.rows(ks.dk, nil, ks.g.dk, blk, d, b, h)
	dvr, _ := ks.rows(ks.dv, nil, ks.g.dv, blk, d, b, h)
	qr, lqr := qrows(q, ks.qh, blk, d, b, h)
	dor, ldo := qrows(do, ks.doh, blk, d, b, h)
	trans, ldt := dkT != nil && blk.KS == 1 && !blk.Gathered, ldT(T)
	hp, u := ks.hp, b*d.H+h
	packed := hp.covers(blk)
	if packed {
		hp.scores(any(s).([]float32), float32(sc), blk, d, u)
	} else {
		ks.scores(s, sc, q[qoff:], lq, false, blk, d, b, h)
	}
	ks.addBias(s, blk, gl, h)
	maskScores(s, blk, gl, d, p, b)
	si := (b*d.H+h)*T + blk.Q0
	// P = exp(S − lse), dP = dO·Vᵀ, dS = P ⊙ (dP − D_i);
	// dV += Pᵀ·dO;  dQ += scale·dS·K;  dK += scale·dSᵀ·Q
	if packed {
		a := hp.doa[u].Rows(blk.Q0, nq)
		vt := hp.vt[u].View(0, Dh, blk.K0, nk)
		kernels.GemmBF16(1, 1, kernels.PackedA(&a), kernels.PackedB(&vt), 0, any(dp).([]float32), nk)
		tp := &hp.tiles[w]
		kernels.ExpSubMulPackBF16(&tp.dsa, &tp.dsb, &tp.pb, any(s).([]float32), any(dp).([]float32), nq, nk, any(lse[si:]).([]float32), blk.QS, any(drow[si:]).([]float32), blk.QS)
		kb := hp.kb[u].View(blk.K0, nk, 0, Dh)
		kernels.GemmBF16(1, float32(sc), kernels.PackedA(&tp.dsa), kernels.PackedB(&kb), 1, any(dq).([]float32)[qoff:], lq)
		hp.keyGrads(tp, float32(sc), blk, d, u)
		return
	}
	kernels.ExpSubRows(s, nq, nk, lse[si:], blk.QS) // P
	ks.scores(dp, 1, do[qoff:], lq, true, blk, d, b, h)
	kernels.SubMulRows(dp, s, nq, nk, drow[si:], blk.QS)
	if d.round {
		kernels.RoundBF16(1, any(s).([]float32))
		kernels.RoundBF16(1, any(dp).([]float32))
	}
	if trans {
		kernels.Gemm(1, d.prec, true, false, Dh, nk, nq, 1, dor, ldo, s, nk, 1, dvT[blk.K0:], ldt)
	} else {
		kernels.Gemm(1, d.prec, true, false, nk, Dh, nq, 1, s, nk, dor, ldo, 1, dvr, ldk)
	}
	kernels.Gemm(1, d.prec, false, false, nq, Dh, nk, sc, dp, nk, kr, lk, 1, dq[qoff:], lq)
	if trans {
		kernels.Gemm(1, d.prec, true, false, Dh, nk, nq, sc, qr, lqr, dp, nk, 1, dkT[blk.K0:], ldt)
		return
	}
	kernels.Gemm(1, d.prec, true, false, nk, Dh, nq, sc, dp, nk, qr, lqr, 1, dkr, ldk)
}

func bwdDiag[F kernels.Float](dq, dk, dv, drow, do, lse, q, k, v []F, blk *Block, d dims, p mixer.Pass, b, h int) {
	T, D, Dh := d.T, d.D, d.Dh
	sc := F(d.scale)
	for a := 0; a < blk.NQ; a++ {
		i, j := blk.Q0+a*blk.QS, blk.K0+a*blk.KS
		if p.Pad != nil && p.Pad[b*T+j] {
			continue
		}
		ri, rj := (b*T+i)*D+h*Dh, (b*T+j)*D+h*Dh
		qi, kj, vj := q[ri:ri+Dh], k[rj:rj+Dh], v[rj:rj+Dh]
		doi := do[ri : ri+Dh]
		si := (b*d.H+h)*T + i
		pe := F(math.Exp(float64(dot(qi, kj)*sc - F(d.bias(h, i, j)) - lse[si])))
		ds := pe * (dot(doi, vj) - drow[si]) * sc
		dqi, dkj, dvj := dq[ri:ri+Dh], dk[rj:rj+Dh], dv[rj:rj+Dh]
		for c := 0; c < Dh; c++ {
			dvj[c] += pe * doi[c]
			dqi[c] += ds * kj[c]
			dkj[c] += ds * qi[c]
		}
	}
}
