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
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tokenmix/tokenmix/internal/run"
	"github.com/tokenmix/tokenmix/internal/safetensors"
)

// pretrainCfg is a tiny bidirectional classifier with an mlm stage of 5
// updates before 6 of fine-tuning: the run's checkpoints are at steps
// 2, 4, 5 (the stage's end), 7, 9 and 11.
const pretrainCfg = `{"vocab_size": 16, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 12,
 "task": "classify", "n_classes": 3, "pad_id": 0, "mixer": {"kind": "full"},
 "train": {"batch_size": 4, "steps": 6, "lr": 0.01, "warmup": 2, "log_every": 2, "eval_every": 3, "eval_batches": 2,
  "checkpoint_every": 2, "keep_checkpoints": 10, "seed": 4,
  "pretrain": {"objective": "mlm", "steps": 5, "mask_id": 15, "mask_rate": 0.3, "lr": 0.02, "warmup": 1}}}`

// writePretrainData writes n labelled lines of 3–11 random tokens in 1–13
// (0 is pretrainCfg's pad_id, 15 its mask_id) to path, drawn from seed.
func writePretrainData(path string, n int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	var lines []string
	for range n {
		toks := make([]int, 3+rng.IntN(9))
		for i := range toks {
			toks[i] = 1 + rng.IntN(13)
		}
		b, _ := json.Marshal(map[string]any{"tokens": toks, "label": "abc"[toks[0]%3 : toks[0]%3+1]})
		lines = append(lines, string(b))
	}
	os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// TestTrainPretrainResume pretrains a tiny classifier with mlm, then
// fine-tunes it: straight; interrupted in the pretraining stage and again
// in fine-tuning, resumed each time; and "killed" in fine-tuning (the
// checkpoints after the pretraining stage's last removed, the metrics
// lines after it left, as a SIGKILL leaves them) and resumed, which
// repeats the switch. Every run ends with the same weight and optimizer
// bytes and the same metrics (timing aside); the metrics lines carry the
// stage and one head-swap line; the pretraining checkpoints hold
// pretrain_head and the fine-tuning ones head.
func TestTrainPretrainResume(t *testing.T) {
	dir := t.TempDir()
	jsonl, cfg := filepath.Join(dir, "d.jsonl"), filepath.Join(dir, "c.json")
	writePretrainData(jsonl, 40, 3)
	os.WriteFile(cfg, []byte(pretrainCfg), 0o644)
	quiet(t)
	args := func(out string) []string { return []string{"--config", cfg, "--data", jsonl, "--out", out} }
	resume := func(out string) []string { return []string{"--resume", "--data", jsonl, "--out", out} }

	a := filepath.Join(dir, "a")
	if err := runTrain(context.Background(), args(a)); err != nil {
		t.Fatal(err)
	}
	want := stageLines(t, a)
	checkStages(t, want)

	// Interrupted after 3 updates (pretraining), then after 3 more of
	// pretraining's 2 and fine-tuning's first 3 (run step 8).
	b := filepath.Join(dir, "b")
	if err := runTrain(&stopAfter{Context: context.Background(), n: 3}, args(b)); !errors.Is(err, context.Canceled) {
		t.Fatalf("run interrupted in pretraining: %v", err)
	}
	checkState(t, b, 3, run.StagePretrain, 0)
	if err := runTrain(&stopAfter{Context: context.Background(), n: 5}, resume(b)); !errors.Is(err, context.Canceled) {
		t.Fatalf("run interrupted in fine-tuning: %v", err)
	}
	checkState(t, b, 8, run.StageTrain, 5)
	if err := runTrain(context.Background(), resume(b)); err != nil {
		t.Fatal(err)
	}

	// Killed after step 8: only checkpoints up to the pretraining's last
	// survive, with every metrics line written.
	c := filepath.Join(dir, "c")
	if err := runTrain(&stopAfter{Context: context.Background(), n: 8}, args(c)); !errors.Is(err, context.Canceled) {
		t.Fatalf("run interrupted in fine-tuning: %v", err)
	}
	for _, s := range []int{7, 8} {
		if err := os.RemoveAll(filepath.Join(c, "ckpt", fmt.Sprintf("%08d", s))); err != nil {
			t.Fatal(err)
		}
	}
	checkState(t, c, 5, run.StagePretrain, 0)
	if err := runTrain(context.Background(), resume(c)); err != nil {
		t.Fatal(err)
	}

	for _, r := range []string{b, c} {
		for _, f := range []string{"weights.safetensors", "optim.safetensors"} {
			x, _ := os.ReadFile(filepath.Join(a, "ckpt", "00000011", f))
			y, _ := os.ReadFile(filepath.Join(r, "ckpt", "00000011", f))
			if len(x) == 0 || !bytes.Equal(x, y) {
				t.Errorf("%s: %s differs from the uninterrupted run's", filepath.Base(r), f)
			}
		}
		if got := stageLines(t, r); !slices.EqualFunc(got, want, func(x, y map[string]any) bool {
			return fmt.Sprint(x) == fmt.Sprint(y)
		}) {
			t.Errorf("%s: metrics lines\n%v\nwant (the uninterrupted run's)\n%v", filepath.Base(r), got, want)
		}
	}

	// The heads: pretraining checkpoints have pretrain_head, fine-tuning
	// ones head, never both.
	for _, c := range []struct {
		step       int
		has, hasNo string
		shape      []int
	}{{5, "pretrain_head.weight", "head.weight", []int{16, 16}}, {11, "head.weight", "pretrain_head.weight", []int{3, 16}}} {
		r, err := safetensors.OpenReader(filepath.Join(a, "ckpt", fmt.Sprintf("%08d", c.step), "weights.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		names := r.Names()
		_, shape, ok := r.Info(c.has)
		r.Close()
		if !ok || !slices.Equal(shape, c.shape) || slices.Contains(names, c.hasNo) {
			t.Errorf("checkpoint %d: %s %v (present %v), want %v, and no %s", c.step, c.has, shape, ok, c.shape, c.hasNo)
		}
	}
	checkState(t, a, 11, run.StageTrain, 5)
	// A pretraining checkpoint is refused by the readers, saying why; the
	// finished run loads.
	if _, err := run.LoadModel(a, 5); err == nil || !strings.Contains(err.Error(), "pretraining stage") {
		t.Errorf("loading the pretraining checkpoint: %v, want an error naming the pretraining stage", err)
	}
	if _, err := run.LoadModel(a, -1); err != nil {
		t.Errorf("loading the finished run: %v", err)
	}
}

// stageLines reads a run's metrics lines without their timing fields.
func stageLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	d, err := run.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := d.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		for _, k := range []string{"tokens_per_s", "elapsed_s", "train_s"} {
			delete(m, k)
		}
	}
	return ms
}

// checkStages checks the stages of pretrainCfg's metrics lines: pretraining
// lines at steps 2, 4, 5, the head swap at 5, fine-tuning lines at 7, 8
// (an evaluation), 9 and 11, each with "stage"; fine-tuning's learning
// rate restarts with its own warmup.
func checkStages(t *testing.T, ms []map[string]any) {
	t.Helper()
	type line struct {
		step  float64
		stage string
		swap  bool
	}
	var got []line
	for _, m := range ms {
		step, _ := m["step"].(float64)
		stage, _ := m["stage"].(string)
		_, swap := m["head_swap"]
		got = append(got, line{step, stage, swap})
	}
	want := []line{{2, "pretrain", false}, {4, "pretrain", false}, {5, "pretrain", false}, {5, "train", true},
		{7, "train", false}, {8, "train", false}, {9, "train", false}, {11, "train", false}}
	if !slices.Equal(got, want) {
		t.Fatalf("metrics lines (step, stage, head swap) %v, want %v", got, want)
	}
	swap := fmt.Sprint(ms[3]["head_swap"])
	if swap != "map[dropped:[pretrain_head.weight pretrain_head.bias] initialised:[head.weight head.bias]]" {
		t.Errorf("head swap line %s", swap)
	}
	for i, m := range ms {
		_, val := m["val_loss"]
		if want := i == 5 || i == 7; val != want {
			t.Errorf("line %d (step %v): validation %v, want %v (fine-tuning steps 3 and 6 only)", i, m["step"], val, want)
		}
	}
	// Each stage its own schedule: pretraining's 1-step warmup ends at
	// its peak 0.02, then the cosine over its 5 updates is half-way at its
	// update index 3; fine-tuning's 2-step warmup reaches 0.01 at index 1.
	if lr := ms[0]["lr"].(float64); lr != 0.02 {
		t.Errorf("pretraining lr at its step 2: %g, want 0.02", lr)
	}
	if lr := ms[1]["lr"].(float64); math.Abs(lr-0.01) > 1e-12 {
		t.Errorf("pretraining lr at its step 4: %g, want 0.01 (half-way down the cosine)", lr)
	}
	if lr := ms[4]["lr"].(float64); lr != 0.01 {
		t.Errorf("fine-tuning lr at its step 2: %g, want 0.01 (the end of its own warmup)", lr)
	}
}

// checkState checks the newest checkpoint's step, stage and stage_start.
func checkState(t *testing.T, path string, step int, stage string, start int) {
	t.Helper()
	d, err := run.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := d.Latest()
	if err != nil || latest != step {
		t.Fatalf("%s: newest checkpoint %d (%v), want %d", path, latest, err, step)
	}
	st, err := d.ReadState(latest)
	if err != nil || st.Stage != stage || st.StageStart != start {
		t.Errorf("%s: checkpoint %d: stage %q, stage_start %d (%v), want %q, %d", path, step, st.Stage, st.StageStart, err, stage, start)
	}
}

// TestTrainPretrainMaskInData: data that uses train.pretrain.mask_id is
// refused, naming the line; so is a --task whose vocabulary holds it.
func TestTrainPretrainMaskInData(t *testing.T) {
	dir := t.TempDir()
	jsonl, cfg := filepath.Join(dir, "d.jsonl"), filepath.Join(dir, "c.json")
	os.WriteFile(jsonl, []byte("{\"tokens\": [1, 2], \"label\": \"a\"}\n{\"tokens\": [3, 15, 4], \"label\": \"b\"}\n{\"tokens\": [5], \"label\": \"c\"}\n"), 0o644)
	os.WriteFile(cfg, []byte(pretrainCfg), 0o644)
	quiet(t)
	err := runTrain(context.Background(), []string{"--config", cfg, "--data", jsonl, "--out", filepath.Join(dir, "r")})
	if err == nil || !strings.Contains(err.Error(), "d.jsonl:2: uses token 15, the config's train.pretrain.mask_id") {
		t.Errorf("data with the mask token: %v", err)
	}
	os.WriteFile(cfg, []byte(strings.Replace(pretrainCfg, `"n_classes": 3`, `"n_classes": 10`, 1)), 0o644)
	task := `{"name": "listops", "train": 8, "val": 2, "test": 2, "min_len": 5, "max_len": 12}`
	err = runTrain(context.Background(), []string{"--config", cfg, "--task", task, "--out", filepath.Join(dir, "r2")})
	if err == nil || !strings.Contains(err.Error(), "train.pretrain.mask_id 15 is in the task's vocabulary [0, 16)") {
		t.Errorf("--task: %v", err)
	}
}

// TestCLIPretrainKill kills `tokenmix train` (the binary, SIGKILL) once in
// the pretraining stage and once in fine-tuning, after periodic
// checkpoints of that stage, and resumes each: the weights and optimizer
// state end byte-identical to an uninterrupted run's, and the metrics log
// every step once, each line with its stage, with one head-swap line.
func TestCLIPretrainKill(t *testing.T) {
	dir := t.TempDir()
	writePretrainData(filepath.Join(dir, "d.jsonl"), 60, 9)
	cfg := strings.NewReplacer(`"steps": 6,`, `"steps": 600,`, `"log_every": 2, "eval_every": 3,`, `"log_every": 1, "eval_every": 0,`,
		`"checkpoint_every": 2, "keep_checkpoints": 10,`, `"checkpoint_every": 100, "keep_checkpoints": 2,`,
		`"steps": 5, "mask_id"`, `"steps": 600, "mask_id"`).Replace(pretrainCfg)
	os.WriteFile(filepath.Join(dir, "c.json"), []byte(cfg), 0o644)
	final := func(out, name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, out, "ckpt", "00001200", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if r := cli(t, dir, "train", "--config", "c.json", "--data", "d.jsonl", "--out", "ref"); r.code != 0 {
		t.Fatalf("uninterrupted train: exit %d\n%s", r.code, r.stderr)
	}
	for _, c := range []struct {
		name  string
		after int // SIGKILL once this many metrics lines are written
		stage string
	}{{"pretrain", 250, run.StagePretrain}, {"train", 900, run.StageTrain}} {
		code, _, _ := signalAfter(t, dir, filepath.Join(c.name, "metrics.jsonl"), c.after, syscall.SIGKILL,
			"train", "--config", "c.json", "--data", "d.jsonl", "--out", c.name)
		if code != -1 {
			t.Fatalf("%s: the run ended (exit %d) before the kill", c.name, code)
		}
		d, err := run.Open(filepath.Join(dir, c.name))
		if err != nil {
			t.Fatal(err)
		}
		latest, _ := d.Latest()
		st, err := d.ReadState(latest)
		if err != nil || st.Stage != c.stage || latest == 1200 {
			t.Fatalf("%s: killed with checkpoint %d in stage %q (%v), want one in stage %q before the end", c.name, latest, st.Stage, err, c.stage)
		}
		t.Logf("%s: killed after checkpoint %d", c.name, latest)
		if r := cli(t, dir, "train", "--resume", "--data", "d.jsonl", "--out", c.name); r.code != 0 {
			t.Fatalf("%s: resume: exit %d\n%s", c.name, r.code, r.stderr)
		}
		for _, f := range []string{"weights.safetensors", "optim.safetensors"} {
			if !bytes.Equal(final(c.name, f), final("ref", f)) {
				t.Errorf("%s: resumed %s differs from the uninterrupted run's", c.name, f)
			}
		}
		got, want := stageLines(t, filepath.Join(dir, c.name)), stageLines(t, filepath.Join(dir, "ref"))
		if !slices.EqualFunc(got, want, func(x, y map[string]any) bool { return fmt.Sprint(x) == fmt.Sprint(y) }) {
			t.Errorf("%s: the resumed run's metrics lines differ from the uninterrupted run's", c.name)
		}
		swaps := 0
		for _, m := range got {
			if _, ok := m["head_swap"]; ok {
				swaps++
			}
		}
		if swaps != 1 || len(got) != 1201 {
			t.Errorf("%s: %d metrics lines with %d head swaps, want 1200 steps and one swap", c.name, len(got), swaps)
		}
	}
}
