package main

import (
	"context"
	"fmt"

	"github.com/tokenmix/tokenmix/internal/run"
)

// runExport is `tokenmix export`: a run's weights and config, without the
// optimizer state, as the small artefact to ship.
func runExport(ctx context.Context, args []string) error {
	fs := newFlags("export")
	src := fs.String("run", "", "run directory (or an exported model)")
	out := fs.String("out", "", "new directory for config.json and weights.safetensors")
	dtype := fs.String("dtype", "f32", "weight type: f32, or bf16 (half the size, each weight rounded to bfloat16)")
	step := fs.Int("checkpoint", -1, "the checkpoint of the run to export (default: the newest)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *src == "" || *out == "" || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	if *dtype != "f32" && *dtype != "bf16" {
		return usageErr("export: --dtype: want f32 or bf16, got %q", *dtype)
	}
	if err := run.Export(*src, *step, *out, *dtype == "bf16"); err != nil {
		return err
	}
	fmt.Printf("wrote %s (config.json, weights.safetensors in %s)\n", *out, *dtype)
	return nil
}
