package attn

import (
	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/parallel"
)

// Score GEMMs (S = q·kᵀ, dP = dO·vᵀ) read keys as the B operand transposed.
// Packing a transposed operand is a scatter, so the kernels first copy each
// head of k and v into transposed form [Dh, columns] once per pass (O(T·D)),
// and the GEMMs then pack plain rows. A block whose keys are contiguous
// (KS = 1) reads the natural copy, column j for position j. A block whose
// keys are a progression with the pattern's stride s (the Sparse
// Transformer's strided and summary keys) reads the permuted copy, where
// position j sits at column (j mod s)·⌈T/s⌉ + ⌊j/s⌋, so a progression is
// contiguous there too (OpenAI's transpose trick). Other blocks fall back to
// a transposed GEMM operand. Rows are padded by 16 columns so that the Dh
// rows of a copy do not share cache sets when T is a power of two.
//
// When every contiguous block of a head's layout lies within one panel of
// PanelCols columns (Layout.Panels, as full attention's tiles do), the
// natural copy of that head is stored in panels instead: panel p holds
// columns [p·PanelCols, (p+1)·PanelCols) as Dh rows of PanelCols, which is
// the packed layout of the score product's B operand, so a whole block's
// keys are read in place and only a shorter last block is packed.

// tshape is the column layout of a transposed copy: natural (s = 0) or
// permuted by residue class mod s.
type tshape struct{ s, nC, ld int }

func newTShape(T, s int) tshape {
	if s <= 1 {
		// Whole panels, so that a head's Dh·ld elements hold its panels.
		return tshape{ld: (T+PanelCols-1)/PanelCols*PanelCols + 16}
	}
	nC := (T + s - 1) / s
	return tshape{s: s, nC: nC, ld: s*nC + 16}
}

// col is the column of position j; pos is the position of column c (≥ T
// for the padding columns of short classes).
func (t tshape) col(j int) int {
	if t.s == 0 {
		return j
	}
	return j%t.s*t.nC + j/t.s
}

func (t tshape) pos(c int) int {
	if t.s == 0 {
		return c
	}
	return c%t.nC*t.s + c/t.nC
}

// tcopySize is the number of elements of one tcopy for b sequences of
// length t, d channels and permutation stride s (0: none).
func tcopySize(b, t, d, s int) int {
	n := b * d * newTShape(t, 0).ld
	if s > 1 {
		n += b * d * newTShape(t, s).ld
	}
	return n
}

// tcopy is the transposed copy of k or v: nat [B,H,Dh,ld] in natural column
// order and, when the pattern has a stride, per [B,H,Dh,ld'] permuted.
type tcopy[F kernels.Float] struct {
	nat, per []F
}

// newTCopy carves a tcopy out of buf (tcopySize elements).
func newTCopy[F kernels.Float](buf []F, b, t, d, s int) tcopy[F] {
	n := b * d * newTShape(t, 0).ld
	c := tcopy[F]{nat: buf[:n]}
	if s > 1 {
		c.per = buf[n : n+b*d*newTShape(t, s).ld]
	}
	return c
}

// fill transposes x [B,T,D] into the copies each head's layout reads, the
// natural copy in panels where the layout allows it and panels is set.
func (c tcopy[F]) fill(x []F, d dims, lay []*Layout, panels bool) {
	transposeHeads(c.nat, x, d, newTShape(d.T, 0), lay, func(l *Layout) bool { return l.Contig }, panels)
	if d.s > 1 {
		transposeHeads(c.per, x, d, newTShape(d.T, d.s), lay, func(l *Layout) bool { return l.Stride == d.s }, false)
	}
}

// keySrc is where the block kernels read keys in one pass: k and v
// [B,T,D], their transposed copies, the gathered copies, and in backward
// the gradients dk and dv [B,T,D].
type keySrc[F kernels.Float] struct {
	hp           *headPacks // the bf16 packed operands (precision bf16), or nil
	k, v, dk, dv []F
	// vh (forward), kh, qh and doh (backward) are head-major copies
	// [B,H,T,Dh] of v, k, q and dO (heads.go), or nil.
	vh, kh, qh, doh []F
	kt, vt          tcopy[F]
	g               gbuf[F]
	bias            []F // ALiBi bias by offset [H, 2·biasN−1], or nil
	biasN           int // the longest length bias serves (Attention.biasTable)
	// lay is the pass's layouts, one per head. With panels, a head whose
	// layout has Panels keeps its natural transposed copies in panels.
	lay    []*Layout
	panels bool
	// tg is a worker's room for backward's transposed dK and dV (0: none;
	// see heads.go).
	tg int
}

// rows returns the block's first key row of x [B,T,D] (of its gathered
// copy gx [B,H,n,Dh] for a gathered block, else of its head-major copy xh
// [B,H,T,Dh] when there is one) and the row stride.
func (ks *keySrc[F]) rows(x, xh, gx []F, blk *Block, d dims, b, h int) ([]F, int) {
	switch {
	case blk.Gathered:
		return gx[((b*d.H+h)*ks.g.n+blk.K0)*d.Dh:], blk.KS * d.Dh
	case xh != nil:
		return xh[((b*d.H+h)*d.T+blk.K0)*d.Dh:], blk.KS * d.Dh
	}
	return x[(b*d.T+blk.K0)*d.D+h*d.Dh:], blk.KS * d.D
}

// scores sets s [NQ,NK] = alpha·A·Xᵀ for the block's keys, where A is NQ×Dh
// with row stride la and X is k (or v when isV).
func (ks *keySrc[F]) scores(s []F, alpha F, a []F, la int, isV bool, blk *Block, d dims, b, h int) {
	x, xt, gt := ks.k, ks.kt, ks.g.kt
	if isV {
		x, xt, gt = ks.v, ks.vt, ks.g.vt
	}
	nq, nk := blk.NQ, blk.NK
	var t tshape
	var buf []F
	switch {
	case blk.Gathered && blk.KS == 1:
		ld := ks.g.n + 16
		kernels.Gemm(1, d.prec, false, false, nq, nk, d.Dh, alpha, a, la, gt[(b*d.H+h)*d.Dh*ld+blk.K0:], ld, 0, s, nk)
		return
	case blk.Gathered:
		xr, lx := ks.rows(x, nil, ks.g.k, blk, d, b, h)
		if isV {
			xr, lx = ks.rows(x, nil, ks.g.v, blk, d, b, h)
		}
		kernels.Gemm(1, d.prec, false, true, nq, nk, d.Dh, alpha, a, la, xr, lx, 0, s, nk)
		return
	case blk.KS == 1 && ks.panels && ks.lay[h].Panels:
		off := (b*d.H+h)*d.Dh*newTShape(d.T, 0).ld + blk.K0/PanelCols*d.Dh*PanelCols
		kernels.Gemm(1, d.prec, false, false, nq, nk, d.Dh, alpha, a, la, xt.nat[off:], PanelCols, 0, s, nk)
		return
	case blk.KS == 1:
		t, buf = newTShape(d.T, 0), xt.nat
	case blk.KS == d.s && blk.NK > 1:
		t, buf = newTShape(d.T, d.s), xt.per
	default:
		off := (b*d.T+blk.K0)*d.D + h*d.Dh
		kernels.Gemm(1, d.prec, false, true, nq, nk, d.Dh, alpha, a, la, x[off:], blk.KS*d.D, 0, s, nk)
		return
	}
	off := (b*d.H+h)*d.Dh*t.ld + t.col(blk.K0)
	kernels.Gemm(1, d.prec, false, false, nq, nk, d.Dh, alpha, a, la, buf[off:], t.ld, 0, s, nk)
}

// consecutive says rows are source offsets stride apart, none padding.
func consecutive(rows []int, stride int) bool {
	for i, r := range rows {
		if r < 0 || r != rows[0]+i*stride {
			return false
		}
	}
	return true
}

// transposeHeads sets xt [B,H,Dh,t.ld] to the per-head transpose of
// x [B,T,D] in column order t, for the heads whose layout satisfies need;
// with panels, a head whose layout has Panels gets the panel form. It
// moves 16 columns at a time: 16 consecutive positions as one block
// (kernels.Transpose), others 8 channels at a time, so the writes touch 8
// cache lines at once.
func transposeHeads[F kernels.Float](xt, x []F, d dims, t tshape, lay []*Layout, need func(*Layout) bool, panels bool) {
	B, T, D, H, Dh := d.B, d.T, d.D, d.H, d.Dh
	cols := t.ld - 16
	nt := (cols + PanelCols - 1) / PanelCols
	var heads []int
	for h, l := range lay {
		if need(l) {
			heads = append(heads, h)
		}
	}
	nh := len(heads)
	parallel.For(d.threads, B*nh*nt, 1, func(_, lo, hi int) {
		for u := lo; u < hi; u++ {
			b, h, c0 := u/(nh*nt), heads[u/nt%nh], u%nt*PanelCols
			bh := b*H + h
			// Element (row, c) of this chunk of columns is dst[row·ld + c]:
			// row-major over the head's columns, or in panel c0/PanelCols.
			dst, ld := xt[bh*Dh*t.ld:(bh+1)*Dh*t.ld], t.ld
			if panels && lay[h].Panels {
				p := bh*Dh*t.ld + c0*Dh
				dst, ld = xt[p-c0:p+Dh*PanelCols], PanelCols
			}
			var rows [16]int // source offsets of 16 columns (−1: padding)
			for cb := c0; cb < min(c0+PanelCols, cols); cb += 16 {
				ce := min(cb+16, cols)
				for c := cb; c < ce; c++ {
					rows[c-cb] = -1
					if j := t.pos(c); j < T {
						rows[c-cb] = (b*T+j)*D + h*Dh
					}
				}
				if n := ce - cb; consecutive(rows[:n], D) {
					kernels.Transpose(dst[cb:], ld, x[rows[0]:], D, n, Dh)
					continue
				}
				for h0 := 0; h0 < Dh; h0 += 8 {
					he := min(h0+8, Dh)
					for c := cb; c < ce; c++ {
						r := rows[c-cb]
						if r < 0 {
							continue
						}
						for e, v := range x[r+h0 : r+he] {
							dst[(h0+e)*ld+c] = v
						}
					}
				}
			}
		}
	})
}
