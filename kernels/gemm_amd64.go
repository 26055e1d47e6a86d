package kernels

//go:generate go run ./internal/asmgen

// packBTGather512 packs 16·groups columns of op(B) = Bᵀ: for g < groups and
// q < kc, dst[q·pw+16g+i] = src[(16g+i)·ldb+q] for i < 16 (AVX-512 gathers).
//
//go:noescape
func packBTGather512(dst *float32, pw int, src *float32, ldb int, kc int, groups int)

// packBT packs columns j0..j0+cols of op(B) = Bᵀ (kc of them from q0) into
// dst with row length pw, and returns how many columns it packed: whole
// groups of 16 on the AVX-512 path (the caller packs the rest), else 0.
func packBT(p Path, dst []float32, pw int, b []float32, ldb, q0, kc, j0, cols int) int {
	g := cols / 16
	if p != PathAVX512 || g == 0 || kc == 0 || 16*ldb > 1<<31/4 {
		return 0
	}
	_ = dst[(kc-1)*pw+16*g-1]
	_ = b[(j0+16*g-1)*ldb+q0+kc-1]
	packBTGather512(&dst[0], pw, &b[j0*ldb+q0], ldb, kc, g)
	return 16 * g
}

// gemmTransKernels says whether path p's micro-kernels read a transposed A in
// place (otherwise the driver packs op(A)).
func gemmTransKernels(p Path) bool { return p != PathGo }

// gemmTile runs path p's micro-kernel on one mr×cols tile (see tileGo for the
// contract; with ta, op(A)[r][q] is a[ao+q·lda+r]). bp is the packed panel.
func gemmTile(w *gemmWork, p Path, ta bool, mr, cols, kc int, a []float32, ao, lda int, bp []float32, c []float32, co, ldc int, alpha, beta float32) {
	t := b2i(ta)
	switch p {
	case PathAVX512:
		mask := ^uint64(0)
		if cols < 64 {
			mask = 1<<cols - 1
		}
		kern512[t][mr-1][(cols+15)/16-1](kc, &a[ao], lda, &bp[0], &c[co], ldc, alpha, beta, mask)
	case PathAVX2:
		if cols == 16 {
			kern256[t][mr-1](kc, &a[ao], lda, &bp[0], &c[co], ldc, alpha, beta, 0)
			return
		}
		// Partial tile: compute all 16 columns into scratch, merge the valid ones.
		kern256[t][mr-1](kc, &a[ao], lda, &bp[0], &w.tile[0], 16, 1, 0, 0)
		mergeTile(w.tile[:], 16, mr, cols, c, co, ldc, alpha, beta)
	default:
		tileGo(w, mr, cols, kc, a, ao, lda, bp, c, co, ldc, alpha, beta)
	}
}
