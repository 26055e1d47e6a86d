//go:build !purego

package kernels

import "unsafe"

// The vector prefixes of the 16-bit conversions and of bf16 packing: each
// function converts what the AVX-512 kernels cover (on the AVX-512 path)
// and returns how much that was, leaving the rest to the caller's Go loop.

// toBF16Vec converts the first len(src)&^15 values (AVX-512).
func toBF16Vec(dst []BF16, src []float32) int {
	n := len(src) &^ 15
	if path != PathAVX512 || n == 0 {
		return 0
	}
	toBF16AVX512(&dst[0], &src[0], n)
	return n
}

// fromBF16Vec converts the first len(src)&^15 values on AVX-512, the
// first len(src)&^7 on AVX2.
func fromBF16Vec(dst []float32, src []BF16) int {
	switch n := len(src); {
	case path == PathAVX512 && n >= 16:
		fromBF16AVX512(&dst[0], &src[0], n&^15)
		return n &^ 15
	case path == PathAVX2 && n >= 8:
		fromBF16AVX2(&dst[0], &src[0], n&^7)
		return n &^ 7
	}
	return 0
}

// keepBF16Vec is Format16.KeepST for bf16 on the first len(x)&^15 values.
// From keepNTMin values on, with dst 32-byte aligned, the bf16 go out by
// non-temporal stores: what is kept in 16 bits (fc1's output, attention's
// q, k, v and o) is read again only in a later pass, so reading its lines
// into the cache before overwriting them is wasted traffic. The bf16
// training step ran 1.016× faster (d256, T 1024, batch 4, 40 in-process
// alternations, Intel Xeon family 6 model 207).
func keepBF16Vec(dst []BF16, x []float32) int {
	n := len(x) &^ 15
	if path != PathAVX512 || n == 0 {
		return 0
	}
	if n >= keepNTMin && uintptr(unsafe.Pointer(&dst[0]))%32 == 0 {
		keepBF16NTAVX512(&dst[0], &x[0], n)
		return n
	}
	keepBF16AVX512(&dst[0], &x[0], n)
	return n
}

// keepNTMin is the values from which keepBF16Vec stores non-temporally.
const keepNTMin = 16 << 10

// roundHalfVec rounds the first len(x)&^15 values (F16C on AVX-512).
func roundHalfVec(x []float32) int {
	n := len(x) &^ 15
	if path != PathAVX512 || n == 0 {
		return 0
	}
	roundHalfAVX512(&x[0], n)
	return n
}

// toHalfVec converts the first len(src)&^15 values (F16C on AVX-512).
func toHalfVec(dst []uint16, src []float32) int {
	n := len(src) &^ 15
	if path != PathAVX512 || n == 0 {
		return 0
	}
	toHalfAVX512(&dst[0], &src[0], n)
	return n
}

// fromHalfVec converts the first len(src)&^15 values (F16C on AVX-512).
func fromHalfVec(dst []float32, src []uint16) int {
	n := len(src) &^ 15
	if path != PathAVX512 || n == 0 {
		return 0
	}
	fromHalfAVX512(&dst[0], &src[0], n)
	return n
}

// packVec reports whether the bf16 packers use their vector kernels.
func packVec() bool { return path == PathAVX512 }

// toBF16RowsVec converts the first k&^15 values of rows lo…hi of A (row
// stride lda) into dst's rows (stride st), and returns how many values of
// each row it converted.
func toBF16RowsVec(dst []BF16, st int, a []float32, lda, lo, hi, k int) int {
	if !packVec() || hi <= lo || k < 16 {
		return 0
	}
	k16 := k &^ 15
	toBF16RowsAVX512(&dst[lo*st], st, &a[lo*lda], lda, hi-lo, k16/16)
	return k16
}

// pairPanelVec pairs rows 2q and 2q+1 (q < pairs) of the first cols&^15
// columns of src (rows ldb apart) into dst in the VNNI pair layout, and
// returns how many columns it covered.
func pairPanelVec(dst []BF16, src []float32, ldb, pairs, cols int) int {
	if !packVec() || cols < 16 || pairs < 1 {
		return 0
	}
	c0 := cols &^ 15
	pairPanelAVX512(&dst[0], &src[0], ldb, pairs, c0/16)
	return c0
}

// expSubMulPackVec runs ExpSubMulPackBF16's fused kernel, which needs
// rows in pairs, whole panels of columns, lse and d one value a row, and
// A's rows unpadded; it says whether it ran.
func expSubMulPackVec(dsa *BF16A, dsb, pb *BF16B, s, dp []float32, rows, cols int, lse []float32, ls int, d []float32, ds int) bool {
	if !packVec() || rows%2 != 0 || cols%bf16Panel != 0 || ls != 1 || ds != 1 || bf16Stride(cols) != cols || rows == 0 || cols == 0 {
		return false
	}
	_, _, _, _ = s[:rows*cols], dp[:rows*cols], lse[:rows], d[:rows]
	dsa.reset(rows, cols)
	dsb.reset(rows, cols)
	pb.reset(rows, cols)
	expSubMulPackAVX512(&dsa.Data[0], &dsb.Data[0], &pb.Data[0], &s[0], &dp[0], &lse[0], &d[0], rows/2, cols/bf16Panel, dsb.panelStride())
	return true
}

// onlineSoftmaxBF16Vec runs OnlineSoftmaxBF16 with the exps rounded into
// pa by the fused kernel, which needs whole vectors a row; it says whether
// it ran.
func onlineSoftmaxBF16Vec(x []float32, rows, cols int, m, l []float32, ms int, alpha []float32, pa *BF16A) bool {
	if !packVec() || cols%16 != 0 || rows == 0 || cols == 0 {
		return false
	}
	_ = x[:rows*cols]
	if pa.reset(rows, cols) > cols {
		for i := range rows {
			clear(pa.Data[i*pa.Stride+cols : (i+1)*pa.Stride])
		}
	}
	asmVec(true).onlineSoftmaxTo(x, rows, cols, m, l, ms, alpha, pa)
	return true
}

// geluBackPackVec runs GeluBackPackBF16's fused kernel, which needs rows
// in pairs and whole panels of columns; it says whether it ran.
func geluBackPackVec(dg []float32, dst *BF16B, k0 int, h []BF16, n, k int) bool {
	if !packVec() || k%2 != 0 || n%bf16Panel != 0 || k == 0 || n == 0 {
		return false
	}
	_, _ = dg[:k*n], h[:k*n]
	geluBackPackAVX512(&dg[0], &dst.Data[k0*bf16Panel], &h[0], k/2, n/bf16Panel, dst.panelStride())
	return true
}

// pairT16Tiles packs the 16-row by 32-value tiles of op(A)'s rows i0…i0+n
// (A transposed, rows lda apart) into out (rows st apart), and returns
// the output rows and source rows the tiles covered. It goes across A's
// rows 32 at a time, reading each row's n values in one run, rather
// than down a column strip, whose rows (often a power of two of bytes
// apart) defeat the prefetchers: 1.3–1.5× on 4096×1024 and 4096×256
// (Intel Xeon, family 6 model 207).
func pairT16Tiles(out []BF16, st int, a []float32, lda, i0, n, k int) (nt, kt int) {
	if !packVec() {
		return 0, 0
	}
	nt, kt = n&^15, k&^31
	for q := 0; q < kt; q += 32 {
		for r := 0; r < nt; r += 16 {
			pairT16AVX512(&out[r*st+q], st, &a[q*lda+i0+r], lda)
		}
	}
	return nt, kt
}

// pairTB16Tiles packs the 16-column by 32-value tiles of the transposed
// panel starting at column j0 of op(B) (B's rows ldb apart) into panel,
// and returns the columns and values the tiles covered.
func pairTB16Tiles(panel []BF16, b []float32, ldb, j0, cols, k int) (ct, kt int) {
	if !packVec() {
		return 0, 0
	}
	ct, kt = cols&^15, k&^31
	for c := 0; c < ct; c += 16 {
		for q := 0; q < kt; q += 32 {
			pairTB16AVX512(&panel[(q/2*bf16Panel+c)*2], &b[(j0+c)*ldb+q], ldb)
		}
	}
	return ct, kt
}

// pairRowsVec interleaves the first cols&^15 values of bf16 rows r0 and
// r1 into dst, and returns how many it covered.
func pairRowsVec(dst []BF16, r0, r1 []BF16, cols int) int {
	if !packVec() || cols < 16 {
		return 0
	}
	c0 := cols &^ 15
	pairRowsAVX512(&dst[0], &r0[0], &r1[0], c0)
	return c0
}
