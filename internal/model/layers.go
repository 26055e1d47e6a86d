package model

import (
	"math"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/parallel"
)

// The layer functions below follow llm.c: outputs, then caches, then inputs,
// then weights, then sizes. Backward functions accumulate (+=) into input
// and parameter gradients.
//
// Shape letters: B batch, T time, D channels, N = B·T rows, V head width,
// I/O linear input/output widths, H = d_ff.

// embeddingForward sets out[b,t,:] = embed[tokens[b,t],:] + pos[t,:].
// out [B,T,D], tokens [B,T], embed [vocab,D], pos [maxT,D].
func embeddingForward[F kernels.Float](out []F, tokens []int32, embed, pos []F, B, T, D int) {
	for b := 0; b < B; b++ {
		for t := 0; t < T; t++ {
			o := out[(b*T+t)*D : (b*T+t+1)*D]
			e := embed[int(tokens[b*T+t])*D:][:D]
			ps := pos[t*D : (t+1)*D]
			for j := range o {
				o[j] = e[j] + ps[j]
			}
		}
	}
}

// embeddingBackward accumulates dembed[tokens[b,t]] += dout[b,t] and
// dpos[t] += dout[b,t].
func embeddingBackward[F kernels.Float](dembed, dpos, dout []F, tokens []int32, B, T, D int) {
	for b := 0; b < B; b++ {
		for t := 0; t < T; t++ {
			g := dout[(b*T+t)*D : (b*T+t+1)*D]
			kernels.AddRow(dembed[int(tokens[b*T+t])*D:][:D], g)
			kernels.AddRow(dpos[t*D:(t+1)*D], g)
		}
	}
}

// layerNormForward is kernels.LayerNormForward (which splits rows across
// threads itself). out [N,C], mean, rstd [N], inp [N,C], weight, bias [C].
func layerNormForward[F kernels.Float](threads int, out, mean, rstd, inp, weight, bias []F, N, C int) {
	kernels.LayerNormForward(threads, out, mean, rstd, inp, weight, bias, N, C)
}

// layerNormBackward is kernels.LayerNormBackward: it accumulates into dinp,
// dweight and dbias, with a result independent of the thread count.
func layerNormBackward[F kernels.Float](threads int, dinp, dweight, dbias, dout, inp, weight, mean, rstd []F, N, C int) {
	kernels.LayerNormBackward(threads, dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C)
}

// fc1GeluForward sets h = inp·Wᵀ + b and g = GELU(h), adding the bias and
// applying GELU to blocks of a few rows while they are in cache. On each
// block it calls round(lo, hi) between the bias and GELU, and keep(lo, hi)
// after GELU, each when not nil (the model stores h in 16 bits, rounded
// in place, and g in 16 bits there). It runs on at most threads threads.
// h, g [N,H], inp [N,D], w [H,D] (wb: packed in bf16, or nil), b [H].
func fc1GeluForward[F kernels.Float](threads int, p kernels.Prec, h, g, inp, w []F, wb *kernels.BF16B, b []F, N, D, H int, round, keep func(lo, hi int)) {
	if wb != nil {
		kernels.GemmBF16(threads, 1, kernels.Float32A(false, N, D, any(inp).([]float32), D), kernels.PackedB(wb), 0, any(h).([]float32), H)
	} else {
		kernels.Gemm(threads, p, false, true, N, H, D, 1, inp, D, w, D, 0, h, H)
	}
	rows := max(1, (16<<10)/max(H, 1)) // a block of about 16K values of h, and of g, stays in L2
	parallel.For(threads, N, 16, func(_, lo, hi int) {
		for r0 := lo; r0 < hi; r0 += rows {
			r1 := min(r0+rows, hi)
			for n := r0; n < r1; n++ {
				kernels.AddRow(h[n*H:(n+1)*H], b)
			}
			if round != nil {
				round(r0, r1)
			}
			kernels.GeluForward(1, g[r0*H:r1*H], h[r0*H:r1*H]) // inside a chunk: on this thread
			if keep != nil {
				keep(r0, r1)
			}
		}
	})
}

// geluFrom16 recomputes g = GELU(h) from h stored in 16-bit format f,
// as fc1GeluForward computed it from the rounded h: into g16 in bf16 when
// g16 is not nil, else into g rounded to IEEE half (fp16's storage), on at
// most threads threads.
func geluFrom16(threads int, f kernels.Format16, g []float32, g16, h16 []uint16) {
	parallel.For(threads, len(h16), 4096, func(_, lo, hi int) {
		var tmp [2048]float32
		for s := lo; s < hi; s += len(tmp) {
			e := min(s+len(tmp), hi)
			t := tmp[:e-s]
			f.LoadST(t, h16[s:e])
			kernels.GeluForward(1, t, t) // 2048 values: on this thread
			if g16 != nil {
				kernels.ToBF16(kernels.AsBF16(g16[s:e]), t)
				continue
			}
			kernels.RoundHalf(t)
			copy(g[s:e], t)
		}
	})
}

// ffForward accumulates out += fc2(GELU(fc1(inp))) and saves h = fc1(inp)
// and g = GELU(h). out, inp [N,D], h, g [N,H], fc1w [H,D], fc1b [H],
// fc2w [D,H], fc2b [D]; pk holds the weights packed in bf16, or is nil. It
// runs on at most threads threads.
func ffForward[F kernels.Float](threads int, p kernels.Prec, out, h, g, inp, fc1w, fc1b, fc2w, fc2b []F, pk *blockBF16, N, D, H int) {
	fc1GeluForward(threads, p, h, g, inp, fc1w, pk.fc1(), fc1b, N, D, H, nil, nil)
	kernels.LinearForward(threads, p, out, g, fc2w, pk.fc2(), fc2b, N, H, D, true)
}

// ffRowsBF16 is the rows ffForwardBF16 takes at a time: two of the AMX
// kernel's blocks, whose hidden activations (256 KiB in float32 at
// d_ff = 1024) stay in L2.
const ffRowsBF16 = 64

// ffScratchBF16 is the float32 values of scratch ffForwardBF16 needs for
// nt workers: each a block of fc1's output in float32 and its GELU and
// its input in bf16.
func ffScratchBF16(nt, D, H int) int {
	return nt * ffWorkerBF16(D, H)
}

// ffWorkers is the most workers, up to threads, whose shares of
// ffScratchBF16 fit in n values, or 0 when not even one does.
func ffWorkers(threads, D, H, n int) int {
	nt := max(threads, 1)
	for nt > 0 && ffScratchBF16(nt, D, H) > n {
		nt--
	}
	return nt
}

// ffWorkerBF16 is one worker's share of ffScratchBF16: a block of fc1's
// output in float32, then its input and its GELU packed in bf16.
func ffWorkerBF16(D, H int) int {
	return ffRowsBF16*H + (kernels.PackedSizeA(ffRowsBF16, D)+kernels.PackedSizeA(ffRowsBF16, H)+1)/2
}

// ffBlocksBF16 runs fc1 in bf16 (its weights packed in w1, transposed as
// PackBF16B(_, w1, true, D, H, fc1w, D) packs them), its bias and GELU on
// blocks of ffRowsBF16 rows of inp [N, D], on up to nt goroutines, each
// block in its worker's share of scr (ffWorkerBF16 values) while it is in
// cache: round(r0, h), when not nil, gets the block's rows r0… after the
// bias and before GELU (training rounds them to bf16 in place and keeps
// them), and use(r0, h, pa) gets them after GELU, with pa free bf16
// scratch for at least a packed A of the block. Each row's values are
// those of fc1GeluForward's, as GemmBF16's rows do not depend on the rows
// computed with them.
func ffBlocksBF16(nt int, inp, fc1b []float32, w1 *kernels.BF16B, N, D, H int, scr []float32, round func(r0 int, h []float32), use func(r0 int, h []float32, pa []kernels.BF16)) {
	blocks := (N + ffRowsBF16 - 1) / ffRowsBF16
	nt = max(1, min(nt, blocks))
	per := ffWorkerBF16(D, H)
	parallel.For(nt, blocks, 1, func(wk, lo, hi int) {
		s := scr[wk*per : (wk+1)*per]
		hb, rest := s[:ffRowsBF16*H], kernels.AsBF16(kernels.Uint16s(s[ffRowsBF16*H:]))
		var xa kernels.BF16A
		for b := lo; b < hi; b++ {
			r0, r := b*ffRowsBF16, min(ffRowsBF16, N-b*ffRowsBF16)
			h := hb[:r*H]
			xa.Data = rest
			kernels.PackBF16A(1, &xa, false, r, D, inp[r0*D:], D)
			kernels.GemmBF16(1, 1, kernels.PackedA(&xa), kernels.PackedB(w1), 0, h, H)
			for n := range r {
				kernels.AddRow(h[n*H:(n+1)*H], fc1b)
			}
			if round != nil {
				round(r0, h)
			}
			kernels.GeluForward(1, h, h)
			use(r0, h, rest[len(xa.Data):])
		}
	})
}

// ffForwardBF16 sets out = res + ffForward's output in bf16 inference
// (float32, the weights packed in pk), fused by blocks of ffRowsBF16 rows
// (ffBlocksBF16): each block's GELU output is packed to bf16, and the
// block's rows of out are set to res plus fc2's bias and then fc2's
// product is added, before the next block begins, so the hidden
// activations never go to memory and out is written once. out may alias
// res. It runs on up to nt goroutines with scr of ffScratchBF16(nt, D, H)
// values.
func ffForwardBF16(nt int, out, res, inp, fc1b, fc2b []float32, pk *blockBF16, N, D, H int, scr []float32) {
	ffBlocksBF16(nt, inp, fc1b, &pk.w1, N, D, H, scr, nil, func(r0 int, h []float32, pa []kernels.BF16) {
		r := len(h) / H
		ga := kernels.BF16A{Data: pa}
		kernels.PackBF16A(1, &ga, false, r, H, h, H)
		for n := r0; n < r0+r; n++ {
			kernels.Add(1, out[n*D:(n+1)*D], res[n*D:(n+1)*D], fc2b)
		}
		kernels.GemmBF16(1, 1, kernels.PackedA(&ga), kernels.PackedB(&pk.w2), 1, out[r0*D:(r0+r)*D], D)
	})
}

// hidden is the fc1 output h that ffBackward reads: in F, or stored in 16
// bits (bf16 or IEEE half) and read back chunk by chunk; and,
// in bf16, GELU's output g16 recomputed from it (geluFrom16), which fc2's
// weight gradient then reads directly (g is not used).
type hidden[F kernels.Float] struct {
	h   []F
	h16 []uint16
	f16 kernels.Format16 // h16's format
	g16 []uint16
	gb  *kernels.BF16B // g16's memory shaped for g in the pair layout fc2's weight gradient reads, which ffBackwardBF16 fills from h block by block; or nil: g16 holds g's rows
}

// geluBackward sets dst = GELU'(h)·dg for elements lo…hi of h, given dg
// and dst as those elements' values (dst may be dg), on the calling
// thread (ffBackward calls it on each thread's share, or on blocks of
// rows). h stored in 16 bits is widened into tmp (hi−lo values) when
// given, else by chunks into an array of its own (which escapes to the
// heap: callers on many small blocks give tmp).
func (hs hidden[F]) geluBackward(dst, dg []F, lo, hi int, tmp []float32) {
	if hs.h16 == nil {
		kernels.GeluBackward(1, dst[:hi-lo], hs.h[lo:hi], dg[:hi-lo])
		return
	}
	d32, g32 := any(dst).([]float32), any(dg).([]float32)
	if tmp != nil {
		hs.f16.LoadST(tmp[:hi-lo], hs.h16[lo:hi])
		kernels.GeluBackward(1, d32[:hi-lo], tmp[:hi-lo], g32[:hi-lo])
		return
	}
	var buf [2048]float32
	for s := lo; s < hi; s += len(buf) {
		e := min(s+len(buf), hi)
		hs.f16.LoadST(buf[:e-s], hs.h16[s:e])
		kernels.GeluBackward(1, d32[s-lo:e-lo], buf[:e-s], g32[s-lo:e-lo])
	}
}

// ffBackward sets dinp [N,D] to the input gradient of ffForward and
// accumulates its weight gradients, given dout [N,D] and the saved h and g. dg and dh [N,H]
// are scratch (overwritten, need not be zero); g may alias dh (it is read
// before dh is written). dinp may alias dout: dout is fully read before
// dinp is written. It runs on at most threads threads.
func ffBackward[F kernels.Float](threads int, p kernels.Prec, dinp, dfc1w, dfc1b, dfc2w, dfc2b, dg, dh, dout, inp []F, h hidden[F], g, fc1w, fc2w []F, N, D, H int) {
	if h.g16 != nil {
		ffBackwardBF16(threads, any(dinp).([]float32), any(dfc1w).([]float32), any(dfc1b).([]float32), any(dfc2w).([]float32), any(dfc2b).([]float32),
			any(dg).([]float32), any(dh).([]float32), any(dout).([]float32), any(inp).([]float32), any(h).(hidden[float32]),
			any(fc1w).([]float32), any(fc2w).([]float32), N, D, H)
		return
	}
	kernels.Gemm(threads, p, false, false, N, H, D, 1, dout, D, fc2w, H, 0, dg, H) // dg = dout·W2
	kernels.LinearBackward(threads, p, nil, dfc2w, dfc2b, dout, g, fc2w, N, H, D, false)
	parallel.For(threads, N*H, 4096, func(_, lo, hi int) { // dh = GELU'(h)·dg
		h.geluBackward(dh[lo:hi], dg[lo:hi], lo, hi, nil)
	})
	kernels.LinearBackward(threads, p, dinp, dfc1w, dfc1b, dh, inp, fc1w, N, D, H, true)
}

// ffBackwardBF16 is ffBackward in bf16 with g in bf16 (h.g16, which fc2's
// weight gradient reads). fc1's input gradient dh is made by blocks of
// rows (kernels.LinearBackwardFill): each block's dg = dout·W2 is
// multiplied from dout and W2 packed once, in dg's memory, then
// GELU'(h)·dg is rounded to bf16 while in cache; dh's memory holds its
// packed rows, so neither dg nor dh is stored in float32. With h.gb, the
// same blocks recompute g = GELU(h) from the h that GELU's backward
// widened and pack it into g's pair layout, and fc2's weight gradient
// runs last, from doutᵀ packed before dinp is written. Where dg's memory
// cannot hold dout (both ways) and W2 packed, dg is multiplied whole
// first, after fc2's weight gradient from g's rows (recomputed here with
// h.gb).
func ffBackwardBF16(threads int, dinp, dfc1w, dfc1b, dfc2w, dfc2b, dg, dh, dout, inp []float32, h hidden[float32], fc1w, fc2w []float32, N, D, H int) {
	kernels.BiasGrad(threads, dfc2b, dout, N, D)
	pb := kernels.AsBF16(kernels.Uint16s(dg))
	if kernels.PackedSizeA(N, D)+kernels.PackedSizeA(D, N)+kernels.PackedSizeB(D, H) > len(pb) {
		// dg whole first, fc2's weight gradient from g's rows.
		if h.gb != nil {
			geluFrom16(threads, h.f16, nil, h.g16, h.h16)
		}
		kernels.GemmBF16(threads, 1, kernels.Float32A(true, D, N, dout, D), kernels.RowsB(N, H, kernels.AsBF16(h.g16), H), 1, dfc2w, H)
		kernels.Gemm(threads, kernels.PrecBF16, false, false, N, H, D, 1, dout, D, fc2w, H, 0, dg, H)
		fill := func(r0, r1 int, blk, tmp []float32) { h.geluBackward(blk, dg[r0*H:r1*H], r0*H, r1*H, tmp) }
		kernels.LinearBackwardFill(threads, dinp, dfc1w, dfc1b, fill, inp, fc1w, N, D, H, true, dh)
		return
	}
	// dout as A's rows and transposed, and W2, packed in dg's memory.
	da := kernels.BF16A{Data: pb}
	kernels.PackBF16A(threads, &da, false, N, D, dout, D)
	dt := kernels.BF16A{Data: pb[len(da.Data):]}
	kernels.PackBF16A(threads, &dt, true, D, N, dout, D)
	w2 := kernels.BF16B{Data: pb[len(da.Data)+len(dt.Data):]}
	kernels.PackBF16B(threads, &w2, false, D, H, fc2w, H)
	fill := func(r0, r1 int, blk, tmp []float32) {
		a := da.Rows(r0, r1-r0)
		kernels.GemmBF16(1, 1, kernels.PackedA(&a), kernels.PackedB(&w2), 0, blk, H)
		if h.gb != nil && h.f16 == kernels.StoreBF16 { // GELU' and GELU from h's bf16 in one pass
			kernels.GeluBackPackBF16(blk, h.gb, r0, kernels.AsBF16(h.h16[r0*H:r1*H]), H, r1-r0, tmp)
			return
		}
		h.geluBackward(blk, blk, r0*H, r1*H, tmp)
		if h.gb != nil { // tmp holds the block's h: its GELU goes to g's pairs
			x := tmp[:(r1-r0)*H]
			kernels.GeluForward(1, x, x)
			kernels.PackBF16BBlock(h.gb, r0, x, H, r1-r0)
		}
	}
	kernels.LinearBackwardFill(threads, dinp, dfc1w, dfc1b, fill, inp, fc1w, N, D, H, true, dh)
	g := kernels.RowsB(N, H, kernels.AsBF16(h.g16), H)
	if h.gb != nil {
		g = kernels.PackedB(h.gb)
	}
	kernels.GemmBF16(threads, 1, kernels.PackedA(&dt), g, 1, dfc2w, H)
}

// poolForward sets out[b] = mean of inp[b,t] over positions t with
// pad[b,t] false (all positions when pad is nil), or 0 if every position is
// padding; with first, out[b] = inp[b,0] whatever the padding. out [B,D],
// inp [B,T,D], pad [B,T] or nil.
func poolForward[F kernels.Float](out, inp []F, pad []bool, first bool, B, T, D int) {
	if first {
		for b := 0; b < B; b++ {
			copy(out[b*D:(b+1)*D], inp[b*T*D:b*T*D+D])
		}
		return
	}
	for b := 0; b < B; b++ {
		o := out[b*D : (b+1)*D]
		clear(o)
		n := 0
		for t := 0; t < T; t++ {
			if pad == nil || !pad[b*T+t] {
				kernels.AddRow(o, inp[(b*T+t)*D:(b*T+t+1)*D])
				n++
			}
		}
		if n > 0 {
			inv := 1 / F(n)
			for j := range o {
				o[j] *= inv
			}
		}
	}
}

// poolBackward accumulates dinp[b,t] += dout[b]/n_b at the pooled
// positions (dinp[b,0] += dout[b] with first).
func poolBackward[F kernels.Float](dinp, dout []F, pad []bool, first bool, B, T, D int) {
	if first {
		for b := 0; b < B; b++ {
			kernels.AddRow(dinp[b*T*D:b*T*D+D], dout[b*D:(b+1)*D])
		}
		return
	}
	for b := 0; b < B; b++ {
		n := 0
		for t := 0; t < T; t++ {
			if pad == nil || !pad[b*T+t] {
				n++
			}
		}
		if n == 0 {
			continue
		}
		inv := 1 / F(n)
		g := dout[b*D : (b+1)*D]
		for t := 0; t < T; t++ {
			if pad == nil || !pad[b*T+t] {
				d := dinp[(b*T+t)*D : (b*T+t+1)*D]
				for j := range d {
					d[j] += g[j] * inv
				}
			}
		}
	}
}

// crossEntropyForward returns the mean over rows with target ≠ −1 of
// −log softmax(logits[n])[target[n]], and the number of such rows (the
// loss is 0 when there are none). logits [N,V], targets [N]. With label
// smoothing eps > 0 a row's loss is (1−eps)·(−log p_y) + eps·mean_j(−log p_j),
// the cross-entropy against (1−eps)·onehot(y) + eps/V. Each row's
// log-sum-exp uses the kernels' Max and ExpSub (the fast exp in float32)
// and is summed in float64, per thread and then over the threads, so the
// loss's last bits depend on the thread count threads. crossEntropyForward
// panics if a target is outside [−1, V).
func crossEntropyForward[F kernels.Float](threads int, logits []F, targets []int32, N, V int, eps float64) (loss float64, count int) {
	ce := newCESums(threads)
	crossEntropyRows(threads, ce, logits, targets, N, V, eps, false, 0)
	return ce.mean()
}

// ceSums is the cross-entropy's partial sums, one per thread: the losses
// in float64 and the rows that have a target.
type ceSums struct {
	sums   []float64
	counts []int
}

func newCESums(threads int) ceSums {
	return ceSums{make([]float64, threads), make([]int, threads)}
}

// mean is the loss over every row added so far, and their number.
func (ce ceSums) mean() (loss float64, count int) {
	for w := range ce.sums {
		loss += ce.sums[w]
		count += ce.counts[w]
	}
	if count == 0 {
		return 0, 0
	}
	return loss / float64(count), count
}

// crossEntropyRows adds the losses of logits [N,V] for targets [N] (see
// crossEntropyForward) to the sums of the threads that compute them. With
// grad it also overwrites every row with the gradient of scale times its
// loss, crossEntropyBackward's bit for bit, so that the logits and their
// gradient share one buffer; without grad the rows are left unchanged.
func crossEntropyRows[F kernels.Float](threads int, ce ceSums, logits []F, targets []int32, N, V int, eps float64, grad bool, scale float64) {
	parallel.For(threads, N, 64, func(w, lo, hi int) {
		var tmp []F
		if !grad {
			tmp = make([]F, V)
		}
		for n := lo; n < hi; n++ {
			y := int(targets[n])
			row := logits[n*V : (n+1)*V]
			if y == -1 {
				if grad {
					clear(row)
				}
				continue
			}
			if y < 0 || y >= V {
				panic("model: cross-entropy target out of range")
			}
			zy := float64(row[y])
			var mean float64
			if eps > 0 {
				for _, z := range row {
					mean += float64(z)
				}
				mean /= float64(V)
			}
			e := tmp
			if grad {
				e = row
			}
			mx := kernels.Max(row)
			s := kernels.ExpSub(e, row, mx)
			l := float64(mx) + math.Log(float64(s)) - zy
			if eps > 0 {
				l += eps * (zy - mean)
			}
			ce.sums[w] += l
			ce.counts[w]++
			if grad {
				ceGrad(e, s, y, V, scale, eps)
			}
		}
	})
}

// ceGrad turns e = exp(logits − max), whose sum is s, into the gradient
// of scale times the row's loss for target y: scale·(softmax − the target
// distribution).
func ceGrad[F kernels.Float](e []F, s F, y, V int, scale, eps float64) {
	kernels.Scale(e, F(scale/float64(s)))
	if eps > 0 {
		u := F(scale * eps / float64(V))
		for j := range e {
			e[j] -= u
		}
	}
	e[y] -= F(scale * (1 - eps))
}

// crossEntropyBackward sets dlogits[n] = scale·(softmax(logits[n]) −
// onehot(target[n])) for rows with target ≠ −1 and 0 for the others (with
// label smoothing eps, the target distribution (1−eps)·onehot + eps/V);
// scale is dloss/count. Unlike the other backward functions it overwrites,
// so dlogits need not be zeroed; it may be logits itself. It runs on at
// most threads threads.
func crossEntropyBackward[F kernels.Float](threads int, dlogits, logits []F, targets []int32, N, V int, scale, eps float64) {
	parallel.For(threads, N, 64, func(_, lo, hi int) {
		for n := lo; n < hi; n++ {
			y := int(targets[n])
			d := dlogits[n*V : (n+1)*V]
			if y == -1 {
				clear(d)
				continue
			}
			row := logits[n*V : (n+1)*V]
			s := kernels.ExpSub(d, row, kernels.Max(row))
			ceGrad(d, s, y, V, scale, eps)
		}
	})
}
