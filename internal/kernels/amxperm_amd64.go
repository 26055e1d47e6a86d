//go:build !purego && !linux

package kernels

// requestAMX reports false: only on Linux does the package ask for the AMX
// tile data state, so elsewhere the bf16 GEMM stops at AVX512-BF16.
func requestAMX() bool { return false }
