package bench

import "golang.org/x/sys/cpu"

// fma512 runs iters iterations of 16 independent VFMADD231PS on ZMM
// registers (512 flops per iteration).
func fma512(iters int)

// fma256 runs iters iterations of 12 independent VFMADD231PS on YMM
// registers (192 flops per iteration).
func fma256(iters int)

// peakLoop picks the widest FMA loop this CPU runs.
func peakLoop() (isa string, flopsPerIter float64, loop func(int)) {
	switch {
	case cpu.X86.HasAVX512F:
		return "avx512", 16 * 16 * 2, fma512
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		return "avx2", 12 * 8 * 2, fma256
	}
	return "", 0, nil
}
