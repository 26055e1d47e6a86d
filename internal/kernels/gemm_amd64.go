//go:build !purego

package kernels

//go:generate go run ./internal/asmgen

// FMAPeakLoop returns the widest float32 FMA peak loop of the path in use
// (iterations of independent FMAs on registers), its instruction set
// ("avx512" or "avx2") and its flops per iteration, for `tokenmix bench
// peak`; loop is nil where there is none.
func FMAPeakLoop() (isa string, flopsPerIter float64, loop func(iters int)) {
	switch path {
	case PathAVX512:
		return "avx512", 16 * 16 * 2, fmaPeak512
	case PathAVX2:
		return "avx2", 12 * 8 * 2, fmaPeak256
	}
	return "", 0, nil
}

// packBTGather512 packs 16·groups columns of op(B) = Bᵀ: for g < groups and
// q < kc, dst[q·pw+16g+i] = src[(16g+i)·ldb+q] for i < 16 (AVX-512 gathers).
//
//go:noescape
func packBTGather512(dst *float32, pw int, src *float32, ldb int, kc int, groups int)

// packBTTrans8 packs 8·groups columns of op(B) = Bᵀ: for g < groups and
// q < kc (a positive multiple of 8), dst[q·pw+8g+i] = src[(8g+i)·ldb+q] for
// i < 8 (AVX2 8×8 register transposes).
//
//go:noescape
func packBTTrans8(dst *float32, pw int, src *float32, ldb int, kc int, groups int)

// packBT packs columns j0..j0+cols of op(B) = Bᵀ (kc of them from q0) into
// dst with row length pw, and returns how many columns it packed: whole
// groups of 16 on the AVX-512 path, of 8 on the AVX2 path (the caller packs
// the rest), else 0.
func packBT(p Path, dst []float32, pw int, b []float32, ldb, q0, kc, j0, cols int) int {
	if p == PathAVX2 {
		return packBTAVX2(dst, pw, b, ldb, q0, kc, j0, cols)
	}
	g := cols / 16
	if p != PathAVX512 || g == 0 || kc == 0 || 16*ldb > 1<<31/4 {
		return 0
	}
	_ = dst[(kc-1)*pw+16*g-1]
	_ = b[(j0+16*g-1)*ldb+q0+kc-1]
	packBTGather512(&dst[0], pw, &b[j0*ldb+q0], ldb, kc, g)
	return 16 * g
}

// packBTAVX2 is packBT on the AVX2 path: whole groups of 8 columns, the
// rows q below kc rounded down to a multiple of 8 by 8×8 transposes, the
// last kc mod 8 rows by a loop.
func packBTAVX2(dst []float32, pw int, b []float32, ldb, q0, kc, j0, cols int) int {
	g, k8 := cols/8, kc&^7
	if g == 0 || k8 == 0 {
		return 0
	}
	n := 8 * g
	_ = dst[(kc-1)*pw+n-1]
	_ = b[(j0+n-1)*ldb+q0+kc-1]
	packBTTrans8(&dst[0], pw, &b[j0*ldb+q0], ldb, k8, g)
	for q := k8; q < kc; q++ {
		row := dst[q*pw : q*pw+n]
		for j := range row {
			row[j] = b[(j0+j)*ldb+q0+q]
		}
	}
	return n
}

// packATPanels6 copies groups full micro-panels of op(A) = Aᵀ: for q < kc
// and g < groups, dst[g·pstride+6q+i] = src[q·lda+6g+i] for i < 6.
//
//go:noescape
func packATPanels6(dst *float32, src *float32, lda int, kc int, groups int, pstride int)

// packATFull packs the full micro-panels of packATPanels (rows 0..mc/6·6)
// and returns how many rows it packed.
func packATFull(dst, a []float32, lda, pc, kc, ic, mc, rs int) int {
	g := mc / gemmMR
	if g == 0 || kc == 0 {
		return 0
	}
	_ = dst[(g-1)*gemmMR*rs+gemmMR*kc-1]
	_ = a[(pc+kc-1)*lda+ic+g*gemmMR-1]
	packATPanels6(&dst[0], &a[pc*lda+ic], lda, kc, g, gemmMR*rs)
	return g * gemmMR
}

// gemmTransKernels says whether path p's micro-kernels read a transposed A in
// place (otherwise the driver packs op(A)).
func gemmTransKernels(p Path) bool { return p != PathGo }

// gemmTiles runs path p's micro-kernels down one column panel: rows
// 0..mc of the block, cols ≤ nr columns. Row r of op(A) starts at a[ao+r·rs]
// (with ta, op(A)[r][q] is a[ao+r·rs+q·lda], else a[ao+r·rs+q]); row r of C
// at c[co+r·ldc]. bp is the panel, its rows ldb floats apart: a packed
// panel's width, or B's own row stride where it is read in place (the
// assembly paths only). See tileGo for the arithmetic.
func gemmTiles(w *gemmWork, p Path, ta bool, mc, cols, kc int, a []float32, ao, lda, rs int, bp []float32, ldb int, c []float32, co, ldc int, alpha, beta float32) {
	t := b2i(ta)
	full, rest := mc/gemmMR, mc%gemmMR
	ro := full * gemmMR // first row of the partial tile
	switch {
	case p == PathAVX512:
		mask, nv := ^uint64(0), (cols+15)/16
		if cols < 64 {
			mask = 1<<cols - 1
		}
		if full > 0 {
			kern512[t][gemmMR-1][nv-1](kc, &a[ao], lda, &bp[0], &c[co], ldc, alpha, beta, mask, full, gemmMR*rs, ldb)
		}
		if rest > 0 {
			kern512[t][rest-1][nv-1](kc, &a[ao+ro*rs], lda, &bp[0], &c[co+ro*ldc], ldc, alpha, beta, mask, 1, 0, ldb)
		}
	case p == PathAVX2 && cols == 16:
		if full > 0 {
			kern256[t][gemmMR-1](kc, &a[ao], lda, &bp[0], &c[co], ldc, alpha, beta, 0, full, gemmMR*rs, ldb)
		}
		if rest > 0 {
			kern256[t][rest-1](kc, &a[ao+ro*rs], lda, &bp[0], &c[co+ro*ldc], ldc, alpha, beta, 0, 1, 0, ldb)
		}
	case p == PathAVX2:
		// Partial panel: compute all 16 columns into scratch, merge the valid ones.
		for ir := 0; ir < mc; ir += gemmMR {
			mr := min(gemmMR, mc-ir)
			kern256[t][mr-1](kc, &a[ao+ir*rs], lda, &bp[0], &w.tile[0], 16, 1, 0, 0, 1, 0, ldb)
			mergeTile(w.tile[:], 16, mr, cols, c, co+ir*ldc, ldc, alpha, beta)
		}
	default:
		for ir := 0; ir < mc; ir += gemmMR {
			tileGo(w, min(gemmMR, mc-ir), cols, kc, a, ao+ir*rs, lda, bp, c, co+ir*ldc, ldc, alpha, beta)
		}
	}
}

// dotNT computes columns 0..n&^3 of C = alpha·A·Bᵀ + beta·C for the m rows
// of A with the AVX-512 dot-tile kernels, both operands read in place, and
// returns how many columns it computed (0 off the AVX-512 path; the caller
// computes the rest). One kernel call takes one tile (4 rows) of B down all
// the rows of A, so each tile of B is read from memory once.
func dotNT(m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) int {
	tiles := n / dotNR
	if path != PathAVX512 || tiles == 0 || k == 0 {
		return 0
	}
	_ = a[(m-1)*lda+k-1]
	_ = b[(tiles*dotNR-1)*ldb+k-1]
	_ = c[(m-1)*ldc+tiles*dotNR-1]
	kv, tail := k/16, uint64(1)<<(k%16)-1
	full, rest := m/dotMR, m%dotMR
	for j := 0; j < tiles*dotNR; j += dotNR {
		if full > 0 {
			dot512[dotMR-1](kv, &a[0], lda, &b[j*ldb], ldb, &c[j], ldc, alpha, beta, tail, full)
		}
		if rest > 0 {
			dot512[rest-1](kv, &a[full*dotMR*lda], lda, &b[j*ldb], ldb, &c[full*dotMR*ldc+j], ldc, alpha, beta, tail, 1)
		}
	}
	return tiles * dotNR
}
