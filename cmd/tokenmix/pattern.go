package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"tokenmix/mixer"
	"tokenmix/model"
	"tokenmix/plot/pattern"
)

// runPattern is `tokenmix pattern`: a PNG of every layer's and head's
// attention connectivity for a model config, and optionally the 2-D view of
// one query on a W×W image grid.
func runPattern(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pattern", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "model config JSON (required)")
	T := fs.Int("len", 0, "sequence length T (default max_len)")
	out := fs.String("out", "", "output PNG path (required)")
	grid := fs.Int("grid", 0, "also draw query --query on a W×W image grid (W·W ≥ T)")
	query := fs.Int("query", -1, "query position for --grid (default: the middle of the last grid row)")
	if err := fs.Parse(args); err != nil {
		return usageErr("%v", err)
	}
	if *cfgPath == "" || *out == "" || fs.NArg() > 0 {
		return usageErr("pattern: want --config C --out p.png [--len T] [--grid W --query Q]")
	}
	cfg, err := model.LoadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if *T == 0 {
		*T = cfg.MaxLen
	}
	if *T < 1 {
		return usageErr("pattern: --len must be positive")
	}
	if *grid < 0 || *grid > 0 && *grid**grid < *T {
		return usageErr("pattern: --grid %d: want W with W·W ≥ T = %d", *grid, *T)
	}
	if *query < 0 {
		w := max(*grid, 1)
		*query = min(*T-1, (*T-1)/w*w+w/2)
	}
	if *query >= *T {
		return usageErr("pattern: --query %d outside [0,%d)", *query, *T)
	}
	c := mixer.Config{D: cfg.DModel, Heads: cfg.NHeads, MaxLen: max(cfg.MaxLen, *T), Causal: cfg.Causal,
		NLayers: cfg.NLayers, Opts: cfg.Mixer}
	maps, err := pattern.Maps(cfg.Kind(), c, cfg.NLayers, *T, nil, nil)
	if err != nil {
		return err
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := pattern.Draw(f, maps, *grid, *query); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("wrote %s: %s, %d layer(s) × %d head(s), T=%d\n", *out, cfg.Kind().Name, cfg.NLayers, cfg.NHeads, *T)
	return nil
}
