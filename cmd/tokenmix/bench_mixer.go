package main

import (
	"context"
	"fmt"

	"github.com/tokenmix/tokenmix/internal/bench"
	"github.com/tokenmix/tokenmix/internal/parallel"
)

// runBenchMixer is `tokenmix bench mixer`: forward and backward time of one
// mixer layer, its planned bytes and the peak RSS of a fresh process that
// did only this measurement.
func runBenchMixer(ctx context.Context, args []string) error {
	b := newBenchModel("mixer", "model config JSON (its mixer and d_model)", 5, "timed samples (median reported)")
	cfg, child, err := b.parse(args)
	if err != nil {
		return err
	}
	if !child {
		if err := b.checkBudget(cfg, true); err != nil { // a mixer's forward and backward: within the model's plan
			return err
		}
	}
	if child {
		r, err := bench.Mixer(cfg, *b.B, *b.T, *b.reps)
		if err != nil {
			return err
		}
		return printJSON(r)
	}
	var r bench.MixerResult
	if err := b.inChild(&r); err != nil {
		return err
	}
	if *b.asJSON {
		return printJSON(r)
	}
	fmt.Printf("mixer %s, B=%d T=%d, %s (bf16 path %s), %d thread(s): forward %.2f ms, backward %.2f ms; planned %s, peak RSS %s\n",
		r.Mixer, r.Batch, r.Len, r.Precision, r.BF16Kernels, parallel.Threads(), r.FwdMs, r.BwdMs, bench.MiB(r.PlannedBytes), bench.MiB(r.PeakRSSBytes))
	return nil
}
