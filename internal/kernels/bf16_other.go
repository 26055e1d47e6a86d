//go:build !amd64 || purego

package kernels

// bf16AsmPaths is empty: without the assembly kernels the bf16 GEMM runs
// on the pure-Go twin.
var bf16AsmPaths []bf16GemmPath

// BF16PeakLoop reports ok = false: there is no AVX512-BF16 peak loop
// without the assembly kernels.
func BF16PeakLoop() (loop func(iters int), flopsPerIter float64, ok bool) {
	return nil, 0, false
}

// bf16Order has nothing to order: the table holds the pure-Go twin alone.
func bf16Order([]bf16GemmPath) {}
