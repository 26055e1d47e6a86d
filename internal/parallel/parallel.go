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

// Threads returns the default thread budget: the one a caller that has
// none of its own passes to For (GOMAXPROCS, TOKENMIX_THREADS, or the
// CLI's --threads through SetThreads).
func Threads() int { return int(threads.Load()) }

// SetThreads sets the default thread budget and returns the previous one.
// It changes only what Threads returns: calls already given a budget keep
// theirs. SetThreads panics if n < 1.
func SetThreads(n int) int {
	if n < 1 {
		panic("parallel: SetThreads with n < 1")
	}
	return int(threads.Swap(int64(n)))
}

// For splits [0,n) into at most threads contiguous chunks and calls
// fn(worker, lo, hi) once per chunk, returning when all have finished (one
// fork, one join). Chunks are multiples of grain (the last may be shorter;
// grain < 1 means 1), and the split, with the worker index of each chunk,
// depends on threads, n and grain only: worker is the chunk's index, in
// [0, threads), unique among this call's chunks, so a caller may index its
// own per-worker scratch with it (not scratch shared with other For calls:
// two calls each have a worker 0).
//
// The chunks run on the calling goroutine and on up to threads−1 idle
// workers of a process-wide pool, each taking the next chunk nobody has
// started. Several For calls may run at once (from different goroutines,
// or one nested in another's chunk): each uses the workers that are idle
// when it starts and runs what they do not take itself, so a call never
// waits for another, and its result does not depend on how many ran with
// it. Workers spin briefly between calls (see spinFor). With one chunk fn
// runs on the calling goroutine.
//
// A panic in fn, on whichever goroutine its chunk ran, is raised again by
// For on the calling goroutine, with the same value, once every chunk has
// finished or stopped (the chunks a panicking goroutine had not started
// are run by the others), so that a recover in the caller catches it and
// the pool's workers live on.
func For(threads, n, grain int, fn func(worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	units := (n + grain - 1) / grain
	nt := min(threads, units)
	if nt <= 1 {
		fn(0, 0, n)
		return
	}
	runPool(n, grain, nt, units, fn)
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
