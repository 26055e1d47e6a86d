package kernels

import (
	"sync"
	"unsafe"

	"github.com/tokenmix/tokenmix/internal/parallel"
)

// gemmSerialFlops is the m·n·k below which Gemm does not fork: smaller
// products finish before a goroutine would start.
const gemmSerialFlops = 48 * 48 * 48

// gemm32 is the float32 GEMM across up to threads goroutines, after
// argument checks. It gives each thread one block of columns of C, or of
// rows when columns would split unevenly (e.g. n = 64) or too narrowly
// (below), and runs the single-threaded driver on it: exactly
// one fork/join per call. Column blocks are preferred because A is read in
// place, so no thread repeats another's packing; with row blocks every
// thread packs all of op(B).
func gemm32(threads int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if !transA && transB && m <= gemvRows(path) {
		gemv32NT(threads, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	nt := threads
	if nt <= 1 || m*n*k < gemmSerialFlops {
		gemm32ST(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	nr := gemmPanel(path)
	// Largest block over the ideal share, for each way of splitting.
	colUnits, rowUnits := (n+nr-1)/nr, (m+gemmMR-1)/gemmMR
	colImb := float64((colUnits+nt-1)/nt*nr*nt) / float64(n)
	rowImb := float64((rowUnits+nt-1)/nt*gemmMR*nt) / float64(m)
	// A transposed is packed into micro-panels only where 256 columns or
	// more reuse it (gemmBlocked). When a column block would be narrower
	// but the whole product is not, and A is the larger operand (m ≥ 2n,
	// a weight gradient Wᵀ-shaped like fc1's), split the rows: each thread
	// packs its own rows of Aᵀ instead of reading them in place at a
	// stride of lda (often a power of two, whose lines share a few L1
	// sets), at the price of packing all of B.
	rowsForA := transA && n >= 256 && n/nt < 256 && m >= 2*n && gemmTransKernels(path)
	// A read in place: a thread's strip of A rows serves every panel of
	// its column block, so a block of fewer than 4 panels reuses each
	// strip too little. Where every thread would still get 512 rows or
	// more, split the rows and let each thread pack all of op(B) (a
	// projection x·Wᵀ or dy·W over 4096 tokens, n = 256 on 2 threads:
	// 2–5% faster; n = 128, k = 64: 28%; 256 rows a thread: even;
	// Intel Xeon, family 6 model 207).
	rowsForReuse := !transA && n < 4*nr*nt && m >= 512*nt
	if colImb <= rowImb+0.05 && !rowsForA && !rowsForReuse {
		parallel.For(nt, n, nr, func(_, lo, hi int) {
			bo := lo
			if transB {
				bo = lo * ldb
			}
			gemm32ST(transA, transB, m, hi-lo, k, alpha, a, lda, b[bo:], ldb, beta, c[lo:], ldc)
		})
		return
	}
	parallel.For(nt, m, gemmMR, func(_, lo, hi int) {
		ao := lo * lda
		if transA {
			ao = lo
		}
		gemm32Blocked(transA, transB, hi-lo, n, k, alpha, a[ao:], lda, b, ldb, beta, c[lo*ldc:], ldc)
	})
}

// gemm32ST is the single-threaded float32 GEMM after argument checks.
func gemm32ST(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if !transA && transB && m <= gemvRows(path) {
		gemvNT(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	gemm32Blocked(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// gemm32Blocked is gemm32ST without the choice of gemvNT: gemm32's row
// blocks take the product the whole m chose, so that no row's result
// depends on how many rows its block has.
func gemm32Blocked(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	w := gemmPool.Get().(*gemmWork)
	gemmBlocked(w, path, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	gemmPool.Put(w)
}

// gemmPool recycles pack buffers, so steady-state calls do not allocate.
var gemmPool = sync.Pool{New: func() any { return new(gemmWork) }}

// gemmWork is one goroutine's GEMM scratch: packed B, packed op(A) rows (TN)
// and a spill tile for partial tiles.
type gemmWork struct {
	b, a []float32
	tile [gemmMR * 64]float32
}

// bufs returns packed-B and packed-A buffers of at least nb and na floats,
// 64-byte aligned, reusing earlier ones when they are large enough.
func (w *gemmWork) bufs(nb, na int) (bp, ap []float32) {
	if len(w.b) < nb {
		w.b = alignedFloats(nb)
	}
	if len(w.a) < na {
		w.a = alignedFloats(na)
	}
	return w.b, w.a
}

// alignedFloats allocates n float32s starting on a 64-byte boundary (Go only
// guarantees the element alignment).
func alignedFloats(n int) []float32 {
	s := make([]float32, n+16)
	off := int((64 - uintptr(unsafe.Pointer(&s[0]))&63) & 63 / 4)
	return s[off : off+n : off+n]
}

// gemvRows is the most rows of A that the NT products on path p take
// without packing B: below it, packing B (a whole weight matrix for one
// token in decoding) costs more than the product. The AVX2 path's gemv has
// no dot tiles (one dot product per element of C), and from 4 rows on the
// blocked kernel beats it at every k measured, most at small k, as LSH's
// chunk scores (16×32×16: 0.8 against 16 GFLOP/s on one Zen 3 core;
// 16×1024×256: 13 against 35; 2×1024×256: 12 against 9).
func gemvRows(p Path) int {
	if p == PathAVX2 {
		return 3
	}
	return 16
}

// gemv32NT computes C = alpha·A·Bᵀ + beta·C for a few rows of A without
// packing (gemvNT), across up to threads goroutines over blocks of columns.
func gemv32NT(threads, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	grain := (max(16, (1<<15)/max(k*m, 1)) + dotNR - 1) &^ (dotNR - 1) // whole tiles
	parallel.For(threads, n, grain, func(_, lo, hi int) {
		gemvNT(m, hi-lo, k, alpha, a, lda, b[lo*ldb:], ldb, beta, c[lo:], ldc)
	})
}

// gemvNT computes C = alpha·A·Bᵀ + beta·C on the calling goroutine, each
// C[i,j] a dot product of contiguous rows of A and B: 4×4 tiles of them at
// once with AVX-512 (dotNT), one at a time (dot32) for the other paths and
// the last columns. With beta = 0, C is not read.
func gemvNT(m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for j := dotNT(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); j < n; j++ {
		bj := b[j*ldb : j*ldb+k]
		for i := range m {
			v := alpha * dot32(a[i*lda:i*lda+k], bj)
			if beta != 0 {
				v += beta * c[i*ldc+j]
			}
			c[i*ldc+j] = v
		}
	}
}

const (
	dotMR = 4 // rows of A per dot tile
	dotNR = 4 // rows of B (columns of C) per dot tile
)
