package tokenmix_test

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix"
)

var update = flag.Bool("update", false, "retrain the example models in testdata with tokenmix train and export")

// The example models: a spam/ham classifier and a small byte-level lm,
// exported in bf16.
const (
	exampleSpamConfig = `{"vocab_size": 257, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 64, "pad_id": 256,
 "task": "classify", "n_classes": 2, "mixer": {"kind": "full"},
 "train": {"batch_size": 16, "steps": 400, "lr": 0.005, "warmup": 20, "log_every": 100, "eval_every": 0, "seed": 1}}`
	exampleLMConfig = `{"vocab_size": 256, "d_model": 32, "n_heads": 2, "n_layers": 2, "d_ff": 64, "max_len": 64,
 "causal": true, "task": "lm", "mixer": {"kind": "aft_simple"},
 "train": {"batch_size": 8, "steps": 600, "lr": 0.005, "warmup": 20, "log_every": 100, "eval_every": 0, "seed": 1}}`
	exampleText = "the quick brown fox jumps over the lazy dog. "
)

// TestExampleModels checks the committed example models, or with -update
// retrains and exports them.
func TestExampleModels(t *testing.T) {
	if *update {
		regenerate(t)
	}
	for _, c := range []struct{ dir, task, labels string }{
		{"testdata/spam", "classify", "ham spam"},
		{"testdata/fox", "lm", ""},
	} {
		m, err := tokenmix.Load(c.dir)
		if err != nil {
			t.Fatalf("%v (regenerate: go test . -run TestExampleModels -args -update)", err)
		}
		if cfg := m.Config(); cfg.Task != c.task || strings.Join(cfg.LabelNames, " ") != c.labels || cfg.Step == 0 {
			t.Errorf("%s: task %s, labels %q, step %d", c.dir, cfg.Task, cfg.LabelNames, cfg.Step)
		}
	}
}

func regenerate(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tokenmix")
	if out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "./cmd/tokenmix").CombinedOutput(); err != nil {
		t.Fatalf("building tokenmix: %v\n%s", err, out)
	}
	tm := func(args ...string) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("tokenmix %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if err := spamHam(filepath.Join(dir, "spam.jsonl"), 1000, 1); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "spam.json"), []byte(exampleSpamConfig), 0o644)
	os.WriteFile(filepath.Join(dir, "fox.json"), []byte(exampleLMConfig), 0o644)
	os.WriteFile(filepath.Join(dir, "fox.txt"), []byte(strings.Repeat(exampleText, 200)), 0o644)
	tm("train", "--config", "spam.json", "--data", "spam.jsonl", "--out", "spam")
	tm("train", "--config", "fox.json", "--data", "fox.txt", "--out", "fox")
	for _, name := range []string{"spam", "fox"} {
		dst, _ := filepath.Abs(filepath.Join("testdata", name))
		os.RemoveAll(dst)
		tm("export", "--run", name, "--out", dst, "--dtype", "bf16")
	}
}
