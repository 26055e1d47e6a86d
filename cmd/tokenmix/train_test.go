package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/run"
	"github.com/tokenmix/tokenmix/internal/train"
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

// TestEvaluationAgrees trains a tiny lm on a directory of text, then
// measures its validation split three ways: train's last validation
// figure (fixed windows of seq_len; eval_batches covers the split),
// `tokenmix eval --split val --context 0` on the same directory, and the
// arena's evaluation (data.Evaluate with the training model's forward, as
// internal/arena's run does, here with other batches and a bucketed
// order). The three agree to 1e-6.
func TestEvaluationAgrees(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(2, 2))
	corpus := filepath.Join(dir, "corpus")
	os.MkdirAll(corpus, 0o755)
	for _, f := range []string{"a.txt", "b.txt"} {
		text := make([]byte, 2000)
		for i := range text {
			text[i] = "abcdefgh \n"[rng.IntN(10)]
		}
		os.WriteFile(filepath.Join(corpus, f), text, 0o644)
	}
	cfg := filepath.Join(dir, "c.json")
	os.WriteFile(cfg, []byte(strings.Replace(trainCfg, `"eval_batches": 1`, `"eval_batches": 8`, 1)), 0o644)
	quiet(t)
	out := filepath.Join(dir, "run")
	if err := runTrain(context.Background(), []string{"--config", cfg, "--data", corpus, "--out", out}); err != nil {
		t.Fatal(err)
	}
	d, err := run.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := d.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	trainBPB := math.NaN()
	for _, m := range ms {
		if v, ok := m["val_bits_per_byte"].(float64); ok {
			trainBPB = v
		}
	}

	r := cli(t, dir, "eval", "--run", out, "--data", corpus, "--split", "val", "--context", "0", "--json")
	var ev evalResult
	if err := json.Unmarshal([]byte(r.stdout), &ev); r.code != 0 || err != nil {
		t.Fatalf("eval: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}

	all, _ := data.ReadText(corpus)
	c, _ := data.SplitText(all, 0.05)
	w, err := data.NewWindows(c.Val, 16, 0)
	if err != nil {
		t.Fatal(err)
	}
	if w.Len() > 2*8 {
		t.Fatalf("%d validation windows: more than eval_batches·batch_size, train scores only some", w.Len())
	}
	net, err := run.LoadModel(out, -1)
	if err != nil {
		t.Fatal(err)
	}
	arena, err := data.Evaluate(train.Forward(net), data.NewTextTask("text", nil, w, nil), data.Val, 3, 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Inputs != len(c.Val)-1 || arena.Targets != ev.Inputs || ev.Windows != w.Len() {
		t.Errorf("eval scored %d bytes in %d windows, the arena %d; the split has %d bytes in %d windows", ev.Inputs, ev.Windows, arena.Targets, len(c.Val), w.Len())
	}
	if math.Abs(trainBPB-ev.BitsPerByte) > 1e-6 || math.Abs(arena.Metric-ev.BitsPerByte) > 1e-6 {
		t.Errorf("bits per byte: train %.9f, eval %.9f, arena %.9f", trainBPB, ev.BitsPerByte, arena.Metric)
	}
}

// TestEvalTextDirectory: eval --data reads what train --data reads, a
// text file or a directory of them (concatenated in path order, each
// followed by a newline): the directory scores as the file of its bytes.
func TestEvalTextDirectory(t *testing.T) {
	fox, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "fox"))
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "d", "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "d", "a.txt"), []byte("the quick brown fox jumps over the lazy dog."), 0o644)
	os.WriteFile(filepath.Join(dir, "d", "sub", "b.txt"), []byte("the lazy dog sleeps, and the fox runs away."), 0o644)
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte("the quick brown fox jumps over the lazy dog.\nthe lazy dog sleeps, and the fox runs away.\n"), 0o644)
	var got [2]string
	for i, p := range []string{"d", "f.txt"} {
		r := cli(t, dir, "eval", "--run", fox, "--data", p, "--context", "8")
		if r.code != 0 {
			t.Fatalf("eval --data %s: exit %d\n%s", p, r.code, r.stderr)
		}
		got[i] = r.stdout
	}
	if got[0] != got[1] || !strings.Contains(got[0], "88 bytes in") {
		t.Errorf("directory: %q, file: %q", got[0], got[1])
	}
	for _, args := range [][]string{{"--split", "test"}, {"--split", "val", "--val-frac", "1"}} {
		r := cli(t, dir, append([]string{"eval", "--run", fox, "--data", "d"}, args...)...)
		if r.code == 0 {
			t.Errorf("eval %q: exit 0, want an error", args)
		}
	}
}

// TestTrainTask trains on a task of the task list (recall, from its JSON
// object): the metrics carry the task's validation metric; a config that
// does not fit the task, and --task with --data, are errors.
func TestTrainTask(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.json")
	os.WriteFile(cfg, []byte(trainCfg), 0o644)
	quiet(t)
	recall := `{"name": "recall", "len": 16, "pairs": 3, "keys": 8, "values": 4, "train": 64, "val": 8, "test": 8}`
	out := filepath.Join(dir, "run")
	if err := runTrain(context.Background(), []string{"--config", cfg, "--task", recall, "--out", out}); err != nil {
		t.Fatal(err)
	}
	m, _ := os.ReadFile(filepath.Join(out, "metrics.jsonl"))
	if n := strings.Count(string(m), `"val_accuracy"`); n != 2 {
		t.Errorf("%d lines with val_accuracy, want 2:\n%s", n, m)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--task", strings.Replace(recall, `"len": 16`, `"len": 32`, 1)}, "max_len"},
		{[]string{"--task", `{"name": "recall", "lenn": 16}`}, "task.lenn"},
		{[]string{"--task", "nosuch"}, "unknown task"},
		{[]string{"--task", "recall", "--data", cfg}, "want tokenmix train"},
	} {
		args := append([]string{"--config", cfg, "--out", filepath.Join(dir, "x")}, tc.args...)
		if err := runTrain(context.Background(), args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one with %q", tc.args, err, tc.want)
		}
	}
}
