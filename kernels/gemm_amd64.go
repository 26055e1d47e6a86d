package kernels

//go:generate go run ./internal/asmgen

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
