package bench

import (
	"runtime"
	"sort"
	"sync"
	"time"
)

// peakIters is the number of loop iterations of one peak sample per thread.
const peakIters = 1 << 22

// Peak measures the FMA peak of this CPU on threads threads: each thread,
// locked to an OS thread, runs a loop of independent vector FMAs (no loads,
// no dependencies between consecutive FMAs). It returns the median GFLOP/s
// of reps samples and the instruction set used ("avx512" or "avx2"); ok is
// false when this CPU or platform has no assembly loop.
func Peak(threads, reps int) (gflops float64, isa string, ok bool) {
	isa, flopsPerIter, loop := peakLoop()
	if loop == nil {
		return 0, "", false
	}
	if threads < 1 || reps < 1 {
		return 0, isa, false
	}
	sample := func() {
		var wg sync.WaitGroup
		for t := 0; t < threads; t++ {
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
	sec := medianOf(ts)
	return float64(threads) * peakIters * flopsPerIter / sec / 1e9, isa, true
}

func medianOf(ts []float64) float64 {
	s := append([]float64(nil), ts...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// PeakCPU is Peak on one thread timed by that thread's CPU time (see
// GemmCPU). ok is false without an assembly loop or a per-thread CPU clock.
func PeakCPU(reps int) (gflops float64, isa string, ok bool) {
	isa, flopsPerIter, loop := peakLoop()
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
