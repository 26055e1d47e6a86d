package attn

import (
	"sync"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/parallel"
)

// headPacks holds, for precision bf16, each (batch, head) unit's operands
// of the tile products packed in bf16 once per pass (unit u = b·H + h),
// so that a tile product packs only its fresh score tile: the queries
// and dO as A rows [T, Dh]; kᵀ and vᵀ [Dh, T] as B of the score products;
// v, dO and k [T, Dh] as B of the products with P and dS.
//
// In backward the key gradients accumulate transposed, dKᵀ and dVᵀ
// [Dh, T] per unit (dkT, dvT), from qᵀ and dOᵀ packed as A (qT, doT) and
// the fresh dS and P tiles packed as B: a tile then packs its rows in
// pairs instead of transposing them. addKeyGrads adds them into dk, dv.
//
// Where q, k and v are stored in bf16 (precision bf16), fill packs from
// those bits instead of their float32 copies: the queries' rows are
// read in place (qv, views of the stored rows, D apart), and the other
// layouts are pairs of stored rows or transposes of 32-bit pairs, which
// need no rounding. dO, in float32, is rounded once into its rows, from
// which its other two layouts are made.
type headPacks struct {
	qa, doa, qT, doT []kernels.BF16A
	kt, vt           []kernels.BF16B
	vb, dob, kb      []kernels.BF16B
	dkT, dvT         []float32 // [B·H, Dh, T+16] each (ldT)
	// qv holds views of the stored queries when the last fill read them
	// in place (rows), and qa is then unused: views are never packed
	// into, as they are not the store's buffers.
	qv   []kernels.BF16A
	rows bool
	// tiles holds each worker's packs of its current tile.
	tiles []tilePacks
}

// tilePacks is a worker's packs of its current tile: in backward, dS
// packed as A (for dQ) and as B (for dKᵀ), and P packed as B (for dVᵀ),
// kernels.ExpSubMulPackBF16's output; in forward, P packed as A (for
// P·V) in dsa, kernels.OnlineSoftmaxBF16's.
type tilePacks struct {
	dsa     kernels.BF16A
	dsb, pb kernels.BF16B
}

// growTiles makes room for n workers' tile packs.
func (hp *headPacks) growTiles(n int) {
	if len(hp.tiles) < n {
		hp.tiles = append(hp.tiles, make([]tilePacks, n-len(hp.tiles))...)
	}
}

// queries returns unit u's packed queries.
func (hp *headPacks) queries(u int) *kernels.BF16A {
	if hp.rows {
		return &hp.qv[u]
	}
	return &hp.qa[u]
}

// packPool holds the stores between passes. A store serves one Forward or
// Backward; the layers of a model run one after another, so they share one
// store (a few B·T·D bf16 buffers) instead of keeping one each. Unlike a
// sync.Pool it keeps them across garbage collections.
var packPool packList

type packList struct {
	mu   sync.Mutex
	free []*headPacks
}

func (l *packList) get() *headPacks {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.free); n > 0 {
		hp := l.free[n-1]
		l.free = l.free[:n-1]
		return hp
	}
	return new(headPacks)
}

func (l *packList) put(hp *headPacks) {
	l.mu.Lock()
	l.free = append(l.free, hp)
	l.mu.Unlock()
}

// covers says whether blk's products can read the packed operands: a
// block of contiguous queries and keys whose keys start a panel (64) and
// whose queries start a pair. Other blocks (strided, gathered) multiply
// through kernels.Gemm on one thread, which packs per tile.
func (hp *headPacks) covers(blk *Block) bool {
	return hp != nil && packable(blk)
}

// packable says whether a block's products can read packed operands (see
// covers).
func packable(blk *Block) bool {
	return !blk.Gathered && blk.QS == 1 && blk.KS == 1 && blk.K0%64 == 0 && blk.Q0%2 == 0
}

// packsRows says whether fill packs from stored bf16 values s16: given,
// with an even head width (pairs do not straddle heads).
func packsRows(s16 []kernels.BF16, d dims) bool {
	return s16 != nil && d.Dh%2 == 0 && d.D%2 == 0
}

// packsEvery says whether the packs serve every block of lay, diagonal
// blocks included: then no product reads q, k or v in float32.
func packsEvery(lay []*Layout) bool {
	for _, l := range lay {
		for _, ph := range l.Phases {
			for _, g := range ph.Groups {
				for i := range g.Blocks {
					if blk := &g.Blocks[i]; blk.Diag || !packable(blk) {
						return false
					}
				}
			}
		}
	}
	return true
}

// coversAll says whether the packs serve every block of lay (then the
// transposed copies of k and v are not needed).
func (hp *headPacks) coversAll(lay []*Layout) bool {
	if hp == nil {
		return false
	}
	for _, l := range lay {
		for _, ph := range l.Phases {
			for _, g := range ph.Groups {
				for i := range g.Blocks {
					if blk := &g.Blocks[i]; !blk.Diag && !hp.covers(blk) {
						return false
					}
				}
			}
		}
	}
	return true
}

// fill packs q, k, v (and, in backward, do) [B,T,D] of every unit: from
// their bf16 bits in s16 (q, k, v in turn, [3·B·T·D] or more) where given
// and the head width is even, else from their float32 values.
func (hp *headPacks) fill(q, k, v, do []float32, s16 []kernels.BF16, d dims, backward bool) {
	n := d.B * d.H
	grow := func(a *[]kernels.BF16A, b ...*[]kernels.BF16B) {
		if len(*a) < n {
			*a = append(*a, make([]kernels.BF16A, n-len(*a))...)
		}
		for _, x := range b {
			if len(*x) < n {
				*x = append(*x, make([]kernels.BF16B, n-len(*x))...)
			}
		}
	}
	grow(&hp.qa, &hp.kt, &hp.vb)
	T, D, Dh, ld := d.T, d.D, d.Dh, ldT(d.T)
	hp.rows = packsRows(s16, d)
	var q16, k16, v16 []kernels.BF16
	if hp.rows {
		if len(hp.qv) < n {
			hp.qv = make([]kernels.BF16A, n)
		}
		nv := d.B * T * D
		q16, k16, v16 = s16, s16[nv:], s16[2*nv:]
	}
	if backward {
		grow(&hp.doa, &hp.vt, &hp.dob, &hp.kb)
		grow(&hp.qT)
		grow(&hp.doT)
		if m := n * Dh * ld; cap(hp.dkT) < m {
			hp.dkT, hp.dvT = make([]float32, m), make([]float32, m)
		} else {
			hp.dkT, hp.dvT = hp.dkT[:m], hp.dvT[:m]
		}
	}
	// The packs run inside the split over units: on one thread, or on the
	// whole budget when there is one unit (the split then runs inline).
	pt := d.threads
	if n > 1 {
		pt = 1
	}
	parallel.For(d.threads, n, 1, func(_, lo, hi int) {
		for u := lo; u < hi; u++ {
			off := u/d.H*T*D + u%d.H*Dh
			if hp.rows {
				// q16 runs on past the last unit's rows (k and v
				// follow), so every view has its T rows D apart.
				hp.qv[u] = kernels.BF16A{M: T, K: Dh, Stride: D, Data: q16[off:]}
				kernels.PackBF16BTRows(pt, &hp.kt[u], Dh, T, k16[off:], D)
			} else {
				kernels.PackBF16A(pt, &hp.qa[u], false, T, Dh, q[off:], D)
				kernels.PackBF16B(pt, &hp.kt[u], true, Dh, T, k[off:], D)
			}
			if !backward {
				if hp.rows {
					kernels.PackBF16BRows(pt, &hp.vb[u], T, Dh, v16[off:], D)
				} else {
					kernels.PackBF16B(pt, &hp.vb[u], false, T, Dh, v[off:], D)
				}
				continue
			}
			da := &hp.doa[u]
			kernels.PackBF16A(pt, da, false, T, Dh, do[off:], D)
			kernels.PackBF16BRows(pt, &hp.dob[u], T, Dh, da.Data, da.Stride)
			kernels.PackBF16ATRows(&hp.doT[u], Dh, T, da.Data, da.Stride)
			if hp.rows {
				kernels.PackBF16BTRows(pt, &hp.vt[u], Dh, T, v16[off:], D)
				kernels.PackBF16BRows(pt, &hp.kb[u], T, Dh, k16[off:], D)
				kernels.PackBF16ATRows(&hp.qT[u], Dh, T, q16[off:], D)
			} else {
				kernels.PackBF16B(pt, &hp.vt[u], true, Dh, T, v[off:], D)
				kernels.PackBF16B(pt, &hp.kb[u], false, T, Dh, k[off:], D)
				kernels.PackBF16A(pt, &hp.qT[u], true, Dh, T, q[off:], D)
			}
			clear(hp.dkT[u*Dh*ld : (u+1)*Dh*ld])
			clear(hp.dvT[u*Dh*ld : (u+1)*Dh*ld])
		}
	})
}

// keyGrads accumulates a covered block's key gradients from its packed P
// and dS tiles [NQ,NK] of unit u: dVᵀ += dOᵀ·P and dKᵀ += scale·qᵀ·dS.
func (hp *headPacks) keyGrads(tp *tilePacks, scale float32, blk *Block, d dims, u int) {
	ld := ldT(d.T)
	off := u*d.Dh*ld + blk.K0
	a := hp.doT[u].Cols(blk.Q0, blk.NQ)
	kernels.GemmBF16(1, 1, kernels.PackedA(&a), kernels.PackedB(&tp.pb), 1, hp.dvT[off:], ld)
	a = hp.qT[u].Cols(blk.Q0, blk.NQ)
	kernels.GemmBF16(1, scale, kernels.PackedA(&a), kernels.PackedB(&tp.dsb), 1, hp.dkT[off:], ld)
}

// addKeyGrads adds the transposed key gradients into dk, dv [B,T,D]
// (kernels.TransposeAdd), by blocks of 256 positions of a unit.
func (hp *headPacks) addKeyGrads(dk, dv []float32, d dims) {
	T, D, Dh, H, ld := d.T, d.D, d.Dh, d.H, ldT(d.T)
	const tb = 256
	nb := (T + tb - 1) / tb
	parallel.For(d.threads, d.B*H*nb, 1, func(_, lo, hi int) {
		for w := lo; w < hi; w++ {
			u, t0 := w/nb, w%nb*tb
			n := min(t0+tb, T) - t0
			o := (u/H*T+t0)*D + u%H*Dh
			src := u*Dh*ld + t0
			kernels.TransposeAdd(dk[o:], D, hp.dkT[src:], ld, Dh, n)
			kernels.TransposeAdd(dv[o:], D, hp.dvT[src:], ld, Dh, n)
		}
	})
}

// scores sets the block's score tile s [NQ,NK] = scale·q·kᵀ from the
// packed operands of unit u.
func (hp *headPacks) scores(s []float32, scale float32, blk *Block, d dims, u int) {
	a := hp.queries(u).Rows(blk.Q0, blk.NQ)
	kt := hp.kt[u].View(0, d.Dh, blk.K0, blk.NK)
	kernels.GemmBF16(1, scale, kernels.PackedA(&a), kernels.PackedB(&kt), 0, s, blk.NK)
}
