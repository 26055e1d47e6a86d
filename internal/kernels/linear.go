package kernels

import (
	"fmt"
	"unsafe"

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
	BiasRows(threads, y, b, N, out, acc)
	if wb != nil {
		GemmBF16(threads, 1, Float32A(false, N, in, any(x).([]float32), in), PackedB(wb), 1, any(y).([]float32), out)
		return
	}
	Gemm(threads, p, false, true, N, out, in, 1, x, in, w, in, 1, y, out)
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
// with the products in precision p across up to threads goroutines.
// LinearBackward panics if a slice is shorter than its shape.
func LinearBackward[F Float](threads int, p Prec, dx, dw, db, dy, x, w []F, N, in, out int, setDx bool) {
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

// fillRows is the rows of dy that LinearBackwardFill has fill produce and
// packs at a time: a whole number of the transposed packing's tiles.
const fillRows = 32

// LinearBackwardFill is LinearBackward in bf16 (float32 only) for a
// gradient dy [N,out] that fill produces block by block: fill(r0, r1, blk,
// tmp) writes rows r0…r1 of dy into blk (rows out apart), with tmp (as
// long as blk) its own scratch, on up to threads goroutines at once for
// disjoint blocks. Each block is rounded to bf16 while in cache, as the
// rows of dy (for dx = dy·W) and as the columns of dyᵀ (for dW += dyᵀ·x),
// so dy is never stored in float32 nor read back to be packed. The products are LinearBackward's, bit for bit; db
// adds dy's rows by blocks of 32, the blocks' sums in order, whatever
// threads is. scratch (N·out values, overwritten) holds dy's packed rows;
// dyᵀ takes a pooled buffer. LinearBackwardFill panics if a slice is
// shorter than its shape.
func LinearBackwardFill(threads int, dx, dw, db []float32, fill func(r0, r1 int, blk, tmp []float32), x, w []float32, N, in, out int, setDx bool, scratch []float32) {
	_, _, _, _ = dw[:out*in], db[:out], x[:N*in], w[:out*in]
	if len(scratch) < N*out {
		panic(fmt.Sprintf("kernels: LinearBackwardFill: scratch of %d values for a gradient [%d, %d]", len(scratch), N, out))
	}
	if N == 0 || out == 0 {
		if dx != nil && setDx {
			clear(dx[:N*in])
		}
		return
	}
	var a, at BF16A
	shapeBF16A(&a, N, out, AsBF16(Uint16s(scratch)))
	tb := packBufs.get(sizeA(out, N))
	if cap(tb) < sizeA(out, N) {
		tb = make([]BF16, sizeA(out, N))
	}
	shapeBF16A(&at, out, N, tb[:cap(tb)])
	blocks := (N + fillRows - 1) / fillRows
	nt := min(max(threads, 1), blocks)
	// Per worker a block of dy and fill's scratch in float32, then per
	// block its row sums.
	bs := 2 * fillRows * out
	sb := packBufs.get(2 * (nt*bs + blocks*out))
	if cap(sb) < 2*(nt*bs+blocks*out) {
		sb = make([]BF16, 2*(nt*bs+blocks*out))
	}
	f := unsafe.Slice((*float32)(unsafe.Pointer(&sb[0])), nt*bs+blocks*out)
	blk, sums := f[:nt*bs], f[nt*bs:]
	parallel.For(nt, blocks, 1, func(wk, lo, hi int) {
		y, tmp := blk[wk*bs:wk*bs+bs/2], blk[wk*bs+bs/2:(wk+1)*bs]
		for b := lo; b < hi; b++ {
			r0, r1 := b*fillRows, min((b+1)*fillRows, N)
			fill(r0, r1, y[:(r1-r0)*out], tmp[:(r1-r0)*out])
			packBF16Both(&a, &at, y, out, r0, r1)
			s := sums[b*out : (b+1)*out]
			copy(s, y[:out])
			for r := 1; r < r1-r0; r++ {
				AddRow(s, y[r*out:(r+1)*out])
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
	GemmBF16(threads, 1, PackedA(&at), Float32B(false, N, in, x, in), 1, dw, in)
	packBufs.put(tb, sb)
}
