package kernels

// gemm32 and gemm32ST are the float32 GEMM entry points after argument
// checks (multi-threaded and calling-goroutine-only). They are replaced by the
// assembly dispatcher on CPUs that support it.
var (
	gemm32   = RefGemm[float32]
	gemm32ST = RefGemm[float32]
)
