// Package kernels holds tokenmix's compute kernels: GEMM, softmax, exp,
// LayerNorm, GELU, residual add and the AdamW update, on row-major slices.
//
// Every kernel is a plain function, generic over float32 and float64. The
// float64 instantiation and the Ref* functions are plain Go: they are the test
// oracles and the fallback on every platform. The float32 instantiation
// dispatches at run time to the fastest implementation the CPU supports
// (AVX-512, then AVX2+FMA, then plain Go).
//
// Argument order follows BLAS for GEMM and llm.c elsewhere: outputs, then
// caches, then inputs, then weights, then sizes. Backward kernels accumulate
// (+=) into input and weight gradients.
//
// Shape letters: N rows, C channels, M/N/K GEMM dimensions.
package kernels
