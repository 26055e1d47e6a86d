//go:build !amd64

package kernels

// gemmTransKernels reports false: the pure-Go micro-kernel reads rows of a
// packed op(A).
func gemmTransKernels(p Path) bool { return false }

// gemmTile runs the pure-Go micro-kernel: other platforms have no assembly
// path (see tileGo for the contract; ta is always false).
func gemmTile(w *gemmWork, p Path, ta bool, mr, cols, kc int, a []float32, ao, lda int, bp []float32, c []float32, co, ldc int, alpha, beta float32) {
	tileGo(w, mr, cols, kc, a, ao, lda, bp, c, co, ldc, alpha, beta)
}

// packBT packs nothing: the caller packs op(B) = Bᵀ in Go.
func packBT(p Path, dst []float32, pw int, b []float32, ldb, q0, kc, j0, cols int) int {
	return 0
}
