package main

import (
	"context"
	"fmt"

	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/safetensors"
)

// runGrad is `tokenmix grad`: one forward and backward on a batch file,
// writing logits, loss and every parameter gradient, to check an export or
// a port against another framework.
func runGrad(ctx context.Context, args []string) error {
	fs := newFlags("grad")
	cfgPath := fs.String("config", "", "model config JSON")
	wPath := fs.String("weights", "", "weights (safetensors, the contract's names)")
	bPath := fs.String("batch", "", "batch (safetensors: tokens I32 [B,T], targets I32 [B,T] or [B])")
	out := fs.String("out", "", "output (safetensors: logits, loss, grad.<name>)")
	f64 := fs.Bool("float64", false, "compute and write in float64 instead of float32")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *cfgPath == "" || *wPath == "" || *bPath == "" || *out == "" || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	cfg, err := model.LoadConfig(*cfgPath)
	if err != nil {
		return err
	}
	weights, err := safetensors.ReadFile(*wPath)
	if err != nil {
		return err
	}
	batch, err := safetensors.ReadFile(*bPath)
	if err != nil {
		return err
	}
	var res *safetensors.File
	var loss float64
	if *f64 {
		res, loss, err = gradWith[float64](cfg, weights, batch)
	} else {
		res, loss, err = gradWith[float32](cfg, weights, batch)
	}
	if err != nil {
		return err
	}
	if err := res.WriteFile(*out); err != nil {
		return err
	}
	fmt.Printf("loss %.6f; wrote logits, loss and %d gradients to %s\n", loss, len(res.Tensors)-2, *out)
	return nil
}

func gradWith[F float32 | float64](cfg *model.Config, weights, batch *safetensors.File) (*safetensors.File, float64, error) {
	m, err := model.New[F](cfg)
	if err != nil {
		return nil, 0, err
	}
	if err := m.LoadWeights(weights); err != nil {
		return nil, 0, err
	}
	if cfg.Train != nil {
		m.Seed = cfg.Train.Seed
	}
	res, err := m.GradFile(batch)
	return res, m.Loss(), err
}
