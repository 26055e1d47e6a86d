package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/tokenmix/tokenmix/internal/bench"
	"github.com/tokenmix/tokenmix/internal/kernels"
)

// runBenchGemm is `tokenmix bench gemm`: bench.GemmReport, the float32
// GEMM's GFLOP/s on bench.GemmShapes per thread count with the fraction of
// the measured FMA peak, or the bf16 GEMM's against float32.
func runBenchGemm(ctx context.Context, args []string) error {
	g := newGemmFlags("gemm")
	transList := g.fs.String("trans", "NN", "comma-separated transposes: NN, NT, TN, TT")
	pathName := g.fs.String("path", "", "force a kernel path: go, avx2, avx512 for f32; go, avx2fma, avx512fma, avx512bf16, amx for bf16 (default: best)")
	dtype := g.fs.String("dtype", "f32", "f32, or bf16: the bf16 GEMM on packed operands, each shape against f32 in the same run")
	o, err := g.options(args)
	if err != nil {
		return err
	}
	if *dtype != "f32" && *dtype != "bf16" {
		return usageErr("bench gemm: --dtype: want f32 or bf16, got %q", *dtype)
	}
	o.Trans, o.BF16 = strings.Split(*transList, ","), *dtype == "bf16"
	if err := o.Check(); err != nil {
		return usageErr("bench gemm: %v", err)
	}
	if *pathName != "" {
		restore, err := setKernelPath(o.BF16, *pathName)
		if err != nil {
			return usageErr("bench gemm: %v", err)
		}
		defer restore()
	}
	return bench.GemmReport(ctx, os.Stdout, o)
}

// setKernelPath forces the bf16 GEMM path (bf16) or the float32 kernel path
// named name, where this CPU has it, and returns the function that restores
// the previous one.
func setKernelPath(bf16 bool, name string) (restore func(), err error) {
	if bf16 {
		old, err := kernels.SetBF16Path(name)
		return func() { kernels.SetBF16Path(old) }, err
	}
	for _, p := range kernels.Paths() {
		if p.String() == name {
			old := kernels.SetPath(p)
			return func() { kernels.SetPath(old) }, nil
		}
	}
	return nil, fmt.Errorf("unknown or unsupported kernel path %q (this CPU: %v)", name, kernels.Paths())
}
