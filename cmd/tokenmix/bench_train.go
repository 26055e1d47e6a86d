package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"

	"tokenmix/bench"
	"tokenmix/model"
	"tokenmix/parallel"
)

// runBenchTrain is `tokenmix bench train`: time per full training step
// (forward, backward, clipping, AdamW) and tokens/s, the planned bytes and
// the peak RSS of a fresh process that did only this measurement.
func runBenchTrain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench train", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "model config JSON")
	T := fs.Int("len", 0, "sequence length T (raises max_len if larger)")
	B := fs.Int("batch", 1, "batch size B")
	reps := fs.Int("reps", 3, "timed steps after one warm-up step (median reported)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	showPlan := fs.Bool("plan", false, "print the memory plan (every buffer) and exit without measuring")
	args, child := hiddenFlag(args, childFlag)
	if err := fs.Parse(args); err != nil {
		return usageErr("%v", err)
	}
	if *cfgPath == "" || *T < 1 || *B < 1 || *reps < 1 || fs.NArg() > 0 {
		return usageErr("bench train: want --config C --len T [--batch B] [--reps N] [--json]")
	}
	cfg, err := model.LoadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if *T > cfg.MaxLen {
		cfg.MaxLen = *T
	}
	if *showPlan {
		m, err := model.New[float32](cfg)
		if err != nil {
			return err
		}
		p := m.Plan(*B, *T)
		fmt.Print(p.String())
		fmt.Printf("  parameters %d: params+grads+AdamW %s\n", m.NumParams(), mib(m.ParamBytes()))
		return nil
	}
	if child {
		r, err := bench.Train(cfg, *B, *T, *reps)
		if err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	var r bench.TrainResult
	err = bench.InChild(&r, []string{"TOKENMIX_THREADS=" + strconv.Itoa(parallel.Threads())},
		"bench", "train", "--config", *cfgPath, "--len", strconv.Itoa(*T), "--batch", strconv.Itoa(*B),
		"--reps", strconv.Itoa(*reps), childFlag)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	fmt.Printf("train step B=%d T=%d, %d thread(s): %.1f ms/step, %.0f tokens/s; planned %s, params+grads+AdamW %s, peak RSS %s\n",
		*B, *T, parallel.Threads(), r.StepMs, r.TokensPerS, mib(r.PlannedBytes), mib(r.ParamBytes), mib(r.PeakRSSBytes))
	return nil
}
