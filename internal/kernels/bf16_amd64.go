package kernels

import "golang.org/x/sys/cpu"

// bf16Best is the fastest bf16 GEMM path of this CPU: "avx512bf16" where
// it has AVX512-BF16 (VDPBF16PS), else "go".
var bf16Best = func() string {
	if cpu.X86.HasAVX512BF16 && Best == PathAVX512 {
		return "avx512bf16"
	}
	return "go"
}()

// hasBF16Conv reports whether the vector conversions run: they need only
// AVX-512 (F and BW).
func hasBF16Conv() bool { return true }
