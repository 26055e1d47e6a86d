package kernels

import "github.com/tokenmix/tokenmix/internal/parallel"

// Linear sets y [N,out] = x [N,in]·Wᵀ + b, with W [out,in] and b [out] as
// in PyTorch's nn.Linear, with the product in precision p. The bias is
// written first and the product added by GemmP (beta = 1), so y is written
// once. Linear panics if a slice is shorter than its shape.
func Linear[F Float](p Prec, y, x, w, b []F, N, out, in int) {
	biasRows(y, b, N, out)
	GemmP(p, false, true, N, out, in, 1, x, in, w, in, 1, y, out)
}

// LinearBF16 is Linear with bf16 products and float32 sums, on W packed
// once by PackBF16B(wb, true, in, out, W, in); x is converted as it enters
// the product.
func LinearBF16(y, x []float32, wb *BF16B, b []float32, N, out, in int) {
	biasRows(y, b, N, out)
	GemmBF16Rows(1, N, x, in, wb, 1, y, out)
}

// biasRows sets every row of y [N,out] to b [out].
func biasRows[F Float](y, b []F, N, out int) {
	_ = b[:out]
	y = y[:N*out]
	parallel.For(N, 64, func(_, lo, hi int) {
		for r := lo; r < hi; r++ {
			copy(y[r*out:(r+1)*out], b)
		}
	})
}

// LinearGrad accumulates the parameter gradients of Linear: dW [out,in] +=
// dyᵀ·x and db [out] += Σ_rows dy, for dy [N,out] and x [N,in], with the
// product in precision p. (The input gradient is one GemmP: dx += dy·W.)
// LinearGrad panics if a slice is shorter than its shape.
func LinearGrad[F Float](p Prec, dw, db, dy, x []F, N, out, in int) {
	GemmP(p, true, false, out, in, N, 1, dy, out, x, in, 1, dw, in)
	_ = db[:out]
	dy = dy[:N*out]
	parallel.For(out, 64, func(_, lo, hi int) {
		d := db[lo:hi]
		for r := 0; r < N; r++ {
			AddTo(d, dy[r*out+lo:r*out+hi])
		}
	})
}
