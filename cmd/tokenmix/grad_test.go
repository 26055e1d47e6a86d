package main

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/tokenmix/tokenmix/internal/safetensors"
)

// TestInitAndGrad runs `tokenmix init` and `tokenmix grad` in process on a
// parity case: the weights have every parameter, and grad's loss and
// gradients match the PyTorch reference.
func TestInitAndGrad(t *testing.T) {
	dir := t.TempDir()
	c := filepath.Join("..", "..", "internal", "model", "testdata", "parity", "cls_bidir_pad")
	w := filepath.Join(dir, "w.safetensors")
	if err := runInit(context.Background(), []string{"--config", filepath.Join(c, "config.json"), "--out", w, "--seed", "5"}); err != nil {
		t.Fatal(err)
	}
	wf, err := safetensors.ReadFile(w)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := wf.Tensors["blocks.1.mixer.o.weight"]; !ok {
		t.Errorf("init wrote %v", wf.Names())
	}
	out := filepath.Join(dir, "g.safetensors")
	err = runGrad(context.Background(), []string{"--config", filepath.Join(c, "config.json"),
		"--weights", filepath.Join(c, "weights.safetensors"), "--batch", filepath.Join(c, "batch.safetensors"), "--out", out})
	if err != nil {
		t.Fatal(err)
	}
	got, err := safetensors.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := safetensors.ReadFile(filepath.Join(c, "ref.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"loss", "grad.embed.weight", "grad.blocks.0.mixer.q.weight", "grad.head.weight"} {
		a, _, err := got.F64(name)
		if err != nil {
			t.Fatal(err)
		}
		b, _, _ := ref.F64(name)
		var num, den float64
		for i := range b {
			num = math.Max(num, math.Abs(a[i]-b[i]))
			den = math.Max(den, math.Abs(b[i]))
		}
		if num > 1e-3*den {
			t.Errorf("%s: max rel err %.3g", name, num/den)
		}
	}
	if err := runGrad(context.Background(), []string{"--config", filepath.Join(c, "config.json")}); err == nil {
		t.Error("grad without --weights: want a usage error")
	}
}
