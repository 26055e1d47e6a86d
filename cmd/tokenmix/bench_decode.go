package main

import (
	"context"
	"os"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/internal/bench"
)

// runBenchDecode is `tokenmix bench decode`: bench.Decode, prefill speed,
// time to the first token, and the latency of one more token at positions
// 256, 1024 and 4096 (those below max_len), with the state's bytes; then
// StepStreams' tokens/s against one stream.
func runBenchDecode(ctx context.Context, args []string) error {
	fs := newFlags("bench decode")
	dir := fs.String("run", "", "run directory or exported model (a causal lm)")
	cfgPath := fs.String("config", "", "or a model config (random weights)")
	reps := fs.Int("reps", 16, "tokens timed at each position (median reported)")
	streams := fs.Int("streams", 16, "also time StepStreams over this many streams at position 256, in turn with one stream alone (0: skip)")
	asJSON := fs.Bool("json", false, "print one JSON object per position")
	precision := fs.String("precision", "fp32", "precision of the matrix products: fp32, or bf16 (bf16 products, float32 sums)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*dir == "") == (*cfgPath == "") || *reps < 1 || *streams < 0 || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	m, err := bench.OpenModel(*dir, *cfgPath, tokenmix.WithPrecision(*precision))
	if err != nil {
		return err
	}
	o := bench.DecodeOptions{Reps: *reps, Streams: *streams, JSON: *asJSON}
	if err := o.Check(m.Config().MaxLen); err != nil {
		return usageErr("bench decode: %v", err)
	}
	return bench.Decode(ctx, os.Stdout, m, o)
}
