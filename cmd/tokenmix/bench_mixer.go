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

// runBenchMixer is `tokenmix bench mixer`: forward and backward time of one
// mixer layer, its planned bytes and the peak RSS of a fresh process that
// did only this measurement.
func runBenchMixer(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench mixer", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "model config JSON (its mixer and d_model)")
	T := fs.Int("len", 0, "sequence length T (raises max_len if larger)")
	B := fs.Int("batch", 1, "batch size B")
	reps := fs.Int("reps", 5, "timed samples (median reported)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	args, child := hiddenFlag(args, childFlag)
	if err := fs.Parse(args); err != nil {
		return usageErr("%v", err)
	}
	if *cfgPath == "" || *T < 1 || *B < 1 || *reps < 1 || fs.NArg() > 0 {
		return usageErr("bench mixer: want --config C --len T [--batch B] [--reps N] [--json]")
	}
	cfg, err := model.LoadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if *T > cfg.MaxLen {
		cfg.MaxLen = *T
	}
	if child {
		r, err := bench.Mixer(cfg, *B, *T, *reps)
		if err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	var r bench.MixerResult
	err = bench.InChild(&r, []string{"TOKENMIX_THREADS=" + strconv.Itoa(parallel.Threads())},
		"bench", "mixer", "--config", *cfgPath, "--len", strconv.Itoa(*T), "--batch", strconv.Itoa(*B),
		"--reps", strconv.Itoa(*reps), childFlag)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	fmt.Printf("mixer %s, B=%d T=%d, %d thread(s): forward %.2f ms, backward %.2f ms; planned %s, peak RSS %s\n",
		r.Mixer, r.Batch, r.Len, parallel.Threads(), r.FwdMs, r.BwdMs, mib(r.PlannedBytes), mib(r.PeakRSSBytes))
	return nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// childFlag marks the re-executed measuring process of the bench
// subcommands; it is not in their flag sets, so help does not show it.
const childFlag = "--measure-in-this-process"

// hiddenFlag removes every occurrence of the boolean flag name from args and
// reports whether there was one.
func hiddenFlag(args []string, name string) ([]string, bool) {
	var out []string
	found := false
	for _, a := range args {
		if a == name {
			found = true
			continue
		}
		out = append(out, a)
	}
	return out, found
}
