//go:build !purego

package kernels

import "golang.org/x/sys/cpu"

// bf16AsmPaths lists the assembly bf16 GEMM paths of this CPU, slowest
// first: "avx512bf16" where it has AVX512-BF16 (VDPBF16PS), and "amx"
// where it also has AMX-BF16 (TDPBF16PS) and Linux grants the process its
// tile data.
var bf16AsmPaths = func() []bf16GemmPath {
	if !cpu.X86.HasAVX512BF16 || Best != PathAVX512 {
		return nil
	}
	paths := []bf16GemmPath{{name: "avx512bf16", block: bf16BlockK512, rows: gemmMR}}
	if cpu.X86.HasAMXTile && cpu.X86.HasAMXBF16 && requestAMX() {
		paths = append(paths, bf16GemmPath{name: "amx", block: bf16BlockAMX, rows: amxRows})
	}
	return paths
}()

// BF16PeakLoop returns the AVX512-BF16 peak loop (iterations of
// independent VDPBF16PS on registers) and its flops per iteration, for
// `tokenmix bench peak`; ok is false without AVX512-BF16.
func BF16PeakLoop() (loop func(iters int), flopsPerIter float64, ok bool) {
	if len(bf16AsmPaths) == 0 {
		return nil, 0, false
	}
	return bf16PeakLoop, bf16PeakFlops, true
}

// bf16BlockK512 is the AVX512-BF16 path's block: rows r0…r1 of C for
// panels p0…p1 of B.
func bf16BlockK512(a *BF16A, b *BF16B, r0, r1, p0, p1 int, alpha, beta float32, c []float32, ldc int) {
	pairs, n, ps := b.pairs, b.N, b.panelStride()
	for pn := p0; pn < p1; pn++ {
		bp := b.Data[pn*ps : pn*ps+pairs*2*bf16Panel]
		j0 := pn * bf16Panel
		bf16K512Rows(a, bp, 0, pairs, r0, r1, panelMask(n-j0), alpha, beta, c[j0:], ldc)
	}
}

// panelMask is the column mask of a panel with cols columns left in B.
func panelMask(cols int) uint64 {
	if cols < bf16Panel {
		return 1<<cols - 1
	}
	return ^uint64(0)
}

// bf16K512Rows runs the AVX512-BF16 micro-kernels on rows r0…r1 of C
// against pairs q0…q1 of one packed panel bp.
func bf16K512Rows(a *BF16A, bp []BF16, q0, q1, r0, r1 int, mask uint64, alpha, beta float32, c []float32, ldc int) {
	rows := r1 - r0
	full, rest := rows/gemmMR, rows%gemmMR
	lda := a.Stride / 2 // in pairs
	if full > 0 {
		bf16K512[gemmMR-1](q1-q0, &a.Data[r0*a.Stride+2*q0], lda, &bp[q0*2*bf16Panel], &c[r0*ldc], ldc, alpha, beta, mask, full, gemmMR*lda)
	}
	if rest > 0 {
		r := r0 + full*gemmMR
		bf16K512[rest-1](q1-q0, &a.Data[r*a.Stride+2*q0], lda, &bp[q0*2*bf16Panel], &c[r*ldc], ldc, alpha, beta, mask, 1, 0)
	}
}
