package kernels

import "sync"

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

// GemmP is Gemm in precision p. In PrecBF16 (float32 operands) it packs op(A)
// and op(B) to bf16 in pooled buffers and runs GemmBF16; a product small
// enough that Gemm would not fork, or a call from inside a parallel loop,
// runs on the calling goroutine. Panics as Gemm.
func GemmP[F Float](p Prec, transA, transB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) {
	if p != PrecBF16 {
		Gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	a32, ok := any(a).([]float32)
	if !ok {
		Gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	checkGemm(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	gemmBF16F32(transA, transB, m, n, k, float32(alpha), a32, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
}

// GemmSTP is GemmST in precision p: GemmP on the calling goroutine only.
// Panics as Gemm.
func GemmSTP[F Float](p Prec, transA, transB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) {
	if p != PrecBF16 {
		GemmST(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	a32, ok := any(a).([]float32)
	if !ok {
		GemmST(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	checkGemm(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	pa, pb := bf16APool.Get().(*BF16A), bf16BPool.Get().(*BF16B)
	packBF16A(pa, transA, m, k, a32, lda, false)
	packBF16B(pb, transB, k, n, any(b).([]float32), ldb, false)
	gemmBF16(pa, pb, float32(alpha), float32(beta), any(c).([]float32), ldc, false)
	bf16APool.Put(pa)
	bf16BPool.Put(pb)
}

func gemmBF16F32(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	pa, pb := bf16APool.Get().(*BF16A), bf16BPool.Get().(*BF16B)
	packBF16A(pa, transA, m, k, a, lda, true)
	packBF16B(pb, transB, k, n, b, ldb, true)
	gemmBF16(pa, pb, alpha, beta, c, ldc, true)
	bf16APool.Put(pa)
	bf16BPool.Put(pb)
}

var bf16BPool = sync.Pool{New: func() any { return new(BF16B) }}
