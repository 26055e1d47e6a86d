package kernels

// Prec is the arithmetic of a matrix product.
type Prec uint8

const (
	// PrecFP32 multiplies and sums in the operands' own type.
	PrecFP32 Prec = iota
	// PrecBF16 rounds both operands to bf16 (to nearest even) and multiplies
	// and sums in float32, on the bf16 GEMM path (BF16Path). It applies to
	// float32 operands; a float64 product stays float64.
	PrecBF16
)

// PrecOf is the product arithmetic of a model precision: PrecBF16 for "bf16",
// PrecFP32 for every other ("", "fp32", and "fp16", whose products run in
// float32 on half-precision storage).
func PrecOf(precision string) Prec {
	if precision == "bf16" {
		return PrecBF16
	}
	return PrecFP32
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices, where
// op(X) is X or Xᵀ as transA/transB say, in precision p, across up to
// threads goroutines (threads ≤ 1: on the calling goroutine only, for
// callers that already split their work). op(A) is m×k, op(B) is k×n and
// C is m×n; lda, ldb and ldc are the row strides of A, B and C as stored.
// When beta is 0, C is not read (NaNs in C do not propagate). The result
// does not depend on threads.
//
// In PrecBF16 with float32 operands, Gemm packs op(A) and op(B) to bf16 in
// pooled buffers and runs GemmBF16's product.
//
// Gemm panics if a dimension is negative or a slice is too short for its
// shape and stride.
func Gemm[F Float](threads int, p Prec, transA, transB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) {
	checkGemm(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	c32, ok := any(c).([]float32)
	if !ok {
		if m > 0 && n > 0 {
			RefGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		}
		return
	}
	a32, b32 := any(a).([]float32), any(b).([]float32)
	if p == PrecBF16 {
		GemmBF16(threads, float32(alpha), Float32A(transA, m, k, a32, lda), Float32B(transB, k, n, b32, ldb), float32(beta), c32, ldc)
		return
	}
	if m == 0 || n == 0 {
		return
	}
	if threads <= 1 {
		gemm32ST(transA, transB, m, n, k, float32(alpha), a32, lda, b32, ldb, float32(beta), c32, ldc)
		return
	}
	gemm32(threads, transA, transB, m, n, k, float32(alpha), a32, lda, b32, ldb, float32(beta), c32, ldc)
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
// contract of Gemm in PrecFP32 but does no checking and runs on one
// goroutine.
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
