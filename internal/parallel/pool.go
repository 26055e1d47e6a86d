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

// call is one For call: its chunks, the next one nobody has started, and
// its join state.
type call struct {
	fn                  func(worker, lo, hi int)
	n, grain, nt, units int
	next                atomic.Int32  // the next chunk to start
	pending             atomic.Int32  // helpers still at work
	parked              atomic.Bool   // the caller is blocked on done
	done                chan struct{} // cap 1
	failed              atomic.Pointer[chunkPanic]
}

// chunkPanic is the first panic of a call's chunks, which For raises again
// on the calling goroutine once every chunk has stopped.
type chunkPanic struct{ val any }

// run starts chunks of c until none is left. A panicking chunk ends this
// goroutine's part of the call (the others take the chunks left) and is
// kept in c.failed, the first one only.
func (c *call) run() {
	defer func() {
		if p := recover(); p != nil {
			c.failed.CompareAndSwap(nil, &chunkPanic{p})
		}
	}()
	for {
		w := int(c.next.Add(1)) - 1
		if w >= c.nt {
			return
		}
		lo, hi := split(c.units, c.nt, w, c.grain, c.n)
		c.fn(w, lo, hi)
	}
}

// finish marks one helper done and wakes a parked caller after the last.
func (c *call) finish() {
	if c.pending.Add(-1) == 0 && c.parked.Load() {
		select {
		case c.done <- struct{}{}:
		default:
		}
	}
}

// wait returns when every helper of c has finished: it spins for spinFor,
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
		// Park. A token may be stale (sent by the last helper of an
		// earlier call with this state, after that call had already seen
		// pending reach 0), so look at pending again after every wake-up.
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

// calls recycles call states, so steady-state For calls do not allocate.
var calls = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// worker is a long-lived pool goroutine.
type worker struct {
	job    atomic.Pointer[call]
	parked atomic.Bool
	wake   chan struct{} // cap 1
}

// post hands c to the worker, waking it if it has parked. The worker sets
// parked before its last look at job, and post sets job before looking at
// parked, so one of the two always sees the other.
func (wk *worker) post(c *call) {
	wk.job.Store(c)
	if wk.parked.Load() {
		select {
		case wk.wake <- struct{}{}:
		default:
		}
	}
}

func (wk *worker) loop() {
	for {
		c := wk.job.Load()
		start := time.Now()
		for i := 0; c == nil; i++ {
			if i&63 == 63 {
				runtime.Gosched()
				if time.Since(start) > spinFor {
					wk.parked.Store(true)
					if c = wk.job.Load(); c == nil {
						<-wk.wake // may be a stale token: look again
					}
					wk.parked.Store(false)
					start = time.Now()
				}
			}
			c = wk.job.Load()
		}
		c.run()
		// Idle again before the caller can see the call end, so that its
		// next call finds this worker free.
		wk.job.Store(nil)
		pool.mu.Lock()
		pool.idle = append(pool.idle, wk)
		pool.mu.Unlock()
		c.finish()
	}
}

// pool is the process's set of workers. It grows to the largest thread
// budget any call has asked for less one, and to GOMAXPROCS−1 when calls
// run at once; a call takes the workers that are idle.
var pool struct {
	mu    sync.Mutex
	idle  []*worker
	total int
}

// runPool runs the nt chunks of a For on the calling goroutine and on the
// idle workers (up to nt−1 of them).
func runPool(n, grain, nt, units int, fn func(worker, lo, hi int)) {
	c := calls.Get().(*call)
	c.fn, c.n, c.grain, c.nt, c.units = fn, n, grain, nt, units
	c.next.Store(0)
	c.pending.Store(0)
	select { // a stale wake-up from an earlier call
	case <-c.done:
	default:
	}
	pool.mu.Lock()
	for k := 0; k < nt-1; k++ {
		var wk *worker
		switch {
		case len(pool.idle) > 0:
			wk = pool.idle[len(pool.idle)-1]
			pool.idle = pool.idle[:len(pool.idle)-1]
		case pool.total < max(nt-1, runtime.GOMAXPROCS(0)-1): // only when none is idle
			wk = &worker{wake: make(chan struct{}, 1)}
			pool.total++
			go wk.loop()
		}
		if wk == nil {
			break
		}
		c.pending.Add(1)
		wk.post(c)
	}
	pool.mu.Unlock()
	c.run()
	c.wait()
	c.fn = nil // do not keep fn's closure alive
	f := c.failed.Swap(nil)
	calls.Put(c)
	if f != nil {
		panic(f.val)
	}
}
