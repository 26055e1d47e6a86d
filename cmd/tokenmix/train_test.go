package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/version"
)

const trainCfg = `{"vocab_size": 256, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 16,
 "causal": true, "task": "lm", "mixer": {"kind": "full"},
 "train": {"batch_size": 2, "steps": 6, "lr": 0.01, "warmup": 2, "log_every": 2, "eval_every": 3, "eval_batches": 1, "checkpoint_every": 2, "seed": 4}}`

// TestTrainResume trains 6 steps straight, and again with an interruption
// after step 3 followed by --resume: the final checkpoints are
// byte-identical.
func TestTrainResume(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 1))
	text := make([]byte, 4000)
	for i := range text {
		text[i] = "abcdefgh \n"[rng.IntN(10)]
	}
	txt, cfg := filepath.Join(dir, "t.txt"), filepath.Join(dir, "c.json")
	os.WriteFile(txt, text, 0o644)
	os.WriteFile(cfg, []byte(trainCfg), 0o644)
	quiet(t)

	a := filepath.Join(dir, "a")
	if err := runTrain(context.Background(), []string{"--config", cfg, "--data", txt, "--out", a}); err != nil {
		t.Fatal(err)
	}
	m, _ := os.ReadFile(filepath.Join(a, "metrics.jsonl"))
	if n := strings.Count(string(m), `"loss"`); n != 4 {
		t.Errorf("%d loss lines in metrics, want 4 (steps 2, 3, 4, 6: log_every 2, eval_every 3):\n%s", n, m)
	}
	if n := strings.Count(string(m), `"val_loss"`); n != 2 {
		t.Errorf("%d validation lines, want 2", n)
	}

	b := filepath.Join(dir, "b")
	ctx := &stopAfter{Context: context.Background(), n: 3}
	if err := runTrain(ctx, []string{"--config", cfg, "--data", txt, "--out", b}); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	if err := runTrain(context.Background(), []string{"--config", cfg, "--data", txt, "--out", b}); err == nil {
		t.Error("second run into a used --out without --resume: want error")
	}
	st, err := os.ReadFile(filepath.Join(b, "ckpt", "00000003", "state.json"))
	if err != nil || !strings.Contains(string(st), `"step": 3`) {
		t.Fatalf("interrupted run's checkpoint state (%v):\n%s", err, st)
	}
	if want := fmt.Sprintf(`"version": %q`, version.Get().String()); !strings.Contains(string(st), want) {
		t.Errorf("checkpoint state without %s:\n%s", want, st)
	}
	if err := runTrain(context.Background(), []string{"--resume", "--data", txt, "--out", b}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"weights.safetensors", "optim.safetensors"} {
		x, _ := os.ReadFile(filepath.Join(a, "ckpt", "00000006", f))
		y, _ := os.ReadFile(filepath.Join(b, "ckpt", "00000006", f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between the straight and the resumed run", f)
		}
	}
}

// stopAfter is a context that reports cancellation from its (n+1)-th Err
// call on: runTrain checks Err once per step, so it stops after n steps.
type stopAfter struct {
	context.Context
	n int
}

func (c *stopAfter) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// quiet sends stdout to /dev/null for the test (train prints the config).
func quiet(t *testing.T) {
	old := os.Stdout
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout = f
	t.Cleanup(func() { os.Stdout = old; f.Close() })
}
