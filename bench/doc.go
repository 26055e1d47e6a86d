// Package bench measures tokenmix's kernels against the machine's own limit:
// the FMA peak of the CPU (Peak, from a short assembly loop of independent
// fused multiply-adds) and the GFLOP/s of the float32 GEMM (Gemm) on fixed
// shapes. The CLI's `tokenmix bench gemm` and `tokenmix bench peak` print
// them.
//
// Every figure is the median over repeated timed samples after a warm-up;
// a sample repeats the operation for at least SampleTime so that short
// products are not dominated by timer resolution. A GEMM of m×n×k counts
// 2·m·n·k floating-point operations; an FMA on a vector of L float32 lanes
// counts 2·L.
package bench
