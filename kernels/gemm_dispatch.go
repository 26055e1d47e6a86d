package kernels

// gemm32 is the float32 GEMM entry point after argument checks. It is
// replaced by the assembly dispatcher on CPUs that support it.
var gemm32 = RefGemm[float32]
