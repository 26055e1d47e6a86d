package bench

import (
	"time"

	"github.com/tokenmix/tokenmix/internal/bench/stat"
)

// median returns the median time in seconds of one call of f over reps
// samples, after a warm-up of at least one sample's length. A sample
// repeats f for at least SampleTime (calibrated during the warm-up).
func median(f func(), reps int) float64 {
	f()
	calls := 1
	for t0 := time.Now(); time.Since(t0) < SampleTime; calls++ {
		f()
	}
	ts := make([]float64, reps)
	for r := range ts {
		t0 := time.Now()
		for i := 0; i < calls; i++ {
			f()
		}
		ts[r] = time.Since(t0).Seconds() / float64(calls)
	}
	return stat.Median(ts)
}

// medianCPU is median timed by the calling thread's CPU time (the caller
// locks its OS thread). ok is false without a per-thread CPU clock.
func medianCPU(f func(), reps int) (sec float64, ok bool) {
	if _, ok := threadCPU(); !ok {
		return 0, false
	}
	f()
	calls := 1
	for t0, _ := threadCPU(); ; calls++ {
		f()
		if t, _ := threadCPU(); t-t0 >= SampleTime.Seconds() {
			break
		}
	}
	ts := make([]float64, reps)
	for r := range ts {
		t0, _ := threadCPU()
		for i := 0; i < calls; i++ {
			f()
		}
		t1, _ := threadCPU()
		ts[r] = (t1 - t0) / float64(calls)
	}
	return stat.Median(ts), true
}
