//go:build !amd64

package kernels

// gemmTile runs the pure-Go micro-kernel: other platforms have no assembly
// path (see tileGo for the contract).
func gemmTile(w *gemmWork, p Path, mr, cols, kc int, a []float32, ao, lda int, bp []float32, c []float32, co, ldc int, alpha, beta float32) {
	tileGo(w, mr, cols, kc, a, ao, lda, bp, c, co, ldc, alpha, beta)
}
