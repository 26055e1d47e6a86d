package kernels

import "github.com/tokenmix/tokenmix/internal/parallel"

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
