package bench

import (
	"fmt"
	"math/rand/v2"
	"time"

	"tokenmix/kernels"
	"tokenmix/parallel"
)

// Shape is one GEMM problem: C (M×N) = op(A) (M×K) · op(B) (K×N).
type Shape struct{ M, N, K int }

// GemmShapes are the shapes of `tokenmix bench gemm` (issue 2): square,
// tall, rank-64 update, long-k and the MLP-sized product.
var GemmShapes = []Shape{
	{512, 512, 512},
	{1024, 256, 256},
	{2048, 2048, 64},
	{2048, 64, 2048},
	{4096, 1024, 256},
}

// Result is one measurement, in the JSON form of `tokenmix bench --json`.
type Result struct {
	Op      string  `json:"op"`
	M       int     `json:"m,omitempty"`
	N       int     `json:"n,omitempty"`
	K       int     `json:"k,omitempty"`
	Trans   string  `json:"trans,omitempty"`
	ISA     string  `json:"isa,omitempty"`
	Threads int     `json:"threads"`
	GFLOPS  float64 `json:"gflops"`
}

// SampleTime is the minimum duration of one timed sample.
var SampleTime = 20 * time.Millisecond

// Gemm measures kernels.Gemm (float32, alpha=1, beta=0, dense strides) on s
// with the transposes trans ("NN", "NT", "TN" or "TT") on threads threads,
// and returns the median GFLOP/s of reps samples after a warm-up. The
// thread count is restored afterwards. Gemm returns an error for an unknown
// trans or reps < 1.
func Gemm(s Shape, trans string, threads, reps int) (Result, error) {
	if reps < 1 {
		return Result{}, fmt.Errorf("bench: reps %d < 1", reps)
	}
	var transA, transB bool
	switch trans {
	case "NN":
	case "NT":
		transB = true
	case "TN":
		transA = true
	case "TT":
		transA, transB = true, true
	default:
		return Result{}, fmt.Errorf("bench: unknown transpose %q (want NN, NT, TN or TT)", trans)
	}
	defer parallel.SetThreads(parallel.SetThreads(threads))
	rng := rand.New(rand.NewPCG(1, 2))
	a, b, c := randFloats(rng, s.M*s.K), randFloats(rng, s.K*s.N), make([]float32, s.M*s.N)
	lda, ldb := s.K, s.N
	if transA {
		lda = s.M
	}
	if transB {
		ldb = s.K
	}
	run := func() {
		kernels.Gemm(transA, transB, s.M, s.N, s.K, 1, a, lda, b, ldb, 0, c, s.N)
	}
	sec := median(run, reps)
	return Result{Op: "gemm", M: s.M, N: s.N, K: s.K, Trans: trans, Threads: threads,
		GFLOPS: 2 * float64(s.M) * float64(s.N) * float64(s.K) / sec / 1e9}, nil
}

// median returns the median time of one call of f over reps samples, after
// a warm-up of at least one sample's length.
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
	return medianOf(ts)
}

func randFloats(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = 2*rng.Float32() - 1
	}
	return x
}
