package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// spinFor is how long an idle worker, or For waiting for its workers, polls
// (yielding to other goroutines as it does) before parking. Waking a parked
// thread costs tens of microseconds on a virtual machine (the idle vCPU has
// halted), as much as a whole 1024×256×256 GEMM's imbalance, and a woken
// worker may wait behind the process's other goroutines before it runs:
// a server's decoding steps, a millisecond apart with HTTP work between
// them, find the workers still spinning only with a spin this long.
// Back-to-back calls, as in a training step, always do. OpenBLAS spins too.
const spinFor = 2 * time.Millisecond

// task is one chunk of a For call handed to a pool worker.
type task struct {
	fn        func(worker, lo, hi int)
	w, lo, hi int
	call      *call
}

// call is one For call's join state.
type call struct {
	pending atomic.Int32
	parked  atomic.Bool   // the caller is blocked on done
	done    chan struct{} // cap 1
}

// finish marks one chunk done and wakes a parked caller after the last.
func (c *call) finish() {
	if c.pending.Add(-1) == 0 && c.parked.Load() {
		select {
		case c.done <- struct{}{}:
		default:
		}
	}
}

// wait returns when every chunk of c has finished: it spins for spinFor,
// then parks.
func (c *call) wait() {
	start := time.Now()
	for i := 0; c.pending.Load() != 0; i++ {
		if i&63 != 63 {
			continue
		}
		runtime.Gosched()
		if time.Since(start) < spinFor {
			continue
		}
		// Park. A token may be stale (sent by the last worker of the
		// previous call after that call had already seen pending reach 0),
		// so look at pending again after every wake-up.
		for c.pending.Load() != 0 {
			c.parked.Store(true)
			if c.pending.Load() != 0 {
				<-c.done
			}
			c.parked.Store(false)
		}
		return
	}
}

// worker is a long-lived pool goroutine.
type worker struct {
	job    atomic.Pointer[task]
	parked atomic.Bool
	wake   chan struct{} // cap 1
}

// post hands t to the worker, waking it if it has parked. The worker sets
// parked before its last look at job, and post sets job before looking at
// parked, so one of the two always sees the other.
func (wk *worker) post(t *task) {
	wk.job.Store(t)
	if wk.parked.Load() {
		select {
		case wk.wake <- struct{}{}:
		default:
		}
	}
}

func (wk *worker) loop() {
	for {
		t := wk.job.Load()
		start := time.Now()
		for i := 0; t == nil; i++ {
			if i&63 == 63 {
				runtime.Gosched()
				if time.Since(start) > spinFor {
					wk.parked.Store(true)
					if t = wk.job.Load(); t == nil {
						<-wk.wake // may be a stale token: look again
					}
					wk.parked.Store(false)
					start = time.Now()
				}
			}
			t = wk.job.Load()
		}
		t.fn(t.w, t.lo, t.hi)
		wk.job.Store(nil)
		t.call.finish()
	}
}

// pool is the process's set of workers. One For at a time owns it; a For
// that finds it busy (nested, or from another goroutine) runs serially.
var pool struct {
	mu      sync.Mutex
	workers []*worker
	tasks   []task
	call    call
}

// runPool runs the chunks of a For on the pool, or returns false if the
// pool is busy.
func runPool(n, grain, nt, units int, fn func(worker, lo, hi int)) bool {
	if !pool.mu.TryLock() {
		return false
	}
	defer pool.mu.Unlock()
	for len(pool.workers) < nt-1 {
		wk := &worker{wake: make(chan struct{}, 1)}
		pool.workers = append(pool.workers, wk)
		go wk.loop()
	}
	if pool.call.done == nil {
		pool.call.done = make(chan struct{}, 1)
	}
	select { // a stale wake-up from an earlier call
	case <-pool.call.done:
	default:
	}
	if cap(pool.tasks) < nt {
		pool.tasks = make([]task, nt)
	}
	pool.tasks = pool.tasks[:nt]
	pool.call.pending.Store(int32(nt - 1))
	for w := 1; w < nt; w++ {
		lo, hi := split(units, nt, w, grain, n)
		pool.tasks[w] = task{fn: fn, w: w, lo: lo, hi: hi, call: &pool.call}
		pool.workers[w-1].post(&pool.tasks[w])
	}
	lo, hi := split(units, nt, 0, grain, n)
	fn(0, lo, hi)
	pool.call.wait()
	for w := 1; w < nt; w++ {
		pool.tasks[w].fn = nil // do not keep fn's closure alive
	}
	return true
}
