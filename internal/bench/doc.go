// Package bench measures tokenmix's speed for the CLI's `tokenmix bench`:
// the FMA peak of the CPU (Peak, from a short assembly loop of independent
// fused multiply-adds), the GFLOP/s of the float32 GEMM (Gemm) on fixed
// shapes, and the time and memory of mixers and training steps (Mixer,
// Train, PeakRSS).
//
// Every figure is the median over repeated timed samples after a warm-up;
// a sample repeats the operation for at least SampleTime so that short
// products are not dominated by timer resolution. A GEMM of m×n×k counts
// 2·m·n·k floating-point operations; an FMA on a vector of L float32 lanes
// counts 2·L.
package bench
