package bench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/parallel"
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
	Clock   string  `json:"clock,omitempty"` // "thread-cpu" for CPU-time figures, else wall time
}

// SampleTime is the minimum duration of one timed sample.
var SampleTime = 20 * time.Millisecond

// Gemm measures kernels.Gemm (float32, alpha=1, beta=0, dense strides) on s
// with the transposes trans ("NN", "NT", "TN" or "TT") on threads threads,
// and returns the median GFLOP/s of reps samples after a warm-up. Gemm
// returns an error for an unknown trans or reps < 1.
func Gemm(s Shape, trans string, threads, reps int) (Result, error) {
	run, err := gemmRunner(s, trans, threads)
	if err != nil || reps < 1 {
		return Result{}, errors.Join(err, repsErr(reps))
	}
	sec := median(run, reps)
	return Result{Op: "gemm", M: s.M, N: s.N, K: s.K, Trans: trans, Threads: threads,
		GFLOPS: 2 * float64(s.M) * float64(s.N) * float64(s.K) / sec / 1e9}, nil
}

// GemmCPU is Gemm on one thread (kernels.Gemm with one thread, on a locked OS thread),
// timed by that thread's CPU time instead of the wall clock: on a machine
// shared with other work it measures the kernel, not the scheduler. It
// returns an error where per-thread CPU time is unavailable (non-Linux).
func GemmCPU(s Shape, trans string, reps int) (Result, error) {
	run, err := gemmRunner(s, trans, 1)
	if err != nil || reps < 1 {
		return Result{}, errors.Join(err, repsErr(reps))
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sec, ok := medianCPU(run, reps)
	if !ok {
		return Result{}, errors.New("bench: no per-thread CPU clock on this platform")
	}
	return Result{Op: "gemm", M: s.M, N: s.N, K: s.K, Trans: trans, Threads: 1, Clock: "thread-cpu",
		GFLOPS: 2 * float64(s.M) * float64(s.N) * float64(s.K) / sec / 1e9}, nil
}

// GemmBF16 measures kernels.GemmBF16 (alpha=1, beta=0) on s with op(A)
// and op(B) packed once from random float32 operands of the transposes
// trans (packing is not timed: the GEMM takes packed operands), on threads
// threads and the current bf16 path, and returns the median GFLOP/s of
// reps samples.
func GemmBF16(s Shape, trans string, threads, reps int) (Result, error) {
	transA, transB, err := parseTrans(trans)
	if err != nil {
		return Result{}, err
	}
	if reps < 1 {
		return Result{}, repsErr(reps)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	a, b, c := randFloats(rng, s.M*s.K), randFloats(rng, s.K*s.N), make([]float32, s.M*s.N)
	lda, ldb := s.K, s.N
	if transA {
		lda = s.M
	}
	if transB {
		ldb = s.K
	}
	var pa kernels.BF16A
	var pb kernels.BF16B
	kernels.PackBF16A(parallel.Threads(), &pa, transA, s.M, s.K, a, lda)
	kernels.PackBF16B(parallel.Threads(), &pb, transB, s.K, s.N, b, ldb)
	sec := median(func() { kernels.GemmBF16(threads, 1, kernels.PackedA(&pa), kernels.PackedB(&pb), 0, c, s.N) }, reps)
	return Result{Op: "gemm_bf16", M: s.M, N: s.N, K: s.K, Trans: trans, ISA: kernels.BF16Path(), Threads: threads,
		GFLOPS: 2 * float64(s.M) * float64(s.N) * float64(s.K) / sec / 1e9}, nil
}

// gemmRunner allocates random operands for s and returns a function that
// runs one product on threads threads.
func gemmRunner(s Shape, trans string, threads int) (func(), error) {
	transA, transB, err := parseTrans(trans)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	a, b, c := randFloats(rng, s.M*s.K), randFloats(rng, s.K*s.N), make([]float32, s.M*s.N)
	lda, ldb := s.K, s.N
	if transA {
		lda = s.M
	}
	if transB {
		ldb = s.K
	}
	return func() {
		kernels.Gemm(threads, kernels.PrecFP32, transA, transB, s.M, s.N, s.K, 1, a, lda, b, ldb, 0, c, s.N)
	}, nil
}

// parseTrans reads "NN", "NT", "TN" or "TT" as (transA, transB).
func parseTrans(trans string) (transA, transB bool, err error) {
	switch trans {
	case "NN":
	case "NT":
		transB = true
	case "TN":
		transA = true
	case "TT":
		transA, transB = true, true
	default:
		err = fmt.Errorf("bench: unknown transpose %q (want NN, NT, TN or TT)", trans)
	}
	return transA, transB, err
}

func repsErr(reps int) error {
	if reps < 1 {
		return fmt.Errorf("bench: reps %d < 1", reps)
	}
	return nil
}

func randFloats(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = 2*rng.Float32() - 1
	}
	return x
}
