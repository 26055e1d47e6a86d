package parallel

import (
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
)

var threads atomic.Int64

func init() {
	n := runtime.GOMAXPROCS(0)
	if s := os.Getenv("TOKENMIX_THREADS"); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v > 0 {
			n = v
		}
	}
	threads.Store(int64(n))
}

// Threads returns the number of goroutines For uses.
func Threads() int { return int(threads.Load()) }

// SetThreads sets the number of goroutines For uses and returns the previous
// value. SetThreads panics if n < 1.
func SetThreads(n int) int {
	if n < 1 {
		panic("parallel: SetThreads with n < 1")
	}
	return int(threads.Swap(int64(n)))
}

// For splits [0,n) into at most Threads() contiguous chunks and calls
// fn(worker, lo, hi) once per chunk, concurrently, returning when all have
// finished (one fork, one join). worker is in [0, Threads()) and is unique
// among this call's chunks, so a caller may index its own per-worker
// scratch with it (not scratch shared with other For calls: two nested
// calls each have a worker 0).
// Chunks are multiples of grain (the last may be shorter); grain < 1 means 1.
// With one chunk fn runs on the calling goroutine. Chunks run on a pool of
// long-lived workers that spin briefly between calls (see spinFor). A For
// nested inside another, or running concurrently with one, finds the
// threads taken and runs fn(0, 0, n) on the calling goroutine: the outer
// call already keeps them busy, and more goroutines than threads would only
// contend. So a caller may split independent work coarsely with For (as
// decoding does with its sequences) and leave the kernels inside serial.
func For(n, grain int, fn func(worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	units := (n + grain - 1) / grain
	nt := Threads()
	if nt > units {
		nt = units
	}
	if nt <= 1 || !runPool(n, grain, nt, units, fn) {
		fn(0, 0, n)
	}
}

// split returns worker w's element range when units grain-sized units are
// shared evenly among nt workers.
func split(units, nt, w, grain, n int) (lo, hi int) {
	ulo := units * w / nt
	uhi := units * (w + 1) / nt
	lo, hi = ulo*grain, uhi*grain
	if hi > n {
		hi = n
	}
	return lo, hi
}
