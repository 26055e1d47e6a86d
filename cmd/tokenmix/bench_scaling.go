package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tokenmix/tokenmix/internal/arena"
	"github.com/tokenmix/tokenmix/internal/bench"
	"github.com/tokenmix/tokenmix/internal/data"
)

// runBenchScaling is `tokenmix bench scaling`: bench.ScalingSweep, forward
// and backward time and peak memory of one layer of every mixer against T,
// up to where full attention exceeds --max-memory (alias --mem-budget),
// with log–log plots.
func runBenchScaling(ctx context.Context, args []string) error {
	fs := newFlags("bench scaling")
	mixers := fs.String("mixers", "", "comma-separated mixer kinds (default: every registered kind)")
	minLen := fs.Int("min-len", 256, "first sequence length")
	maxLen := fs.Int("max-len", 65536, "last sequence length")
	memBudget := fs.String("max-memory", "4GiB", "stop after full attention needs more than this (e.g. 512MiB, 4GiB)")
	fs.StringVar(memBudget, "mem-budget", "4GiB", "alias of --max-memory")
	timeLimit := fs.Duration("time-limit", 20*time.Second, "drop a mixer after its forward+backward exceeds this")
	batch := fs.Int("batch", 1, "batch size B")
	d := fs.Int("d-model", 256, "channels d")
	heads := fs.Int("heads", 4, "heads")
	causal := fs.Bool("causal", true, "causal masking (non-causal kinds then run bidirectional, noted)")
	reps := fs.Int("reps", 3, "timed samples per point (median)")
	preset := fs.String("preset", "recall", "preset whose mixer_options to use (sqrt_len resolves per T)")
	out := fs.String("out", filepath.Join("runs", "scaling"), "directory for scaling.json, scaling.csv and the PNGs")
	if err := parseFlags(fs, args); err != nil {
		return err
	} else if fs.NArg() > 0 {
		return wantUsage(fs)
	} else if *minLen < 1 || *maxLen < *minLen || *batch < 1 || *reps < 1 {
		return usageErr("bench scaling: want 1 ≤ --min-len ≤ --max-len, --batch ≥ 1 and --reps ≥ 1")
	}
	budget, err := parseBytes(*memBudget)
	if err != nil {
		return usageErr("bench scaling: --max-memory: %v", err)
	}
	p, err := arena.LoadPreset(*preset)
	if errors.Is(err, arena.ErrUnknownPreset) {
		return usageErr("bench scaling: %v", err)
	} else if err != nil {
		return err
	}
	var names []string
	if *mixers != "" {
		names = strings.Split(*mixers, ",")
	}
	if err := arena.CheckMixers(names); err != nil {
		return usageErr("bench scaling --%v", err)
	}
	p.Model = arena.ModelSection{DModel: *d, NHeads: *heads, NLayers: 1, DFF: 4 * *d}
	p.Train = arena.TrainSection{}
	config := func(m string, T int, causal bool) ([]byte, error) { // the preset's model for mixer m at length T
		return p.ModelJSON(m, data.Info{Name: "scaling", Mode: data.LM, Vocab: 256, PadID: -1, MaxLen: T}, causal, 1)
	}
	return bench.ScalingSweep(ctx, os.Stdout, bench.SweepOptions{D: *d, Heads: *heads, B: *batch, Reps: *reps, Causal: *causal, Config: config, Out: *out,
		ScalingOptions: bench.ScalingOptions{Mixers: names, MinLen: *minLen, MaxLen: *maxLen, MemBudget: budget, TimeLimitMs: float64(timeLimit.Milliseconds())}})
}
