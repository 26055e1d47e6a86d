package parallel

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

// TestForPoolStress runs For back to back, with pauses long enough for the
// workers to park, nested inside itself and from several goroutines at
// once, checking every index is covered exactly once each time.
func TestForPoolStress(t *testing.T) {
	old := SetThreads(3)
	defer SetThreads(old)
	run := func(n int) {
		hits := make([]int32, n)
		For(n, 1, func(_, lo, hi int) {
			for i := lo; i < hi; i++ {
				atomic.AddInt32(&hits[i], 1)
			}
		})
		for i, h := range hits {
			if h != 1 {
				t.Errorf("n=%d: index %d visited %d times", n, i, h)
				return
			}
		}
	}
	for i := 0; i < 2000; i++ {
		run(1 + i%17)
		if i%500 == 0 {
			time.Sleep(2 * spinFor) // let the workers park
		}
	}
	// Nested: the inner For finds the pool busy and runs serially.
	For(4, 1, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			run(10)
		}
	})
	// Concurrent callers.
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				run(5 + i%7)
			}
		}()
	}
	wg.Wait()
}

// TestForNested: a For inside a pool chunk runs its whole range in one call
// on the chunk's goroutine, as worker 0.
func TestForNested(t *testing.T) {
	old := SetThreads(2)
	defer SetThreads(old)
	var calls [2][]([3]int)
	For(2, 1, func(w, _, _ int) {
		For(10, 1, func(iw, lo, hi int) { calls[w] = append(calls[w], [3]int{iw, lo, hi}) })
	})
	for w, c := range calls {
		if len(c) != 1 || c[0] != [3]int{0, 0, 10} {
			t.Errorf("outer chunk %d: inner calls %v, want one call [0 0 10]", w, c)
		}
	}
}

func BenchmarkForkJoin(b *testing.B) {
	old := SetThreads(2)
	defer SetThreads(old)
	x := make([]float64, 2*8)
	for i := 0; i < b.N; i++ {
		For(2, 1, func(w, lo, hi int) { x[w*8]++ })
	}
}
