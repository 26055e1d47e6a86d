//go:build !amd64 || purego

package kernels

// Without the assembly kernels the conversions and packers have no vector
// prefix: each returns 0 and the caller's Go loop does all the work.

func toBF16Vec(dst []BF16, src []float32) int     { return 0 }
func fromBF16Vec(dst []float32, src []BF16) int   { return 0 }
func keepBF16Vec(dst []BF16, x []float32) int     { return 0 }
func roundHalfVec(x []float32) int                { return 0 }
func toHalfVec(dst []uint16, src []float32) int   { return 0 }
func fromHalfVec(dst []float32, src []uint16) int { return 0 }

func toBF16RowsVec(dst []BF16, st int, a []float32, lda, lo, hi, k int) int { return 0 }
func pairPanelVec(dst []BF16, src []float32, ldb, pairs, cols int) int      { return 0 }
func pairRowsVec(dst []BF16, r0, r1 []BF16, cols int) int                   { return 0 }

func expSubMulPackVec(dsa *BF16A, dsb, pb *BF16B, s, dp []float32, rows, cols int, lse []float32, ls int, d []float32, ds int) bool {
	return false
}

func onlineSoftmaxBF16Vec(x []float32, rows, cols int, m, l []float32, ms int, alpha []float32, pa *BF16A) bool {
	return false
}

func geluBackPackVec(dg []float32, dst *BF16B, k0 int, h []BF16, n, k int) bool { return false }

func pairT16Tiles(out []BF16, st int, a []float32, lda, i0, n, k int) (nt, kt int) {
	return 0, 0
}

func pairTB16Tiles(panel []BF16, b []float32, ldb, j0, cols, k int) (ct, kt int) {
	return 0, 0
}
