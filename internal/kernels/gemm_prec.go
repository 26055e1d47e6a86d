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
	gemmBF16F32(transA, transB, m, n, k, float32(alpha), a32, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc, true)
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
	gemmBF16F32(transA, transB, m, n, k, float32(alpha), a32, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc, false)
}

// gemmBF16F32 packs both float32 operands in pooled buffers and runs the
// bf16 product, across threads when par.
func gemmBF16F32(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, par bool) {
	var pa BF16A
	var pb BF16B
	pa.Data, pb.Data = packBufs.get(sizeA(m, k)), packBufs.get(sizeB(k, n))
	packBF16A(&pa, transA, m, k, a, lda, par)
	packBF16B(&pb, transB, k, n, b, ldb, par)
	gemmBF16(&pa, &pb, alpha, beta, c, ldc, par)
	packBufs.put(pa.Data, pb.Data)
}

// packBufs holds the packing buffers of GemmP and GemmSTP between calls.
// Unlike a sync.Pool it keeps them across garbage collections: a training
// step packs the same shapes every step, and reallocating megabytes per
// product would cost more than the packing.
var packBufs bufList

// bufList is a free list of []BF16 buffers, safe for concurrent use.
type bufList struct {
	mu   sync.Mutex
	free [][]BF16
}

// get returns the smallest free buffer of capacity ≥ n, else the largest
// (or nil when none is free): the packers grow it as they need, and put
// returns it grown.
func (l *bufList) get(n int) []BF16 {
	l.mu.Lock()
	defer l.mu.Unlock()
	best := -1
	for i, b := range l.free {
		switch {
		case best < 0:
			best = i
		case cap(b) >= n && (cap(l.free[best]) < n || cap(b) < cap(l.free[best])):
			best = i
		case cap(l.free[best]) < n && cap(b) > cap(l.free[best]):
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := l.free[best]
	l.free[best] = l.free[len(l.free)-1]
	l.free = l.free[:len(l.free)-1]
	return b
}

// put returns buffers to the list.
func (l *bufList) put(bufs ...[]BF16) {
	l.mu.Lock()
	l.free = append(l.free, bufs...)
	l.mu.Unlock()
}

// sizeA and sizeB are the packed sizes of op(A) [m,k] and op(B) [k,n].
func sizeA(m, k int) int { return m * bf16Stride(k) }
func sizeB(k, n int) int {
	return (n + bf16Panel - 1) / bf16Panel * ((k + 1) / 2) * 2 * bf16Panel
}
