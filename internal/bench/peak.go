package bench

import (
	"runtime"
	"sync"
	"time"

	"github.com/tokenmix/tokenmix/internal/bench/stat"
	"github.com/tokenmix/tokenmix/internal/kernels"
)

// peakIters is the number of loop iterations of one peak sample per thread.
const peakIters = 1 << 22

// Peak measures the FMA peak of this CPU on threads threads: each thread,
// locked to an OS thread, runs a loop of independent vector FMAs (no loads,
// no dependencies between consecutive FMAs). It returns the median GFLOP/s
// of reps samples and the instruction set used ("avx512" or "avx2"); ok is
// false when this CPU or platform has no assembly loop.
func Peak(threads, reps int) (gflops float64, isa string, ok bool) {
	isa, flopsPerIter, loop := kernels.FMAPeakLoop()
	if loop == nil {
		return 0, "", false
	}
	if threads < 1 || reps < 1 {
		return 0, isa, false
	}
	return loopRate(loop, flopsPerIter, threads, reps), isa, true
}

// loopRate runs loop(peakIters) on threads locked OS threads at once, reps
// times after a warm-up, and returns the median GFLOP/s.
func loopRate(loop func(int), flopsPerIter float64, threads, reps int) float64 {
	sample := func() {
		var wg sync.WaitGroup
		for range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				loop(peakIters)
			}()
		}
		wg.Wait()
	}
	sample()
	ts := make([]float64, reps)
	for r := range ts {
		t0 := time.Now()
		sample()
		ts[r] = time.Since(t0).Seconds()
	}
	return float64(threads) * peakIters * flopsPerIter / stat.Median(ts) / 1e9
}

// PeakCPU is Peak on one thread timed by that thread's CPU time (see
// GemmCPU). ok is false without an assembly loop or a per-thread CPU clock.
func PeakCPU(reps int) (gflops float64, isa string, ok bool) {
	isa, flopsPerIter, loop := kernels.FMAPeakLoop()
	if loop == nil || reps < 1 {
		return 0, isa, false
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sec, ok := medianCPU(func() { loop(peakIters) }, reps)
	if !ok {
		return 0, isa, false
	}
	return peakIters * flopsPerIter / sec / 1e9, isa, true
}

// PeakBF16 is Peak for the AVX512-BF16 dot-product instruction
// (VDPBF16PS, 64 flops: 32 bf16 products summed into 16 float32 lanes);
// ok is false where the CPU lacks it.
func PeakBF16(threads, reps int) (gflops float64, ok bool) {
	loop, flopsPerIter, ok := kernels.BF16PeakLoop()
	if !ok || threads < 1 || reps < 1 {
		return 0, false
	}
	return loopRate(loop, flopsPerIter, threads, reps), true
}
