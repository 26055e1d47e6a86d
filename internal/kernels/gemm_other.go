//go:build !amd64 || purego

package kernels

// gemmTransKernels reports false: the pure-Go micro-kernel reads rows of a
// packed op(A).
func gemmTransKernels(p Path) bool { return false }

// gemmTiles runs the pure-Go micro-kernel down one column panel (other
// platforms have no assembly path; ta is always false). See the amd64
// version for the arguments.
func gemmTiles(w *gemmWork, p Path, ta bool, mc, cols, kc int, a []float32, ao, lda, rs int, bp []float32, ldb int, c []float32, co, ldc int, alpha, beta float32) {
	for ir := 0; ir < mc; ir += gemmMR {
		tileGo(w, min(gemmMR, mc-ir), cols, kc, a, ao+ir*rs, lda, bp, c, co+ir*ldc, ldc, alpha, beta)
	}
}

// packBT packs nothing: the caller packs op(B) = Bᵀ in Go.
func packBT(p Path, dst []float32, pw int, b []float32, ldb, q0, kc, j0, cols int) int {
	return 0
}

// packATFull packs nothing: the Go path does not use micro-panels of A.
func packATFull(dst, a []float32, lda, pc, kc, ic, mc, rs int) int { return 0 }

// dotNT computes nothing: the caller's dot-product loop does all columns.
func dotNT(m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) int {
	return 0
}

// FMAPeakLoop returns no loop: there is no assembly here.
func FMAPeakLoop() (isa string, flopsPerIter float64, loop func(iters int)) {
	return "", 0, nil
}
