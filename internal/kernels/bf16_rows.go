package kernels

import (
	"unsafe"

	"github.com/tokenmix/tokenmix/internal/parallel"
)

// Packing from values already in bf16 (activations stored in bf16) needs
// no rounding: a pair of the packed layouts is two bf16 values side by
// side, so the transposed layouts are transposes of 32-bit units, which
// Transpose moves bit for bit.

// dwords views x (from a pair boundary) as its len(x)/2 32-bit units: the
// pairs of the packed layouts, or float32 scratch in a bf16 buffer.
func dwords(x []BF16) []float32 {
	if len(x) < 2 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&x[0])), len(x)/2)
}

// PackBF16BTRows packs op(B) = Bᵀ [k, n] for B [n, k] given as bf16 rows
// ldb apart (ldb even, and b starting on a 4-byte boundary, as at an even
// offset into float32 storage), as PackBF16B(_, dst, true, k,
// n, ·) packs their float32 values: bit for bit the same data. A pair of
// op(B) is two adjacent values of a row of B, so a panel is the transpose
// of 64 rows' 32-bit units. It reuses dst.Data when it is large enough
// and runs across up to threads goroutines. It panics if ldb is odd.
func PackBF16BTRows(threads int, dst *BF16B, k, n int, b []BF16, ldb int) {
	if ldb%2 != 0 {
		panic("kernels: PackBF16BTRows with an odd row stride")
	}
	pairs, panels := (k+1)/2, (n+bf16Panel-1)/bf16Panel
	if dst.reset(k, n) == 0 {
		return
	}
	kw := k / 2 // whole pairs
	run := func(lo, hi int) {
		for pn := lo; pn < hi; pn++ {
			panel := dst.Data[pn*pairs*2*bf16Panel : (pn+1)*pairs*2*bf16Panel]
			j0 := pn * bf16Panel
			cols := min(bf16Panel, n-j0)
			if cols < bf16Panel || k%2 != 0 {
				clear(panel)
			}
			if kw > 0 {
				Transpose(dwords(panel), bf16Panel, dwords(b[j0*ldb:(j0+cols-1)*ldb+2*kw]), ldb/2, cols, kw)
			}
			if k%2 != 0 {
				for j := range cols {
					panel[(kw*bf16Panel+j)*2] = b[(j0+j)*ldb+k-1]
				}
			}
		}
	}
	if serialPack(threads, k*n, panels, 1) {
		run(0, panels)
		return
	}
	parallel.For(threads, panels, 1, func(_, lo, hi int) { run(lo, hi) })
}

// PackBF16ATRows packs op(A) = Aᵀ [m, k] for A [k, m] given as bf16 rows
// lda apart, as PackBF16A(_, dst, true, m, k, ·) packs their float32
// values: bit for bit the same data. Rows 2q and 2q+1 of A, interleaved
// into pairs, give pair q of every output row, 16 pairs by 64 rows at a
// time transposed as 32-bit units. It reuses dst.Data when it is large
// enough and runs on the calling goroutine.
func PackBF16ATRows(dst *BF16A, m, k int, a []BF16, lda int) {
	st := bf16Stride(k)
	if cap(dst.Data) < m*st {
		dst.Data = make([]BF16, m*st)
	}
	*dst = BF16A{M: m, K: k, Stride: st, Data: dst.Data[:m*st]}
	for i := range m {
		clear(dst.Data[i*st+k/2*2 : (i+1)*st])
	}
	const qb, cb = 16, 64 // pairs by output rows per transpose
	var tmp [qb * cb * 2]BF16
	kw := k / 2
	for c0 := 0; c0 < m; c0 += cb {
		nc := min(cb, m-c0)
		for q0 := 0; q0 < kw; q0 += qb {
			nq := min(qb, kw-q0)
			for qq := range nq {
				r0 := a[2*(q0+qq)*lda+c0 : 2*(q0+qq)*lda+c0+nc]
				r1 := a[(2*(q0+qq)+1)*lda+c0 : (2*(q0+qq)+1)*lda+c0+nc]
				row := tmp[qq*cb*2 : (qq+1)*cb*2]
				for c := pairRowsVec(row, r0, r1, nc); c < nc; c++ {
					row[2*c], row[2*c+1] = r0[c], r1[c]
				}
			}
			Transpose(dwords(dst.Data[c0*st+2*q0:]), st/2, dwords(tmp[:]), cb, nq, nc)
		}
	}
	if k%2 != 0 {
		for i := range m {
			dst.Data[i*st+k-1] = a[(k-1)*lda+i]
		}
	}
}
