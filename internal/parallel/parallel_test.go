package parallel

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestForCoversRangeOnce(t *testing.T) {
	for _, tc := range []struct{ n, grain, threads int }{
		{1, 1, 1}, {7, 1, 2}, {7, 3, 3}, {100, 8, 2}, {5, 10, 4}, {1000, 1, 3},
	} {
		hits := make([]int32, tc.n)
		seen := make([]int32, tc.threads)
		For(tc.threads, tc.n, tc.grain, func(w, lo, hi int) {
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
	run := func(n int) {
		hits := make([]int32, n)
		For(3, n, 1, func(_, lo, hi int) {
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
	// Nested: the inner For finds the workers busy and runs its chunks itself.
	For(3, 4, 1, func(_, lo, hi int) {
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

// TestForSplitFixed: the chunks a For hands its fn, and their worker
// indices, are the same whether the call runs alone, nested in another
// call's chunk (the workers busy) or beside other calls.
func TestForSplitFixed(t *testing.T) {
	record := func(threads, n, grain int) map[[3]int]bool {
		var mu sync.Mutex
		got := map[[3]int]bool{}
		For(threads, n, grain, func(w, lo, hi int) {
			mu.Lock()
			got[[3]int{w, lo, hi}] = true
			mu.Unlock()
		})
		return got
	}
	want := record(3, 100, 8)
	if len(want) != 3 {
		t.Fatalf("alone: %d chunks, want 3", len(want))
	}
	var mu sync.Mutex
	var nested []map[[3]int]bool
	For(3, 3, 1, func(_, _, _ int) {
		g := record(3, 100, 8)
		mu.Lock()
		nested = append(nested, g)
		mu.Unlock()
	})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				got := record(3, 100, 8)
				mu.Lock()
				nested = append(nested, got)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, g := range nested {
		if len(g) != len(want) {
			t.Fatalf("chunks %v, want %v", g, want)
		}
		for k := range want {
			if !g[k] {
				t.Fatalf("chunks %v, want %v", g, want)
			}
		}
	}
}

func BenchmarkForkJoin(b *testing.B) {
	x := make([]float64, 2*8)
	for i := 0; i < b.N; i++ {
		For(2, 2, 1, func(w, lo, hi int) { x[w*8]++ })
	}
}

// TestForPanics: a panic in a chunk, on a pool worker or on the calling
// goroutine, comes out of For on the caller with its value, after the other
// chunks have run; the pool then serves the next calls.
func TestForPanics(t *testing.T) {
	for _, bad := range []int{0, 1, 3} { // worker 0 runs first on the caller
		var ran atomic.Int64
		got := func() (p any) {
			defer func() { p = recover() }()
			For(4, 400, 1, func(w, lo, hi int) {
				if w == bad {
					panic(fmt.Sprintf("chunk %d broke", w))
				}
				time.Sleep(time.Millisecond)
				ran.Add(int64(hi - lo))
			})
			return nil
		}()
		if want := fmt.Sprintf("chunk %d broke", bad); got != want {
			t.Errorf("chunk %d panics: For panicked with %v, want %q", bad, got, want)
		}
		if ran.Load() != 300 {
			t.Errorf("chunk %d panics: the other chunks covered %d elements, want 300", bad, ran.Load())
		}
	}
	var sum atomic.Int64
	For(4, 1000, 1, func(_, lo, hi int) { sum.Add(int64(hi - lo)) })
	if sum.Load() != 1000 {
		t.Errorf("after the panics: %d of 1000 elements covered", sum.Load())
	}
}
