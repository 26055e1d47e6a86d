package main

import (
	"context"
	"fmt"

	"github.com/tokenmix/tokenmix/internal/model"
)

// runInit is `tokenmix init`: freshly initialised weights for a config.
func runInit(ctx context.Context, args []string) error {
	fs := newFlags("init")
	cfgPath := fs.String("config", "", "model config JSON")
	out := fs.String("out", "", "output weights file (safetensors)")
	seed := fs.Uint64("seed", 0, "initialisation seed")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *cfgPath == "" || *out == "" || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	cfg, err := model.LoadConfig(*cfgPath)
	if err != nil {
		return err
	}
	m, err := model.New[float32](cfg)
	if err != nil {
		return err
	}
	m.Init(*seed)
	if err := m.WeightsFile().WriteFile(*out); err != nil {
		return err
	}
	fmt.Printf("wrote %d parameters in %d tensors to %s\n", m.NumParams(), len(m.Specs), *out)
	return nil
}
