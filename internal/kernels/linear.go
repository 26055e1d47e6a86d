package kernels

import (
	"fmt"

	"github.com/tokenmix/tokenmix/internal/parallel"
)

// LinearForward sets y [N,out] = x [N,in]·Wᵀ + b, or adds x·Wᵀ + b to y
// when acc, with W [out,in] and b [out] as in PyTorch's nn.Linear: the
// linear layer of the model, the mixers' projections and the pixel
// baselines. The product runs in precision p, or, when wb is not nil
// (float32 only), in bf16 on W packed once by PackBF16B(_, wb, true, in,
// out, W, in), with x converted as it enters the product. The bias is
// written first and the product added to it (beta = 1), so y is written
// once. Work is split across up to threads goroutines, with a result that
// does not depend on threads. LinearForward panics if a slice is shorter
// than its shape.
func LinearForward[F Float](threads int, p Prec, y, x, w []F, wb *BF16B, b []F, N, in, out int, acc bool) {
	if wb != nil {
		var res []float32
		if acc {
			res = F32(y)
		}
		LinearForwardBF16(threads, F32(y), res, Float32A(false, N, in, F32(x), in), F32(w), wb, F32(b), N, in, out)
		return
	}
	BiasRows(threads, y, b, N, out, acc)
	Gemm(threads, p, false, true, N, out, in, 1, x, in, w, in, 1, y, out)
}

// LinearForwardBF16 is LinearForward in bf16 for float32 values, setting
// y = res + x·Wᵀ + b (res nil: y = x·Wᵀ + b; res may be y, which is then
// LinearForward's acc), with x given as op(A): Float32A(false, N, in, x,
// in), or packed once by the caller (PackedA, bf16 rows read in place)
// when several layers share it.
// W is wb, packed once by PackBF16B(_, wb, true, in, out, W, in), or, with
// wb nil, w packed on the way: the products of Gemm in PrecBF16. Large
// outputs go by blocks of rows (linRows), each block's bias written just
// before its product adds to it, so that the product reads it from cache.
func LinearForwardBF16(threads int, y, res []float32, x OperandA, w []float32, wb *BF16B, b []float32, N, in, out int) {
	rows := linRows(out)
	nb := (N + rows - 1) / rows
	if nb < 2 {
		biasInto(threads, y, res, b, N, out)
		wop := Float32B(true, in, out, w, in)
		if wb != nil {
			wop = PackedB(wb)
		}
		GemmBF16(threads, 1, x, wop, 1, y, out)
		return
	}
	_, _ = y[:N*out], b[:out]
	if res != nil {
		_ = res[:N*out]
	}
	var wp BF16B
	if wb == nil {
		wp.Data = packBufs.get(sizeB(in, out))
		packBF16B(&wp, true, in, out, w, in, threads)
		defer packBufs.put(wp.Data)
		wb = &wp
	}
	parallel.For(threads, nb, 1, func(_, lo, hi int) {
		for k := lo; k < hi; k++ {
			r0, r1 := k*rows, min((k+1)*rows, N)
			yb := y[r0*out : r1*out]
			var rb []float32
			if res != nil {
				rb = res[r0*out : r1*out]
			}
			biasInto(1, yb, rb, b, r1-r0, out)
			GemmBF16(1, 1, x.rows(r0, r1-r0), PackedB(wb), 1, yb, out)
		}
	})
}

// linRows is the rows of a block of LinearForwardBF16: about 512 KiB of
// output in float32, a multiple of 32 rows (the AMX block) and at least 64.
func linRows(out int) int {
	return max(64, (512<<10)/(4*max(out, 1))&^31)
}

// biasInto sets every row of y [N,out] to b [out], or to res's row plus
// b (res may be y).
func biasInto(threads int, y, res, b []float32, N, out int) {
	if res == nil {
		BiasRows(threads, y, b, N, out, false)
		return
	}
	parallel.For(threads, N, 64, func(_, lo, hi int) {
		for r := lo; r < hi; r++ {
			Add(1, y[r*out:(r+1)*out], res[r*out:(r+1)*out], b)
		}
	})
}

// BiasRows sets every row of y [N,out] to b [out], or adds b with acc:
// LinearForward's bias, for a product the caller runs itself (an input
// already stored in bf16). It panics if a slice is shorter than its shape.
func BiasRows[F Float](threads int, y, b []F, N, out int, acc bool) {
	_ = b[:out]
	y = y[:N*out]
	parallel.For(threads, N, 64, func(_, lo, hi int) {
		for r := lo; r < hi; r++ {
			row := y[r*out : (r+1)*out]
			if acc {
				AddRow(row, b)
			} else {
				copy(row, b)
			}
		}
	})
}

// LinearBackward is LinearForward's backward for dy [N,out]: it
// accumulates dW [out,in] += dyᵀ·x and db [out] += Σ_rows dy, and adds
// dy·W to dx [N,in] (or writes it there, with setDx; dx nil skips it),
// with the products in precision p across up to threads goroutines (in
// bf16 with float32 values, LinearBackwardBF16).
// LinearBackward panics if a slice is shorter than its shape.
func LinearBackward[F Float](threads int, p Prec, dx, dw, db, dy, x, w []F, N, in, out int, setDx bool) {
	if d32, ok := any(dy).([]float32); ok && p == PrecBF16 {
		var dx32 []float32
		if dx != nil {
			dx32 = F32(dx)
		}
		LinearBackwardBF16(threads, dx32, F32(dw), F32(db), d32, Float32B(false, N, in, F32(x), in), F32(w), N, in, out, setDx)
		return
	}
	if dx != nil {
		var beta F = 1
		if setDx {
			beta = 0
		}
		Gemm(threads, p, false, false, N, in, out, 1, dy, out, w, in, beta, dx, in)
	}
	Gemm(threads, p, true, false, out, in, N, 1, dy, out, x, in, 1, dw, in)
	BiasGrad(threads, db, dy, N, out)
}

// BiasGrad accumulates db [out] += Σ_rows dy for dy [N,out]:
// LinearBackward's bias gradient, for a weight gradient the caller runs
// itself. It panics if a slice is shorter than its shape.
func BiasGrad[F Float](threads int, db, dy []F, N, out int) {
	_ = db[:out]
	dy = dy[:N*out]
	parallel.For(threads, out, 64, func(_, lo, hi int) {
		d := db[lo:hi]
		for r := 0; r < N; r++ {
			AddRow(d, dy[r*out+lo:r*out+hi])
		}
	})
}

// AddRow accumulates dst += src on the calling goroutine (rows inside
// parallel loops): from 16 elements on with Axpy (a = 1, so the same sums
// as AddTo, vectorised and never split across threads), shorter rows in
// plain Go, where a kernel call's set-up would dominate. It panics if
// len(src) < len(dst).
func AddRow[F Float](dst, src []F) {
	if len(dst) >= 16 {
		Axpy(dst, 1, src)
		return
	}
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

// fillRows is the rows of dy that the bf16 linear backward packs at a
// time: a whole number of the transposed packing's tiles.
const fillRows = 32

// LinearBackwardBF16 is LinearBackward in bf16 for float32 values, with
// x given as op(B) of the weight gradient: Float32B(false, N, in, x, in),
// or packed once by the caller (PackedB) when several layers share it.
// dy is read once, by blocks of 32 rows, each rounded to bf16 while in
// cache both as dy's rows (for dx = dy·W) and as dyᵀ's columns (for
// dW += dyᵀ·x), and summed into db there; db adds the blocks' sums in
// order, whatever threads is.
func LinearBackwardBF16(threads int, dx, dw, db, dy []float32, x OperandB, w []float32, N, in, out int, setDx bool) {
	_ = dy[:N*out]
	src := func(r0, r1 int, _, _ []float32) []float32 { return dy[r0*out : r1*out] }
	linearBackwardBlocks(threads, dx, dw, db, src, x, w, N, in, out, setDx, nil)
}

// LinearBackwardFill is LinearBackwardBF16 for a gradient dy [N,out]
// that fill produces block by block: fill(r0, r1, blk, tmp) writes rows
// r0…r1 of dy into blk (rows out apart), with tmp (as long as blk) its own
// scratch, on up to threads goroutines at once for disjoint blocks, so dy
// is never stored in float32 nor read back to be packed. The products
// are LinearBackward's, bit for bit. scratch (N·out values, overwritten)
// holds dy's packed rows. LinearBackwardFill panics if a slice is shorter
// than its shape.
func LinearBackwardFill(threads int, dx, dw, db []float32, fill func(r0, r1 int, blk, tmp []float32), x, w []float32, N, in, out int, setDx bool, scratch []float32) {
	if len(scratch) < N*out {
		panic(fmt.Sprintf("kernels: LinearBackwardFill: scratch of %d values for a gradient [%d, %d]", len(scratch), N, out))
	}
	src := func(r0, r1 int, blk, tmp []float32) []float32 {
		fill(r0, r1, blk, tmp)
		return blk
	}
	linearBackwardBlocks(threads, dx, dw, db, src, Float32B(false, N, in, x, in), w, N, in, out, setDx, scratch)
}

// linearBackwardBlocks is the bf16 linear backward on dy given by blocks
// of fillRows rows: src(r0, r1, blk, tmp) returns rows r0…r1 of dy,
// written into blk or not. dy's packed rows go to scratch (N·out values)
// or, when it is nil, to a pooled buffer; dyᵀ always to a pooled buffer.
func linearBackwardBlocks(threads int, dx, dw, db []float32, src func(r0, r1 int, blk, tmp []float32) []float32, x OperandB, w []float32, N, in, out int, setDx bool, scratch []float32) {
	_, _, _ = dw[:out*in], db[:out], w[:out*in]
	if N == 0 || out == 0 {
		if dx != nil && setDx {
			clear(dx[:N*in])
		}
		return
	}
	var a, at BF16A
	var ab []BF16
	if scratch != nil {
		shapeBF16A(&a, N, out, AsBF16(Uint16s(scratch)))
	} else {
		ab = packBufs.getN(sizeA(N, out))
		shapeBF16A(&a, N, out, ab)
	}
	tb := packBufs.getN(sizeA(out, N))
	shapeBF16A(&at, out, N, tb)
	blocks := (N + fillRows - 1) / fillRows
	nt := min(max(threads, 1), blocks)
	// Per worker a block of dy and fill's scratch in float32, then per
	// block its row sums.
	bs := 2 * fillRows * out
	sb := packBufs.getN(2 * (nt*bs + blocks*out))
	f := dwords(sb)
	blk, sums := f[:nt*bs], f[nt*bs:]
	parallel.For(nt, blocks, 1, func(wk, lo, hi int) {
		y, tmp := blk[wk*bs:wk*bs+bs/2], blk[wk*bs+bs/2:(wk+1)*bs]
		for b := lo; b < hi; b++ {
			r0, r1 := b*fillRows, min((b+1)*fillRows, N)
			d := src(r0, r1, y[:(r1-r0)*out], tmp[:(r1-r0)*out])
			packBF16Both(&a, &at, d, out, r0, r1)
			s := sums[b*out : (b+1)*out]
			copy(s, d[:out])
			for r := 1; r < r1-r0; r++ {
				AddRow(s, d[r*out:(r+1)*out])
			}
		}
	})
	parallel.For(threads, out, 64, func(_, lo, hi int) {
		for b := range blocks {
			AddRow(db[lo:hi], sums[b*out+lo:b*out+hi])
		}
	})
	if dx != nil {
		var beta float32 = 1
		if setDx {
			beta = 0
		}
		GemmBF16(threads, 1, PackedA(&a), Float32B(false, out, in, w, in), beta, dx, in)
	}
	GemmBF16(threads, 1, PackedA(&at), x, 1, dw, in)
	packBufs.put(tb, sb)
	if ab != nil {
		packBufs.put(ab)
	}
}
