package kernels

import "github.com/tokenmix/tokenmix/internal/parallel"

// Gemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices, where
// op(X) is X or Xᵀ as transA/transB say. op(A) is m×k, op(B) is k×n and C is
// m×n; lda, ldb and ldc are the row strides of A, B and C as stored. When
// beta is 0, C is not read (NaNs in C do not propagate).
//
// Gemm panics if a dimension is negative or a slice is too short for its
// shape and stride.
func Gemm[F Float](transA, transB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) {
	checkGemm(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if c32, ok := any(c).([]float32); ok {
		gemm32(transA, transB, m, n, k, float32(alpha), any(a).([]float32), lda, any(b).([]float32), ldb, float32(beta), c32, ldc)
		return
	}
	RefGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// GemmBatched computes batch independent products
// C_i = alpha·op(A_i)·op(B_i) + beta·C_i, where X_i starts at X[i*strideX].
// It is the strided-batched GEMM that per-head attention uses. With at least
// as many products as threads it runs whole products in parallel (one
// fork/join); otherwise each product is split across the threads. The C_i
// must not overlap.
//
// GemmBatched panics if batch is negative or if Gemm would panic on any
// product.
func GemmBatched[F Float](transA, transB bool, m, n, k int, alpha F, a []F, lda, strideA int, b []F, ldb, strideB int, beta F, c []F, ldc, strideC int, batch int) {
	if batch < 0 {
		panic("kernels: negative GEMM batch")
	}
	// Check every product here: a panic inside a worker could not be recovered.
	for i := 0; i < batch; i++ {
		checkGemm(transA, transB, m, n, k, len(from(a, i*strideA)), lda, len(from(b, i*strideB)), ldb, len(from(c, i*strideC)), ldc)
	}
	if batch == 0 || m == 0 || n == 0 {
		return
	}
	if batch >= parallel.Threads() {
		parallel.For(batch, 1, func(_, lo, hi int) {
			for i := lo; i < hi; i++ {
				GemmST(transA, transB, m, n, k, alpha, from(a, i*strideA), lda, from(b, i*strideB), ldb, beta, from(c, i*strideC), ldc)
			}
		})
		return
	}
	for i := 0; i < batch; i++ {
		Gemm(transA, transB, m, n, k, alpha, from(a, i*strideA), lda, from(b, i*strideB), ldb, beta, from(c, i*strideC), ldc)
	}
}

// from returns x[off:], or an empty slice when off is past the end (a
// product with an empty operand may start past it).
func from[F Float](x []F, off int) []F {
	return x[min(off, len(x)):]
}

func checkGemm(transA, transB bool, m, n, k, la, lda, lb, ldb, lc, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic("kernels: negative GEMM dimension")
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	need := func(rows, cols, ld, l int, name string) {
		if rows == 0 || cols == 0 {
			return
		}
		if ld < cols {
			panic("kernels: GEMM stride of " + name + " smaller than its row")
		}
		if l < (rows-1)*ld+cols {
			panic("kernels: GEMM slice " + name + " too short")
		}
	}
	need(ar, ac, lda, la, "A")
	need(br, bc, ldb, lb, "B")
	need(m, n, ldc, lc, "C")
}

// RefGemm is the plain-Go GEMM: the test oracle and the fallback. It has the
// contract of Gemm but does no checking and runs on one goroutine.
func RefGemm[F Float](transA, transB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) {
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(ci)
		} else if beta != 1 {
			for j := range ci {
				ci[j] *= beta
			}
		}
		for p := 0; p < k; p++ {
			var aip F
			if transA {
				aip = a[p*lda+i]
			} else {
				aip = a[i*lda+p]
			}
			aip *= alpha
			if aip == 0 {
				continue
			}
			if transB {
				for j := range ci {
					ci[j] += aip * b[j*ldb+p]
				}
			} else {
				bp := b[p*ldb : p*ldb+n]
				for j := range ci {
					ci[j] += aip * bp[j]
				}
			}
		}
	}
}

// GemmST is Gemm on the calling goroutine only, for callers that already
// split work across threads (e.g. per-head attention inside parallel.For).
// Panics as Gemm.
func GemmST[F Float](transA, transB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) {
	checkGemm(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if c32, ok := any(c).([]float32); ok {
		gemm32ST(transA, transB, m, n, k, float32(alpha), any(a).([]float32), lda, any(b).([]float32), ldb, float32(beta), c32, ldc)
		return
	}
	RefGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
