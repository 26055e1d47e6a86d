package parallel

import (
	"sync/atomic"
	"testing"
)

func TestForCoversRangeOnce(t *testing.T) {
	for _, tc := range []struct{ n, grain, threads int }{
		{1, 1, 1}, {7, 1, 2}, {7, 3, 3}, {100, 8, 2}, {5, 10, 4}, {1000, 1, 3},
	} {
		old := SetThreads(tc.threads)
		hits := make([]int32, tc.n)
		seen := make([]int32, tc.threads)
		For(tc.n, tc.grain, func(w, lo, hi int) {
			if w < 0 || w >= tc.threads {
				t.Errorf("worker %d out of range", w)
				return
			}
			if atomic.AddInt32(&seen[w], 1) != 1 {
				t.Errorf("worker %d used twice", w)
			}
			if lo%tc.grain != 0 {
				t.Errorf("chunk start %d not a multiple of grain %d", lo, tc.grain)
			}
			for i := lo; i < hi; i++ {
				atomic.AddInt32(&hits[i], 1)
			}
		})
		SetThreads(old)
		for i, h := range hits {
			if h != 1 {
				t.Fatalf("%+v: index %d visited %d times", tc, i, h)
			}
		}
	}
}
