package main

import (
	"context"
	"os"

	"github.com/tokenmix/tokenmix/internal/bench"
)

// runBenchPeak is `tokenmix bench peak`: bench.PeakReport, the FMA peak of
// this CPU per thread count, and the bf16 dot-product peak where it has one.
func runBenchPeak(ctx context.Context, args []string) error {
	o, err := newGemmFlags("peak").options(args)
	if err != nil {
		return err
	}
	return bench.PeakReport(ctx, os.Stdout, o)
}
