package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tokenmix/tokenmix/internal/bench"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/parallel"
)

// runBenchInfer is `tokenmix bench infer`: sequences per second of
// tokenmix's inference forward against ONNX Runtime (for Node) on the
// same model exported to ONNX, same batch, length and threads, alternated.
func runBenchInfer(ctx context.Context, args []string) error {
	b := newBenchModel("infer", "model config JSON (random weights)", 10, "timed batches per engine and round (median reported)")
	rounds := b.fs.Int("rounds", 5, "rounds, each timing both engines (the ratio is the median of the rounds')")
	modules := b.fs.String("onnxruntime", os.Getenv("TOKENMIX_NODE_MODULES"), "a node_modules directory holding onnxruntime-node (default $TOKENMIX_NODE_MODULES)")
	script := b.fs.String("script", filepath.Join("scripts", "onnxruntime.mjs"), "the Node side (scripts/onnxruntime.mjs of this repository)")
	mix := b.fs.String("mixer", "", `the config's mixer replaced by this JSON object (e.g. '{"kind": "strided", "block": 32}')`)
	cfg, _, err := b.parse(args)
	if err != nil {
		return err
	}
	if *mix != "" {
		// The config file again, with its mixer replaced, through the
		// one config parser.
		var raw map[string]json.RawMessage
		data, err := os.ReadFile(*b.cfgPath)
		if err == nil {
			err = json.Unmarshal(data, &raw)
		}
		if err != nil {
			return fmt.Errorf("bench infer: %s: %v", *b.cfgPath, err)
		}
		raw["mixer"] = json.RawMessage(*mix)
		data, _ = json.Marshal(raw)
		c, err := model.ParseConfig(data)
		if err != nil {
			return usageErr("bench infer: --mixer: %v", err)
		}
		c.MaxLen, c.Precision = cfg.MaxLen, cfg.Precision
		cfg = c
	}
	if _, err := os.Stat(filepath.Join(*modules, "onnxruntime-node")); *modules == "" || err != nil {
		return usageErr("bench infer: --onnxruntime: name a node_modules holding onnxruntime-node (npm install --ignore-scripts onnxruntime-node), got %q", *modules)
	}
	if *rounds < 1 {
		return usageErr("bench infer: --rounds: want ≥ 1, got %d", *rounds)
	}
	if _, err := os.Stat(*script); err != nil {
		return usageErr("bench infer: --script: %v (run from the repository root, or name scripts/onnxruntime.mjs)", err)
	}
	if err := b.checkBudget(cfg, false); err != nil {
		return err
	}
	r, err := bench.Infer(cfg, *b.B, *b.T, parallel.Threads(), *rounds, *b.reps, *modules, *script)
	if err != nil {
		return err
	}
	if *b.asJSON {
		return printJSON(r)
	}
	fmt.Printf("infer %s B=%d T=%d, %d thread(s): tokenmix %.1f seqs/s (%.2f ms/batch), ONNX Runtime %s %.1f seqs/s (%.2f ms/batch); tokenmix ÷ ONNX Runtime %.2fx (median of %d rounds)\n",
		r.Kind, r.B, r.T, r.Threads, r.Tokenmix, r.TokenmixMs, r.ORTVersion, r.ORT, r.ORTMs, r.Ratio, r.Rounds)
	return nil
}
