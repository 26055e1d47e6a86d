package main

import (
	"context"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"tokenmix/plot/pattern"
)

func TestRunPattern(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.json")
	err := os.WriteFile(cfg, []byte(`{"vocab_size": 16, "d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 16,
		"max_len": 20, "causal": true, "task": "lm",
		"mixer": {"kind": "fixed", "block": 4, "summary": 1, "combine": "interleave"}}`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "p.png")
	if err := runPattern(context.Background(), []string{"--config", cfg, "--len", "16", "--out", out, "--grid", "4"}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	g := pattern.Layout(2, 2, 16, 4)
	if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w != g.X0+2*g.Step || h != g.Y0+2*g.RowStep-16 {
		t.Errorf("image %dx%d does not hold 2×2 panels with grids", w, h)
	}
	for _, bad := range [][]string{
		{"--config", cfg, "--out", out, "--len", "16", "--grid", "3"},
		{"--config", cfg, "--out", out, "--len", "16", "--query", "16"},
		{"--config", cfg},
	} {
		if runPattern(context.Background(), bad) == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
