package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tokenmix/tokenmix/internal/bench"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/parallel"
)

// runBenchTrain is `tokenmix bench train`: time per full training step
// (forward, backward, clipping, AdamW) and tokens/s, the planned bytes and
// the peak RSS of a fresh process that did only this measurement.
func runBenchTrain(ctx context.Context, args []string) error {
	b := newBenchModel("train", "model config JSON", 3, "timed steps after one warm-up step (median reported)")
	showPlan := b.fs.Bool("plan", false, "print the memory plan (every buffer) and exit without measuring")
	profile := b.fs.Bool("profile", false, "profile the timed steps: their wall time by phase (forward, backward, clipping and optimizer) and their CPU samples by kernel (use --reps 10 or more: 100 samples a second)")
	cpuprofile := b.fs.String("cpuprofile", "", "write the timed steps' CPU profile to `FILE`, in pprof's format (for go tool pprof); implies --profile")
	cfg, child, err := b.parse(args)
	if err != nil {
		return err
	}
	if *cpuprofile != "" {
		*profile = true
		if *cpuprofile, err = filepath.Abs(*cpuprofile); err != nil {
			return fmt.Errorf("bench train: --cpuprofile: %v", err)
		}
	}
	if *showPlan { // from the config alone: nothing is allocated
		n, err := model.NeedOf(cfg, *b.B, *b.T, parallel.Threads(), true)
		if err != nil {
			return err
		}
		fmt.Print(n.Plan.String())
		fmt.Printf("  parameters %d: params+grads+AdamW %s\n", n.NumParams, bench.MiB(n.ParamBytes()))
		return nil
	}
	if !child {
		if err := b.checkBudget(cfg, true); err != nil {
			return err
		}
	}
	if child {
		r, err := bench.Train(cfg, *b.B, *b.T, *b.reps, *profile, *cpuprofile)
		if err != nil {
			return err
		}
		return printJSON(r)
	}
	var r bench.TrainResult
	var extra []string
	if *profile {
		extra = append(extra, "--profile")
	}
	if *cpuprofile != "" {
		// Fail before measuring when the file cannot be written; the
		// child writes it, and it goes if the measurement fails.
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return fmt.Errorf("bench train: --cpuprofile: %v", err)
		}
		f.Close()
		extra = append(extra, "--cpuprofile", *cpuprofile)
	}
	if err := b.inChild(&r, extra...); err != nil {
		if *cpuprofile != "" {
			os.Remove(*cpuprofile)
		}
		return err
	}
	if *b.asJSON {
		return printJSON(r)
	}
	fmt.Printf("train step B=%d T=%d, %s (bf16 path %s), %d thread(s): %.1f ms/step, %.0f tokens/s; planned %s, params+grads+AdamW %s, peak RSS %s\n",
		*b.B, *b.T, r.Precision, r.BF16Kernels, parallel.Threads(), r.StepMs, r.TokensPerS, bench.MiB(r.PlannedBytes), bench.MiB(r.ParamBytes), bench.MiB(r.PeakRSSBytes))
	if p := r.Profile; p != nil {
		fmt.Printf("profile of the %d timed steps:\n  by phase (wall time per step):\n", *b.reps)
		for _, s := range p.Phases {
			fmt.Printf("    %5.1f%%  %8.1f ms  %s\n", 100*s.Share, s.Ms, s.Name)
		}
		fmt.Printf("  by kernel (the function each of %d CPU samples, every thread, was in; the top %d):\n", p.Samples, len(p.Kernels))
		for _, s := range p.Kernels {
			fmt.Printf("    %5.1f%%  %s\n", 100*s.Share, s.Name)
		}
	}
	return nil
}
