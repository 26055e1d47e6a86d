package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tokenmix/tokenmix/internal/bench"
	"github.com/tokenmix/tokenmix/internal/kernels"
)

// runBenchGemm is `tokenmix bench gemm`: float32 GEMM GFLOP/s on the shapes
// of bench.GemmShapes, per thread count, with the fraction of the measured
// FMA peak.
func runBenchGemm(ctx context.Context, args []string) error {
	fs := newFlags("bench gemm")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	threadsList := fs.String("threads-list", "1,2", "comma-separated thread counts")
	reps := fs.Int("reps", 7, "timed samples per measurement (median reported)")
	transList := fs.String("trans", "NN", "comma-separated transposes: NN, NT, TN, TT")
	pathName := fs.String("path", "", "force a kernel path: go, avx2, avx512 for f32; go, avx512bf16, amx for bf16 (default: best)")
	dtype := fs.String("dtype", "f32", "f32, or bf16: the bf16 GEMM on packed operands, each shape against f32 in the same run")
	clock := fs.String("clock", "wall", "wall, or cpu: one thread timed by its CPU time (robust on a busy machine)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	threads, err := parseInts(*threadsList)
	if err != nil {
		return usageErr("bench gemm: --threads-list: %v", err)
	}
	cpu, err := parseClock(fs, *clock, &threads)
	if err != nil {
		return usageErr("bench gemm: %v", err)
	}
	if *reps < 1 {
		return usageErr("bench gemm: --reps must be positive")
	}
	switch *dtype {
	case "f32":
		if *pathName != "" {
			p, err := parsePath(*pathName)
			if err != nil {
				return usageErr("bench gemm: %v", err)
			}
			defer kernels.SetPath(kernels.SetPath(p))
		}
	case "bf16":
		if cpu {
			return usageErr("bench gemm: --dtype bf16 measures wall time only")
		}
		if *pathName != "" {
			old, err := kernels.SetBF16Path(*pathName)
			if err != nil {
				return usageErr("bench gemm: %v", err)
			}
			defer kernels.SetBF16Path(old)
		}
		return benchGemmBF16(ctx, threads, strings.Split(*transList, ","), *reps, *asJSON)
	default:
		return usageErr("bench gemm: --dtype: want f32 or bf16, got %q", *dtype)
	}
	peaks := map[int]float64{}
	if !*asJSON {
		fmt.Printf("float32 GEMM, kernel path %v, median of %d samples, %s time\n", kernels.CurrentPath(), *reps, *clock)
		for _, t := range threads {
			if g, isa, ok := peak(cpu, t, *reps); ok {
				peaks[t] = g
				fmt.Printf("measured %s FMA peak, %d thread(s): %.1f GFLOP/s\n", isa, t, g)
			}
		}
		fmt.Printf("\n%5s %5s %5s %5s %7s %9s %7s\n", "M", "N", "K", "trans", "threads", "GFLOP/s", "of peak")
	}
	enc := json.NewEncoder(os.Stdout)
	for _, tr := range strings.Split(*transList, ",") {
		for _, s := range bench.GemmShapes {
			for _, t := range threads {
				if err := ctx.Err(); err != nil {
					return err
				}
				var r bench.Result
				if cpu {
					r, err = bench.GemmCPU(s, strings.TrimSpace(tr), *reps)
				} else {
					r, err = bench.Gemm(s, strings.TrimSpace(tr), t, *reps)
				}
				if err != nil {
					return usageErr("bench gemm: %v", err)
				}
				if *asJSON {
					if err := enc.Encode(r); err != nil {
						return err
					}
					continue
				}
				frac := "-"
				if p := peaks[t]; p > 0 {
					frac = fmt.Sprintf("%.0f%%", 100*r.GFLOPS/p)
				}
				fmt.Printf("%5d %5d %5d %5s %7d %9.1f %7s\n", s.M, s.N, s.K, r.Trans, t, r.GFLOPS, frac)
			}
		}
	}
	return nil
}

// benchGemmBF16 is `bench gemm --dtype bf16`: each shape's bf16 GFLOP/s
// and, in the same run, the f32 GEMM's on the same shape and threads.
func benchGemmBF16(ctx context.Context, threads []int, trans []string, reps int, asJSON bool) error {
	enc := json.NewEncoder(os.Stdout)
	if !asJSON {
		fmt.Printf("bf16 GEMM (packed operands), bf16 path %s, against the f32 GEMM (path %v), median of %d samples\n", kernels.BF16Path(), kernels.CurrentPath(), reps)
		for _, t := range threads {
			if g, ok := bench.PeakBF16(t, reps); ok {
				fmt.Printf("measured bf16 dot-product peak, %d thread(s): %.1f GFLOP/s\n", t, g)
			}
		}
		fmt.Printf("\n%5s %5s %5s %5s %7s %10s %9s %8s\n", "M", "N", "K", "trans", "threads", "bf16 GF/s", "f32 GF/s", "bf16÷f32")
	}
	for _, tr := range trans {
		tr = strings.TrimSpace(tr)
		for _, s := range bench.GemmShapes {
			for _, t := range threads {
				if err := ctx.Err(); err != nil {
					return err
				}
				rb, err := bench.GemmBF16(s, tr, t, reps)
				if err != nil {
					return usageErr("bench gemm: %v", err)
				}
				rf, err := bench.Gemm(s, tr, t, reps)
				if err != nil {
					return usageErr("bench gemm: %v", err)
				}
				if asJSON {
					if err := enc.Encode(rb); err != nil {
						return err
					}
					if err := enc.Encode(rf); err != nil {
						return err
					}
					continue
				}
				fmt.Printf("%5d %5d %5d %5s %7d %10.1f %9.1f %7.2f×\n", s.M, s.N, s.K, tr, t, rb.GFLOPS, rf.GFLOPS, rb.GFLOPS/rf.GFLOPS)
			}
		}
	}
	return nil
}

// runBenchPeak is `tokenmix bench peak`: the FMA peak of this CPU per thread
// count, from bench.Peak.
func runBenchPeak(ctx context.Context, args []string) error {
	fs := newFlags("bench peak")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	threadsList := fs.String("threads-list", "1,2", "comma-separated thread counts")
	reps := fs.Int("reps", 7, "timed samples per measurement (median reported)")
	clock := fs.String("clock", "wall", "wall, or cpu: one thread timed by its CPU time (robust on a busy machine)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	threads, err := parseInts(*threadsList)
	if err != nil {
		return usageErr("bench peak: --threads-list: %v", err)
	}
	cpu, err := parseClock(fs, *clock, &threads)
	if err != nil {
		return usageErr("bench peak: %v", err)
	}
	if *reps < 1 {
		return usageErr("bench peak: --reps must be positive")
	}
	enc := json.NewEncoder(os.Stdout)
	for _, t := range threads {
		if err := ctx.Err(); err != nil {
			return err
		}
		g, isa, ok := peak(cpu, t, *reps)
		if !ok {
			fmt.Println("bench peak: no assembly FMA loop for this CPU (needs amd64 with AVX2+FMA or AVX-512); kernels run the pure-Go path")
			return nil
		}
		if *asJSON {
			r := bench.Result{Op: "peak", ISA: isa, Threads: t, GFLOPS: g}
			if cpu {
				r.Clock = "thread-cpu"
			}
			if err := enc.Encode(r); err != nil {
				return err
			}
			continue
		}
		fmt.Printf("%s FMA peak, %d thread(s): %.1f GFLOP/s\n", isa, t, g)
	}
	for _, t := range threads {
		if cpu {
			break
		}
		g, ok := bench.PeakBF16(t, *reps)
		if !ok {
			break
		}
		if *asJSON {
			if err := enc.Encode(bench.Result{Op: "peak_bf16", ISA: "avx512bf16", Threads: t, GFLOPS: g}); err != nil {
				return err
			}
			continue
		}
		fmt.Printf("avx512bf16 dot-product peak, %d thread(s): %.1f GFLOP/s\n", t, g)
	}
	return nil
}

// peak is bench.Peak, or bench.PeakCPU when cpu (threads is then 1).
func peak(cpu bool, threads, reps int) (float64, string, bool) {
	if cpu {
		return bench.PeakCPU(reps)
	}
	return bench.Peak(threads, reps)
}

// parseClock reports whether clock selects CPU time, which measures one
// thread only: it then sets threads to [1] unless --threads-list was given.
func parseClock(fs *flag.FlagSet, clock string, threads *[]int) (bool, error) {
	switch clock {
	case "wall":
		return false, nil
	case "cpu":
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "threads-list" })
		if !set {
			*threads = []int{1}
		}
		for _, t := range *threads {
			if t != 1 {
				return false, fmt.Errorf("--clock cpu measures one thread: use --threads-list 1")
			}
		}
		return true, nil
	}
	return false, fmt.Errorf("--clock: want wall or cpu, got %q", clock)
}

// parseInts parses a comma-separated list of positive integers.
func parseInts(s string) ([]int, error) {
	var xs []int
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || x < 1 {
			return nil, fmt.Errorf("want positive integers, got %q", f)
		}
		xs = append(xs, x)
	}
	return xs, nil
}

// parsePath maps a kernel path name to kernels.Path (only paths this CPU
// supports).
func parsePath(name string) (kernels.Path, error) {
	for _, p := range kernels.Paths() {
		if p.String() == name {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown or unsupported kernel path %q (this CPU: %v)", name, kernels.Paths())
}
