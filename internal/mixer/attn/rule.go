package attn

import (
	"fmt"
	"math"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/mixer/proj"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer"
)

// Shapes: B batch, T time, D channels, H heads, Dh = D/H head size, R rows
// per query block (RowBlock, or T if smaller), C planned support entries per
// row (Attention.Cap). q, k, v, y are [B,T,D] with head h in the channels
// [h·Dh, (h+1)·Dh), read with row stride D and never transposed.

// RowBlock is the default number of query rows whose scores one worker
// holds at a time (Attention.Rows): the unit of parallel work and of the
// dense/sparse decision. 64 rows amortise the packing of k and v in the
// block GEMMs.
const RowBlock = 64

// maxIndex bounds T so that key indices stored in act as F stay exact
// (float32 has a 24-bit significand).
const maxIndex = 1 << 24

// Rule is the row normaliser of a sparse attention layer: it maps one row
// of scores to a probability distribution with exact zeros (α-entmax,
// top-k softmax). Implementations are called concurrently on different rows
// and must not mutate their own state in these methods.
type Rule[F kernels.Float] interface {
	// Normalize replaces the scores z of one query row of head h, where
	// disallowed keys hold −Inf, by probabilities p (exact zeros off the
	// support; all zeros when no key is allowed). It returns two row
	// statistics from which Recompute rebuilds the same p from the same
	// scores, and the support size (the number of p_j > 0). tmp has len(z)
	// elements of workspace.
	Normalize(z, tmp []F, h int) (st [2]F, nsup int)
	// Recompute replaces the scores z of head h by the p that Normalize
	// produced for them, given its statistics st.
	Recompute(z []F, h int, st [2]F)
	// Backward replaces dp, the loss gradient with respect to the entries p
	// of one row (any subset of the row that contains its support), by the
	// gradient with respect to the scores, and returns ∂L/∂α_h of the row
	// (0 for rules without an α). With clobber it may overwrite p.
	Backward(dp, p []F, h int, clobber bool) float64
}

// Attention is multi-head attention whose softmax is replaced by a Rule. It
// owns the q, k, v and o projections (the same names and shapes as full
// attention) and implements mixer.Mixer.
//
// Forward computes, per (batch, head, block of R query rows), the R×n score
// block S = q·kᵀ/√Dh with one GEMM (n = T, or the block's last row + 1 when
// causal), applies the Rule per row and then either
//
//   - sparse mode, when the block's support fits in R·C entries: stores the
//     support (key index, p) of every row in act and forms y_i = Σ p_j v_j
//     by gathering; Backward then costs O(support·Dh) and recomputes nothing;
//   - dense mode otherwise: y = P·v by GEMM, and Backward recomputes the
//     block's scores from q, k and the saved row statistics (as
//     FlashAttention does), so act stays O(T·(D + H·C)) whatever the support.
type RuleAttention[F kernels.Float] struct {
	D, H, Dh int
	Causal   bool
	// Cap is C, the support entries per row that act plans for.
	Cap int
	// Rows is R, the query rows per block (RowBlock by default; tests use
	// small blocks so that short sequences span several).
	Rows int
	// Rope, when set, rotates q and k by their positions (see Rope).
	Rope *Rope
	rule Rule[F]
	proj proj.Set[F] // q, k, v, o
	// scorePrec is the score product's arithmetic: the projections' unless
	// KeepScoresFP32.
	scorePrec kernels.Prec

	// zeros[h] is the mean fraction of exact zeros among the allowed keys
	// of a query row of head h in the last Forward.
	zeros []float64
}

// NewRuleAttention returns an Attention for cfg with rule and C = capacity
// support entries per row. It returns an error if cfg's sizes are invalid.
func NewRuleAttention[F kernels.Float](cfg mixer.Config, rule Rule[F], capacity int) (*RuleAttention[F], error) {
	if err := mixer.CheckHeads(cfg.D, cfg.Heads); err != nil {
		return nil, err
	}
	switch {
	case cfg.MaxLen <= 0 || cfg.MaxLen >= maxIndex:
		return nil, fmt.Errorf("mixer: max_len must be in [1, %d)", maxIndex)
	case capacity < 1:
		return nil, fmt.Errorf("mixer: support capacity must be positive")
	}
	return &RuleAttention[F]{D: cfg.D, H: cfg.Heads, Dh: cfg.D / cfg.Heads, Causal: cfg.Causal,
		Cap: capacity, Rows: RowBlock, rule: rule, proj: proj.New[F](cfg.D, kernels.PrecOf(cfg.Precision), "q", "k", "v", "o"),
		scorePrec: kernels.PrecOf(cfg.Precision), zeros: make([]float64, cfg.Heads)}, nil
}

// KeepScoresFP32 keeps the queries, keys and scores in F under bf16, for a
// rule that selects keys by their scores' rank (top-k): bf16 rounding would
// change the selection among near-equal scores. The values, the output
// projection and the backward's products stay in bf16.
func (a *RuleAttention[F]) KeepScoresFP32() {
	a.proj.KeepFP32(pq, pk)
	a.scorePrec = kernels.PrecFP32
}

// Params lists q, k, v and o (weight [D,D] and bias [D] each); o is a
// residual projection.
func (a *RuleAttention[F]) Params() []mixer.ParamSpec { return a.proj.Params() }

// Bind takes the storage of the eight tensors of Params, in order. It
// panics if fewer are given.
func (a *RuleAttention[F]) Bind(w, g [][]F) { a.proj.Bind(w, g) }

// UseBF16 implements mixer.BF16Inference: the q, k, v and o projections
// multiply in bf16 from now on; the scores and the rule stay in F.
func (a *RuleAttention[F]) UseBF16(threads int) error { return a.proj.UseBF16(threads) }

// ZeroFrac returns, per head, the mean fraction of exact zeros among the
// allowed keys of a query row in the last Forward (rows without allowed
// keys are skipped). The slice is owned by a.
func (a *RuleAttention[F]) ZeroFrac() []float64 { return a.zeros }

// geom is the act and scratch layout of one call.
type geom struct {
	B, T, R, nrb, C int
	n               int // B·T·D
	rows, flags     int // offsets in act
	pool            int
	act             int // act size
	worker          int // per-worker scratch
}

// scratch is the scratch size on nt threads: dq, dk, dv, dy, kᵀ, vᵀ and
// nt workers.
func (g geom) scratch(nt int) int { return 6*g.n + nt*g.worker }

func (a *RuleAttention[F]) geom(b, t int) geom {
	g := geom{B: b, T: t, R: min(a.Rows, t), n: b * t * a.D}
	if g.R < 1 {
		g.R = 1
	}
	g.nrb = (t + g.R - 1) / g.R
	g.C = min(a.Cap, t)
	nbh := b * a.H
	g.rows = 4 * g.n                     // q, k, v, y
	g.flags = g.rows + 4*nbh*t           // per row: st0, st1, pool offset, count
	g.pool = g.flags + nbh*g.nrb         // per block: 1 = sparse mode
	g.act = g.pool + 2*nbh*g.nrb*g.R*g.C // per block: R·C indices, R·C probabilities
	// A worker holds the score block, the dP block, a row of workspace and
	// two private dK, dV accumulators (for heads it shares with another
	// worker).
	g.worker = 2*g.R*t + t + 4*t*a.Dh
	return g
}

// ActSize is 4·B·T·D (q, k, v and the head outputs y) + 4·B·H·T row
// statistics + B·H·⌈T/R⌉ block flags + 2·B·H·⌈T/R⌉·R·C support entries:
// O(T·(D + H·C)), never T².
func (a *RuleAttention[F]) ActSize(b, t int) int { return a.geom(b, t).act }

// ScratchSize is 6·B·T·D + threads·(2·R·T + T + 4·T·Dh) for the thread
// budget threads; Forward and Backward panic if the scratch they get is
// too small for their Pass.Threads.
func (a *RuleAttention[F]) ScratchSize(b, t, threads int) int {
	return a.geom(b, t).scratch(mixer.Budget(threads))
}

// check panics unless the pass and its buffers fit geometry g and the
// pass's resolved thread budget nt.
func (a *RuleAttention[F]) check(g geom, nt int, out, act, scratch, x []F, p mixer.Pass) {
	if p.B < 1 || p.T < 1 {
		panic("entmax: pass with B or T < 1")
	}
	if len(out) < g.n || len(x) < g.n || len(act) < g.act || len(scratch) < g.scratch(nt) {
		panic("entmax: buffer too small (Pass.Threads above ScratchSize's?)")
	}
	if p.Pad != nil && len(p.Pad) < p.B*p.T {
		panic("entmax: Pass.Pad shorter than B·T")
	}
}

// zigzag maps the u-th unit of a head to a row block so that contiguous
// ranges of units mix cheap (early, causal) and expensive blocks.
func zigzag(u, nrb int) int {
	if u%2 == 0 {
		return u / 2
	}
	return nrb - 1 - u/2
}

// Forward writes out [B,T,D] = o(concat_heads(P·v)) and fills act.
// It panics if a buffer is smaller than ActSize/ScratchSize ask.
func (a *RuleAttention[F]) Forward(out, act, scratch, x []F, p mixer.Pass) {
	g, nt := a.geom(p.B, p.T), mixer.Budget(p.Threads)
	a.check(g, nt, out, act, scratch, x, p)
	BT := p.B * p.T
	q, k, v, y := act[:g.n], act[g.n:2*g.n], act[2*g.n:3*g.n], act[3*g.n:4*g.n]
	a.proj.Forward(nt, pq, q, x, BT)
	a.proj.Forward(nt, pk, k, x, BT)
	a.proj.Forward(nt, pv, v, x, BT)
	RopeApply(a.Rope, nt, q, p.B, p.T, false) // act keeps q and k rotated
	RopeApply(a.Rope, nt, k, p.B, p.T, false)

	kt := scratch[4*g.n : 5*g.n]
	transposeHeadsRule(nt, kt, k, p.B, p.T, a.D, a.H)
	acc := make([]float64, 2*nt*a.H) // per worker and head: Σ zero fraction, rows
	units := p.B * a.H * g.nrb
	ws := scratch[6*g.n:]
	parallel.For(nt, units, 1, func(w, lo, hi int) {
		wk := ws[w*g.worker : (w+1)*g.worker]
		for u := lo; u < hi; u++ {
			bh := u / g.nrb
			rb := zigzag(u%g.nrb, g.nrb)
			a.forwardBlock(g, act, wk, acc[2*w*a.H:2*(w+1)*a.H], q, kt, v, y, p, bh/a.H, bh%a.H, rb)
		}
	})
	for h := 0; h < a.H; h++ {
		var s, n float64
		for w := 0; w < nt; w++ {
			s += acc[2*w*a.H+h]
			n += acc[2*w*a.H+a.H+h]
		}
		a.zeros[h] = 0
		if n > 0 {
			a.zeros[h] = s / n
		}
	}
	a.proj.Forward(nt, po, out, y, BT)
}

// scores writes the nr×nk block S = q_blk·kᵀ/√Dh for rows [r0, r0+nr) of
// head h of sequence b, with disallowed keys set to −Inf, and returns the
// number of allowed keys of every row in nallow (may be nil; T < maxIndex
// keeps the counts exact in F). kt holds kᵀ
// per head, [B,H,Dh,T], so that the GEMM packs contiguous rows.
func (a *RuleAttention[F]) scores(S, q, kt []F, p mixer.Pass, b, h, r0, nr, nk int, nallow []F) {
	D, T, Dh := a.D, p.T, a.Dh
	scale := F(1 / math.Sqrt(float64(Dh)))
	kernels.Gemm(1, a.scorePrec, false, false, nr, nk, Dh, scale, q[(b*T+r0)*D+h*Dh:], D, kt[(b*a.H+h)*Dh*T:], T, 0, S, nk)
	ninf := F(math.Inf(-1))
	var pad []bool
	if p.Pad != nil {
		pad = p.Pad[b*T : b*T+nk]
	}
	for r := 0; r < nr; r++ {
		row := S[r*nk : (r+1)*nk]
		lim := nk
		if a.Causal {
			lim = min(nk, r0+r+1)
			for j := lim; j < nk; j++ {
				row[j] = ninf
			}
		}
		na := lim
		for j, pd := range pad[:min(len(pad), lim)] {
			if pd {
				row[j] = ninf
				na--
			}
		}
		if nallow != nil {
			nallow[r] = F(na)
		}
	}
}

func (a *RuleAttention[F]) forwardBlock(g geom, act, wk []F, acc []float64, q, kt, v, y []F, p mixer.Pass, b, h, rb int) {
	D, T, Dh, R := a.D, p.T, a.Dh, g.R
	r0 := rb * R
	nr := min(R, T-r0)
	nk := T
	if a.Causal {
		nk = r0 + nr
	}
	S := wk[:nr*nk]
	nallow := wk[R*T : R*T+nr] // in the dP block, which Forward does not use
	tmp := wk[2*R*T : 2*R*T+T]
	a.scores(S, q, kt, p, b, h, r0, nr, nk, nallow)

	bh := b*a.H + h
	rows := act[g.rows+4*(bh*T+r0):]
	total := 0
	for r := 0; r < nr; r++ {
		row := S[r*nk : (r+1)*nk]
		st, nsup := a.rule.Normalize(row, tmp[:nk], h)
		rows[4*r], rows[4*r+1], rows[4*r+3] = st[0], st[1], F(nsup)
		total += nsup
		if na := int(nallow[r]); na > 0 {
			acc[h] += float64(na-nsup) / float64(na)
			acc[a.H+h]++
		}
	}

	blk := bh*g.nrb + rb
	yb := y[(b*T+r0)*D+h*Dh:]
	vb := v[b*T*D+h*Dh:]
	if total > nr*g.C {
		// Dense mode: Backward recomputes this block.
		act[g.flags+blk] = 0
		kernels.Gemm(1, a.proj.Prec, false, false, nr, Dh, nk, 1, S, nk, vb, D, 0, yb, D)
		return
	}
	act[g.flags+blk] = 1
	pool := act[g.pool+2*blk*R*g.C:]
	idx, pv := pool[:R*g.C], pool[R*g.C:2*R*g.C]
	off := 0
	for r := 0; r < nr; r++ {
		row := S[r*nk : (r+1)*nk]
		rows[4*r+2] = F(off)
		yi := yb[r*D : r*D+Dh]
		clear(yi)
		for j, pj := range row {
			if pj == 0 {
				continue
			}
			idx[off], pv[off] = F(j), pj
			off++
			kernels.Axpy(yi, pj, vb[j*D:j*D+Dh])
		}
	}
}

// Backward accumulates into dx and the projection gradients. It panics as
// Forward.
func (a *RuleAttention[F]) Backward(dx, scratch, dout, act, x []F, p mixer.Pass) {
	a.BackwardAlpha(dx, scratch, dout, act, x, p, nil)
}

// BackwardAlpha is Backward that also accumulates ∂L/∂α_h, as the Rule
// reports it, into dalpha [H] when dalpha is not nil.
func (a *RuleAttention[F]) BackwardAlpha(dx, scratch, dout, act, x []F, p mixer.Pass, dalpha []float64) {
	g, nt := a.geom(p.B, p.T), mixer.Budget(p.Threads)
	a.check(g, nt, dout, act, scratch, x, p)
	if len(dx) < g.n {
		panic("entmax: dx too small")
	}
	D, T, Dh, BT := a.D, p.T, a.Dh, p.B*p.T
	q, k, v, y := act[:g.n], act[g.n:2*g.n], act[2*g.n:3*g.n], act[3*g.n:4*g.n]
	dq, dk, dv, dy := scratch[:g.n], scratch[g.n:2*g.n], scratch[2*g.n:3*g.n], scratch[3*g.n:4*g.n]
	clear(scratch[:3*g.n])
	a.proj.Backward(nt, po, dy, dout, y, BT, true)

	kt, vt := scratch[4*g.n:5*g.n], scratch[5*g.n:6*g.n]
	transposeHeadsRule(nt, kt, k, p.B, T, D, a.H)
	transposeHeadsRule(nt, vt, v, p.B, T, D, a.H)
	da := make([]float64, nt*a.H)
	// Each worker's first and last (b,h) may be shared with a neighbour:
	// their dK, dV go to private buffers, summed after the join.
	shared := make([]int, 2*nt)
	for i := range shared {
		shared[i] = -1
	}
	ws := scratch[6*g.n:]
	units := p.B * a.H * g.nrb
	TDh := T * Dh
	parallel.For(nt, units, 1, func(w, lo, hi int) {
		wk := ws[w*g.worker : (w+1)*g.worker]
		priv := wk[2*g.R*T+T:]
		for u := lo; u < hi; {
			bh := u / g.nrb
			end := min(hi, (bh+1)*g.nrb)
			b, h := bh/a.H, bh%a.H
			dkT, dvT, ld := dk[b*T*D+h*Dh:], dv[b*T*D+h*Dh:], D
			if u != bh*g.nrb || end != (bh+1)*g.nrb {
				slot := 0
				if u != lo {
					slot = 1
				}
				shared[2*w+slot] = bh
				dkT, dvT, ld = priv[2*slot*TDh:(2*slot+1)*TDh], priv[(2*slot+1)*TDh:(2*slot+2)*TDh], Dh
				clear(dkT)
				clear(dvT)
			}
			for ; u < end; u++ {
				rb := zigzag(u%g.nrb, g.nrb)
				da[w*a.H+h] += a.backwardBlock(g, act, wk, q, k, v, kt, vt, dq, dkT, dvT, ld, dy, p, b, h, rb)
			}
		}
	})
	for w := 0; w < nt; w++ {
		for slot := 0; slot < 2; slot++ {
			bh := shared[2*w+slot]
			if bh < 0 {
				continue
			}
			b, h := bh/a.H, bh%a.H
			priv := ws[w*g.worker+2*g.R*T+T:]
			pk, pv := priv[2*slot*TDh:(2*slot+1)*TDh], priv[(2*slot+1)*TDh:(2*slot+2)*TDh]
			for j := 0; j < T; j++ {
				o := (b*T+j)*D + h*Dh
				kernels.AddTo(1, dk[o:o+Dh], pk[j*Dh:(j+1)*Dh])
				kernels.AddTo(1, dv[o:o+Dh], pv[j*Dh:(j+1)*Dh])
			}
		}
		if dalpha != nil {
			for h := 0; h < a.H; h++ {
				dalpha[h] += da[w*a.H+h]
			}
		}
	}
	RopeApply(a.Rope, nt, dq, p.B, T, true) // back through the rotation: its transpose
	RopeApply(a.Rope, nt, dk, p.B, T, true)
	a.proj.Backward(nt, pq, dx, dq, x, BT, false)
	a.proj.Backward(nt, pk, dx, dk, x, BT, false)
	a.proj.Backward(nt, pv, dx, dv, x, BT, false)
}

// backwardBlock accumulates the gradients of one row block: dq rows into dq
// (stride D) and dk, dv of the head's keys into dkT, dvT (stride ld). It
// returns the block's ∂L/∂α_h.
func (a *RuleAttention[F]) backwardBlock(g geom, act, wk []F, q, k, v, kt, vt, dq, dkT, dvT []F, ld int, dy []F, p mixer.Pass, b, h, rb int) float64 {
	D, T, Dh, R := a.D, p.T, a.Dh, g.R
	r0 := rb * R
	nr := min(R, T-r0)
	nk := T
	if a.Causal {
		nk = r0 + nr
	}
	scale := F(1 / math.Sqrt(float64(Dh)))
	bh := b*a.H + h
	blk := bh*g.nrb + rb
	rows := act[g.rows+4*(bh*T+r0):]
	qb, kb, vb := q[(b*T+r0)*D+h*Dh:], k[b*T*D+h*Dh:], v[b*T*D+h*Dh:]
	dyb, dqb := dy[(b*T+r0)*D+h*Dh:], dq[(b*T+r0)*D+h*Dh:]
	var dalpha float64

	if act[g.flags+blk] == 1 {
		// Sparse mode: O(support·Dh), nothing recomputed.
		pool := act[g.pool+2*blk*R*g.C:]
		idx, pv := pool[:R*g.C], pool[R*g.C:2*R*g.C]
		dp := wk[R*T : R*T+T]
		for r := 0; r < nr; r++ {
			off, cnt := int(rows[4*r+2]), int(rows[4*r+3])
			ids, ps := idx[off:off+cnt], pv[off:off+cnt]
			dyi, qi, dqi := dyb[r*D:r*D+Dh], qb[r*D:r*D+Dh], dqb[r*D:r*D+Dh]
			dz := dp[:cnt]
			for c, jf := range ids {
				j := int(jf)
				dz[c] = kernels.Dot(dyi, vb[j*D:j*D+Dh])
			}
			dalpha += a.rule.Backward(dz, ps, h, false)
			for c, jf := range ids {
				j := int(jf)
				s := dz[c] * scale
				kernels.Axpy(dqi, s, kb[j*D:j*D+Dh])
				kernels.Axpy(dkT[j*ld:j*ld+Dh], s, qi)
				kernels.Axpy(dvT[j*ld:j*ld+Dh], ps[c], dyi)
			}
		}
		return dalpha
	}

	// Dense mode: recompute P from the saved row statistics.
	S := wk[:nr*nk]
	dP := wk[R*T : R*T+nr*nk]
	a.scores(S, q, kt, p, b, h, r0, nr, nk, nil)
	for r := 0; r < nr; r++ {
		a.rule.Recompute(S[r*nk:(r+1)*nk], h, [2]F{rows[4*r], rows[4*r+1]})
	}
	kernels.Gemm(1, a.proj.Prec, false, false, nr, nk, Dh, 1, dyb, D, vt[bh*Dh*T:], T, 0, dP, nk)
	kernels.Gemm(1, a.proj.Prec, true, false, nk, Dh, nr, 1, S, nk, dyb, D, 1, dvT, ld)
	for r := 0; r < nr; r++ { // P is no longer needed: the rule may reuse it
		dalpha += a.rule.Backward(dP[r*nk:(r+1)*nk], S[r*nk:(r+1)*nk], h, true)
	}
	kernels.Gemm(1, a.proj.Prec, false, false, nr, Dh, nk, scale, dP, nk, kb, D, 1, dqb, D)
	kernels.Gemm(1, a.proj.Prec, true, false, nk, Dh, nr, scale, dP, nk, qb, D, 1, dkT, ld)
	return dalpha
}

// transposeHeadsRule sets xt [B,H,Dh,T] to the per-head transpose of
// x [B,T,D], on at most threads threads.
func transposeHeadsRule[F kernels.Float](threads int, xt, x []F, B, T, D, H int) {
	Dh := D / H
	parallel.For(threads, B*H, 1, func(_, lo, hi int) {
		for bh := lo; bh < hi; bh++ {
			b, h := bh/H, bh%H
			dst := xt[bh*Dh*T : (bh+1)*Dh*T]
			for j := 0; j < T; j++ {
				src := x[(b*T+j)*D+h*Dh : (b*T+j)*D+(h+1)*Dh]
				for c, v := range src {
					dst[c*T+j] = v
				}
			}
		}
	})
}

// AttentionWeights returns, per head, the [T,T] row-major attention weights
// P (query rows, key columns) of a forward pass on x [1,T,D] with the bound
// parameters, no padding: the heat maps of `tokenmix pattern`
// (plot/pattern.Weights). It allocates; it is for inspection, not training.
func (a *RuleAttention[F]) AttentionWeights(x []float64, T int) [][]float64 {
	D, H := a.D, a.H
	p := mixer.Pass{B: 1, T: T}
	xf := make([]F, T*D)
	for i := range xf {
		xf[i] = F(x[i])
	}
	q, k, kt := make([]F, T*D), make([]F, T*D), make([]F, T*D)
	th := mixer.Budget(0)
	a.proj.Forward(th, pq, q, xf, T)
	a.proj.Forward(th, pk, k, xf, T)
	RopeApply(a.Rope, th, q, 1, T, false)
	RopeApply(a.Rope, th, k, 1, T, false)
	transposeHeadsRule(th, kt, k, 1, T, D, H)
	R := min(a.Rows, T)
	S, tmp := make([]F, R*T), make([]F, T)
	out := make([][]float64, H)
	for h := range out {
		P := make([]float64, T*T)
		for r0 := 0; r0 < T; r0 += R {
			nr := min(R, T-r0)
			nk := T
			if a.Causal {
				nk = r0 + nr
			}
			a.scores(S[:nr*nk], q, kt, p, 0, h, r0, nr, nk, nil)
			for r := 0; r < nr; r++ {
				row := S[r*nk : (r+1)*nk]
				a.rule.Normalize(row, tmp[:nk], h)
				for j, v := range row {
					P[(r0+r)*T+j] = float64(v)
				}
			}
		}
		out[h] = P
	}
	return out
}
