package arena

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/configs"
	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/internal/run"
	"github.com/tokenmix/tokenmix/internal/strict"
	"github.com/tokenmix/tokenmix/internal/train"
	"github.com/tokenmix/tokenmix/internal/version"
	"github.com/tokenmix/tokenmix/mixer/registry"
	"github.com/tokenmix/tokenmix/tokenizer"
)

// twoMixers returns two registered kinds that run bidirectionally (the
// arena test needs two; it skips if fewer are registered).
func twoMixers(t *testing.T) []string {
	var out []string
	for _, k := range registry.All() {
		if k.Bidirectional && len(out) < 2 {
			out = append(out, k.Name)
		}
	}
	if len(out) < 2 {
		t.Skipf("fewer than two bidirectional mixers registered (%v)", out)
	}
	return out
}

func tinyPreset(t *testing.T, mixers []string, budget string) *Preset {
	t.Helper()
	if mixers == nil {
		mixers = []string{} // every registered kind; null is an error
	}
	mj, _ := strict.Marshal(mixers)
	p, err := ParsePreset([]byte(`{
		"task": {"name": "recall", "len": 16, "pairs": 3, "keys": 8, "values": 4, "train": 200, "val": 16, "test": 32},
		"model": {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32},
		"train": {"batch_size": 4, "lr": 0.003, "warmup": 2, "seed": 3, "log_every": 2, "eval_every": 4, "eval_batches": 2, "checkpoint_every": 4},
		"budget": "` + budget + `", "bucket": 2,
		"mixers": ` + string(mj) + `
	}`))
	if err != nil {
		t.Fatal(err)
	}
	// The default preset's per-kind options, scaled down.
	def, err := LoadPreset("recall")
	if err != nil {
		t.Fatal(err)
	}
	p.MixerOptions = def.MixerOptions
	for _, o := range p.MixerOptions {
		for k, v := range map[string]int{"bucket_size": 4, "window": 3, "k": 4, "summary": 2} {
			if _, ok := o[k]; ok {
				o[k] = v
			}
		}
	}
	return p
}

func TestArenaEndToEnd(t *testing.T) {
	mixers := twoMixers(t)
	dir := t.TempDir()
	p := tinyPreset(t, mixers, "8")
	var out bytes.Buffer
	// An unknown kind is refused before anything is written.
	bad := tinyPreset(t, mixers, "8")
	bad.Mixers = append(bad.Mixers, "no_such_kind")
	badDir := filepath.Join(dir, "bad")
	if _, err := Run(context.Background(), Options{Preset: bad, Out: badDir, Stdout: &out}); err == nil || !strings.Contains(err.Error(), "no_such_kind") {
		t.Errorf("unknown kind: err %v", err)
	}
	if _, err := os.Stat(badDir); !os.IsNotExist(err) {
		t.Errorf("unknown kind: %s was created (%v)", badDir, err)
	}
	f, err := Run(context.Background(), Options{Preset: p, Out: dir, Stdout: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(f.Results) != 2 {
		t.Fatalf("%d results", len(f.Results))
	}
	for i, r := range f.Results {
		if r.Mixer != mixers[i] || r.Status != StatusDone || r.Steps != 8 || r.Params == 0 ||
			r.TokensPerSec <= 0 || r.PlannedBytes <= 0 || r.Test < 0 || r.Test > 1 || len(r.Curve) != 4 {
			t.Errorf("result %d: %+v", i, r)
		}
	}
	for _, name := range []string{"results.json", "results.csv", "results.md", "arena.json", PlotTrainLoss, PlotValLoss, PlotScatter} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	var saved File
	if err := readJSON(filepath.Join(dir, "results.json"), &saved); err != nil || saved.Version != version.Get().String() {
		t.Errorf("results.json: version %q, want %q (%v)", saved.Version, version.Get().String(), err)
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "results.csv"))
	if n := strings.Count(string(csv), "\n"); n != 3 {
		t.Errorf("results.csv has %d lines, want header + 2", n)
	}
	if !strings.Contains(out.String(), "| "+mixers[0]+" |") {
		t.Errorf("no table row for %s in:\n%s", mixers[0], out.String())
	}

	// Running again resumes: nothing is retrained and the numbers agree.
	out.Reset()
	g, err := Run(context.Background(), Options{Preset: p, Out: dir, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		a, b := f.Results[i], g.Results[i]
		if a.Test != b.Test || a.Steps != b.Steps || !strings.Contains(b.Note, "resumed") {
			t.Errorf("resume %s: %v/%d then %v/%d (%q)", a.Mixer, a.Test, a.Steps, b.Test, b.Steps, b.Note)
		}
	}
	// A different preset in the same directory is refused.
	q := tinyPreset(t, mixers, "9")
	if _, err := Run(context.Background(), Options{Preset: q, Out: dir, Stdout: &out}); err == nil {
		t.Error("different preset in the same directory: no error")
	}
}

// TestArenaResumeCheckpoint interrupts a run after its first checkpoint and
// checks that resuming gives exactly the result of an uninterrupted run
// (checkpoint_every 4, keep_checkpoints 2: checkpoints 4 and 5 remain).
func TestArenaResumeCheckpoint(t *testing.T) {
	kind := twoMixers(t)[0]
	p := tinyPreset(t, []string{kind}, "8")
	task, err := p.BuildTask()
	if err != nil {
		t.Fatal(err)
	}
	mk := func(dir string, prog train.Progress) *job {
		return &job{kind: kind, task: task, info: task.Info(), preset: p, budget: Budget{Steps: 8}, dir: dir, prog: prog}
	}
	full, err := mk(t.TempDir(), train.NewProgress(nil)).train(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	j := mk(dir, &cancelAt{Progress: train.NewProgress(nil), step: 5, cancel: cancel})
	if _, err := j.train(ctx); err != ErrInterrupted {
		t.Fatalf("interrupted run: err = %v", err)
	}
	d, err := run.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if steps, err := d.Checkpoints(); err != nil || !slices.Equal(steps, []int{4, 5}) {
		t.Fatalf("checkpoints after the interruption: %v, %v", steps, err)
	}
	res, err := mk(dir, train.NewProgress(nil)).train(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Test != full.Test || res.TestLoss != full.TestLoss || res.Steps != 8 || len(res.Curve) != len(full.Curve) {
		t.Errorf("resumed: test %v loss %v steps %d; uninterrupted: %v %v %d",
			res.Test, res.TestLoss, res.Steps, full.Test, full.TestLoss, full.Steps)
	}
}

// cancelAt cancels the context once step reaches its step.
type cancelAt struct {
	train.Progress
	step   int
	cancel func()
}

func (c *cancelAt) Update(step int, _, _ float64) {
	if step >= c.step {
		c.cancel()
	}
}

func TestDurationBudget(t *testing.T) {
	kind := twoMixers(t)[0]
	p := tinyPreset(t, []string{kind}, "300ms")
	task, _ := p.BuildTask()
	j := &job{kind: kind, task: task, info: task.Info(), preset: p, budget: Budget{Duration: 3e8}, dir: t.TempDir(), prog: train.NewProgress(nil)}
	res, err := j.train(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps < 10 || res.PlannedSteps < res.Steps || res.TrainSeconds <= 0 {
		t.Errorf("steps %d of %d planned in %.2fs", res.Steps, res.PlannedSteps, res.TrainSeconds)
	}
}

func TestPresets(t *testing.T) {
	for _, name := range configs.Names() {
		p, err := LoadPreset(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p.Description == "" || p.Time == "" {
			t.Errorf("%s: no description or no time", name)
		}
		// A step budget for every mixer: the figures must not depend on the
		// machine's speed. Each mixer the preset names has its own count.
		// A sweep's lengths each have theirs.
		qs, err := p.LenPresets()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, q := range qs {
			if b, err := ParseBudget(q.Budget); err != nil || b.Steps == 0 || q.TotalBudget != "" {
				t.Errorf("%s: budget %q (total %q) is not a step count", name, q.Budget, q.TotalBudget)
			}
			for _, k := range p.Mixers {
				if q.MixerSteps[k] == 0 {
					t.Errorf("%s: mixer %s has no mixer_steps entry", name, k)
				}
			}
		}
		// Every registered kind must accept the preset's options for it
		// (the model config is what the arena would build).
		info := data.Info{Name: "x", Mode: data.Classify, Vocab: 16, Classes: 10, PadID: 0, MaxLen: 64}
		if _, err := p.ModelJSON("full", info, false, 10); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := LoadPreset("no-such-preset"); !errors.Is(err, ErrUnknownPreset) || !strings.Contains(err.Error(), "recall") {
		t.Errorf("unknown preset: %v", err)
	}
}

func TestParsePresetErrors(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{"task": {"name": "recall"}, "model": {}, "budget": "10", "bogus": 1}`, "bogus"},
		{`{"task": {"name": "recall"}, "model": {}}`, "required"},
		{`{"task": {"name": "recall"}, "model": {}, "budget": "-3"}`, "budget"},
		{`{"task": {"name": "recall"}, "model": {}, "budget": "ten"}`, "budget"},
		{`{"task": {}, "model": {}, "budget": "10"}`, "task.name"},
		{`{"task": {"name": "recall"}, "model": {}, "budget": "10", "total_budget": "x"}`, "total_budget"},
		{`{"task": {"name": "recall"}, "model": {}, "budget": "10", "time": "soon"}`, "time"},
		{`{"task": {"name": "recall"}, "model": {}, "budget": "10", "mixers": ["full", "nosuch"]}`, "nosuch"},
		{`{"task": {"name": "recall"}, "model": {}, "budget": "10", "mixer_steps": {"nosuch": 3}}`, `mixer_steps: mixer.kind: unknown kind "nosuch"`},
		{`{"task": {"name": "recall"}, "model": {}, "budget": "10", "mixer_steps": {"full": 0}}`, "mixer_steps.full: want ≥ 1 step, got 0"},
		{`{"task": {"name": "recall"}, "model": {}, "budget": "10", "seeds": -1}`, "seeds: want 0–100, got -1"},
		{`{"task": {"name": "recall"}, "model": {}, "budget": "10", "seeds": 101}`, "seeds: want 0–100, got 101"},
		{`{"task": {"name": "recall"}, "model": {}, "budget": "10", "train": {"seed": -2}}`, "train.seed: want a non-negative integer, got -2"},
		{`{"task": {"name": "recall"}, "model": {"vocab_size": 3}, "budget": "10"}`, "model.vocab_size: set by the arena from the task; remove it"},
		{`{"task": {"name": "recall"}, "model": {}, "budget": "10", "train": {"pretrain": {"objective": "mlm", "steps": 3}}}`, "train.pretrain.objective: set by the arena"},
		{`{"task": {"name": "recall"}, "model": {}, "budget": "10", "train": {"pretrain": {"steps": 3, "mask_id": 1}}}`, "train.pretrain.mask_id: set by the arena"},
		{`{"task": {"name": "recall"}, "model": {}, "budget": "10", "train": {"pretrain": {"lr": 0.1}}}`, "train.pretrain.steps: required"},
		{`{"task": {"name": "recall"}, "model": {}, "budget": "10", "train": {"pretrain": {"steps": 3, "rate": 0.1}}}`, "train.pretrain.rate: unknown key"},
		{`{"task": {"name": "recall"}, "model": {}, "budget": "10", "train": {"pretrain": null}}`, "train.pretrain"},
	} {
		_, err := ParsePreset([]byte(c.json))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.json, err, c.want)
		}
	}
	p, _ := ParsePreset([]byte(`{"task": {"name": "recall", "lenn": 3}, "model": {}, "budget": "10"}`))
	if _, err := p.BuildTask(); err == nil || !strings.Contains(err.Error(), "lenn") {
		t.Errorf("unknown task key: %v", err)
	}
	p, _ = ParsePreset([]byte(`{"task": {"name": "recall"}, "model": {}, "budget": "10"}`))
	if err := p.SetLen(64); err != nil || string(p.Task.Keys["len"]) != "64" {
		t.Errorf("SetLen: %v %s", err, p.Task.Keys["len"])
	}
	p.SetTask("fmnist", nil)
	if err := p.SetLen(64); err == nil {
		t.Error("SetLen on fmnist: no error")
	}
}

func TestPlanRuns(t *testing.T) {
	p := tinyPreset(t, nil, "10m")
	p.TotalBudget = "1m"
	runs, err := planRuns(p, data.Info{Name: "gosrc", Mode: data.LM, Causal: true, PadID: -1}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range runs {
		k, _ := registry.Lookup(r.kind)
		if !k.Causal && r.skip == "" {
			t.Errorf("%s is not causal but would run on an LM task", r.kind)
		}
		if r.skip == "" {
			n++
		}
	}
	if n > 0 && runs[0].budget.Duration > 60e9/1 {
		t.Errorf("total budget not applied: %v", runs[0].budget)
	}

	// Step budgets per kind; the other kinds get budget; each kind's seeds
	// are next to each other; total_budget leaves step budgets alone.
	p = tinyPreset(t, []string{"full", "fnet", "lsh"}, "30s")
	p.MixerSteps = map[string]int{"full": 7, "fnet": 9}
	p.TotalBudget, p.Seeds = "20s", 2
	runs, err = planRuns(p, data.Info{Name: "gosrc", Mode: data.LM, Causal: true, PadID: -1}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, fmt.Sprintf("%s/%s/%v", r.name(), r.budget, r.skip != ""))
	}
	want := []string{"full/7 steps/false", "full.s1/7 steps/false", "fnet/9 steps/true", "fnet.s1/9 steps/true", "lsh/10s/false", "lsh.s1/10s/false"}
	if !slices.Equal(got, want) {
		t.Errorf("runs %v, want %v", got, want)
	}
	if s := budgetLine(runs); s != "budgets of steps and of time" {
		t.Errorf("budget line %q", s)
	}
	if s := budgetLine(runs[:4]); s != "budgets 7–9 steps" {
		t.Errorf("budget line %q", s)
	}
	if err := p.SetBudget("5m"); err != nil || p.MixerSteps != nil || p.TotalBudget != "" || p.Budget != "5m" {
		t.Errorf("SetBudget: %v, %+v", err, p)
	}
}

// TestPresetsAcceptedByEveryMixer builds the model config of every preset
// for every registered mixer that the arena would run, so a preset whose
// options a mixer rejects fails here rather than after an hour of training.
// TestSetPrecision: --precision reaches every mixer's model config, keeps
// the preset's other model keys, and a bad value is an error naming it.
func TestSetPrecision(t *testing.T) {
	p, err := LoadPreset("recall")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetPrecision("bf16"); err != nil {
		t.Fatal(err)
	}
	info := data.Info{Name: "x", Mode: data.Classify, Vocab: 16, Classes: 10, PadID: 0, MaxLen: 64}
	js, err := p.ModelJSON("full", info, false, 10)
	if err != nil {
		t.Fatal(err)
	}
	c, err := model.ParseConfig(js)
	if err != nil || c.Precision != "bf16" || c.DModel != 64 {
		t.Errorf("model config after SetPrecision: precision %q, d_model %d (%v)", c.Precision, c.DModel, err)
	}
	if err := p.SetPrecision("fp8"); err == nil || !strings.Contains(err.Error(), `"fp8"`) {
		t.Errorf("SetPrecision(fp8): %v", err)
	}
}

func TestPresetsAcceptedByEveryMixer(t *testing.T) {
	infos := map[string]data.Info{
		"recall": {Name: "recall", Mode: data.LM, Vocab: 300, PadID: -1, MaxLen: 128, Metric: data.Accuracy},
		"fmnist": (&data.FMNIST{}).Info(),
		"gosrc":  {Name: "gosrc", Mode: data.LM, Vocab: 256, PadID: -1, MaxLen: 256, Causal: true, Metric: data.BitsPerByte},
	}
	infos["pathfinder"] = data.Info{Name: "pathfinder", Mode: data.Classify, Vocab: 256, Classes: 2, PadID: -1, MaxLen: 1024, Metric: data.Accuracy}
	infos["listops"] = data.Info{Name: "listops", Mode: data.Classify, Vocab: data.ListOpsVocab, Classes: 10, PadID: 0, MaxLen: 1999, Metric: data.Accuracy}
	for _, name := range configs.Names() {
		p, err := LoadPreset(name)
		if err != nil {
			t.Fatal(err)
		}
		info, ok := infos[p.TaskName()]
		if !ok {
			t.Fatalf("%s: no test info for task %s", name, p.TaskName())
		}
		qs, err := p.LenPresets()
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range qs {
			if p.Sweep() {
				info.MaxLen = p.Lens[i].Len
			}
			runs, err := planRuns(q, info, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range runs {
				if r.skip != "" {
					continue
				}
				b, err := q.ModelJSON(r.kind, info, r.causal, 10)
				if err == nil {
					_, err = model.ParseConfig(b)
				}
				if err != nil {
					t.Errorf("preset %s at T=%d, mixer %s: %v", name, info.MaxLen, r.kind, err)
				}
			}
		}
	}
}

// TestArenaListOps runs a classification task of variable length end to end:
// padding, bucketing and the ListOps cache shared with workers.
func TestArenaListOps(t *testing.T) {
	mixers := twoMixers(t)
	p := tinyPreset(t, mixers, "4")
	if err := p.SetTask("listops", map[string]any{"train": 40, "val": 8, "test": 8, "min_len": 5, "max_len": 40}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out bytes.Buffer
	f, err := Run(context.Background(), Options{Preset: p, Out: dir, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Results {
		if r.Status != StatusDone || r.Steps != 4 || r.Metric != data.Accuracy {
			t.Errorf("%+v", r)
		}
	}
	// The lookup-table references are in the results and the table.
	if len(f.Baselines) != 3 || !strings.Contains(out.String(), "| root operator |") {
		t.Errorf("baselines %+v; table:\n%s", f.Baselines, out.String())
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "listops-*.gob")); len(m) != 1 {
		t.Errorf("listops cache files: %v", m)
	}
}

// TestArenaPretrain runs a preset with a pretraining stage: every mixer
// pretrains (mlm, bidirectional) for 3 updates, then fine-tunes for 4;
// results.json and results.csv report both counts, the runs' configs have
// the mask token after the task's vocabulary, and the curves hold the
// fine-tuning lines only. A causal run's config pretrains with lm.
func TestArenaPretrain(t *testing.T) {
	mixers := twoMixers(t)
	p := tinyPreset(t, mixers, "4")
	if err := p.SetTask("listops", map[string]any{"train": 40, "val": 8, "test": 8, "min_len": 5, "max_len": 40}); err != nil {
		t.Fatal(err)
	}
	lr := 0.01
	p.Train.Pretrain = &PretrainSection{Steps: 3, LR: &lr}
	dir := t.TempDir()
	var out bytes.Buffer
	f, err := Run(context.Background(), Options{Preset: p, Out: dir, Stdout: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, r := range f.Results {
		if r.Status != StatusDone || r.Steps != 4 || r.PretrainSteps != 3 || len(r.Curve) != 2 || r.Curve[0].Step != 5 {
			t.Errorf("%s: status %s, steps %d, pretrain_steps %d, curve %+v", r.Mixer, r.Status, r.Steps, r.PretrainSteps, r.Curve)
		}
	}
	var saved File
	if err := readJSON(filepath.Join(dir, "results.json"), &saved); err != nil || saved.Results[0].PretrainSteps != 3 {
		t.Errorf("results.json: %v, pretrain_steps %+v", err, saved.Results)
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "results.csv"))
	rows := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if !strings.HasSuffix(rows[0], ",test_stderr,pretrain_steps") || !strings.HasSuffix(rows[1], ",3") {
		t.Errorf("results.csv:\n%s", csv)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*", run.ConfigName))
	if len(runs) != 2 {
		t.Fatalf("run configs %v", runs)
	}
	c, err := model.LoadConfig(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	pc := c.Train.Pretrain
	if c.VocabSize != data.ListOpsVocab+1 || pc == nil || pc.Objective != "mlm" || pc.MaskID != data.ListOpsVocab || pc.Steps != 3 || pc.LR != 0.01 {
		t.Errorf("run config: vocab_size %d, pretrain %+v", c.VocabSize, pc)
	}
	d, err := run.Open(filepath.Dir(runs[0]))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := d.Metrics()
	if err != nil || len(ms) == 0 || ms[0]["stage"] != "pretrain" || ms[len(ms)-1]["stage"] != "train" {
		t.Errorf("metrics lines %v (%v)", ms, err)
	}
	task, err := p.BuildTask()
	if err != nil {
		t.Fatal(err)
	}
	c, err = p.ModelConfig(mixers[0], task.Info(), true, 4)
	if err != nil {
		t.Fatal(err)
	}
	if pc := c.Train.Pretrain; c.VocabSize != data.ListOpsVocab || pc.Objective != "lm" {
		t.Errorf("causal run: vocab_size %d, pretrain %+v", c.VocabSize, pc)
	}
}

// TestArenaCurriculum: a preset's train.curriculum reaches every run's
// config and batches (the metrics lines' tokens follow its stages), its
// updates count in the run's steps, and a sweep length not above its last
// len fails that run with an error naming the key, while the others run.
func TestArenaCurriculum(t *testing.T) {
	p := tinyPreset(t, []string{"full", "strided"}, "6")
	b := 8
	p.Train.Curriculum = []CurriculumSection{{Len: 10, Steps: 3, BatchSize: &b}}
	if err := p.SetLens([]int{10, 16}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out bytes.Buffer
	f, err := Run(context.Background(), Options{Preset: p, Out: dir, Stdout: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(f.Results) != 4 {
		t.Fatalf("%d results", len(f.Results))
	}
	for _, r := range f.Results {
		switch {
		case r.Len == 10 && (r.Status != StatusFailed || !strings.Contains(r.Note, "train.curriculum[0].len: 10 is not below the training length 10")):
			t.Errorf("%s T=10: status %s, note %q", r.Mixer, r.Status, r.Note)
		case r.Len == 16 && (r.Status != StatusDone || r.Steps != 6):
			t.Errorf("%s T=16: status %s, %d steps (%s)", r.Mixer, r.Status, r.Steps, r.Note)
		}
	}
	d, err := run.Open(filepath.Join(dir, "runs", runName("full", 0, 16)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := model.LoadConfig(filepath.Join(d.Path, run.ConfigName))
	if err != nil || !slices.Equal(c.Train.Curriculum, []model.CurriculumStage{{Len: 10, Steps: 3, BatchSize: 8}}) {
		t.Fatalf("run config: %+v, %v", c, err)
	}
	ms, err := d.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	// log_every 2: steps 2, 4 and 6; 3 batches of 8×10, then 4×16.
	want := map[float64]float64{2: 160, 4: 240 + 64, 6: 240 + 3*64}
	for _, m := range ms {
		if w, ok := want[m["step"].(float64)]; ok && m["tokens"].(float64) != w {
			t.Errorf("step %v: %v tokens, want %v", m["step"], m["tokens"], w)
		}
	}
}

// workerEnv makes this test binary act as `tokenmix arena --worker OUT
// KIND` (see TestMain), so tests can run the arena's worker processes.
const workerEnv = "TOKENMIX_ARENA_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		args := os.Args[len(os.Args)-2:]
		if err := Worker(context.Background(), args[0], args[1], os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestArenaJobs runs two mixers with two seeds each, two runs at once in
// worker processes, and checks that every run finishes with its full
// budget and its seed, in the preset's order, with the threads split
// between them.
func TestArenaJobs(t *testing.T) {
	mixers := twoMixers(t)
	dir := t.TempDir()
	p := tinyPreset(t, mixers, "8")
	p.Jobs, p.Seeds = 2, 2
	t.Setenv(workerEnv, "1")
	var out bytes.Buffer
	f, err := Run(context.Background(), Options{Preset: p, Out: dir, Stdout: &out, Stderr: io.Discard,
		Worker: []string{os.Args[0], "-test.run=^$"}})
	os.Unsetenv(workerEnv)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(f.Results) != 4 {
		t.Fatalf("%d results:\n%s", len(f.Results), out.String())
	}
	want := max(parallel.Threads()/2, 1)
	for i, r := range f.Results {
		if r.Mixer != mixers[i/2] || r.Seed != uint64(3+i%2) || r.Status != StatusDone || r.Steps != 8 || r.Threads != want || r.PeakBytes <= 0 {
			t.Errorf("result %d: %+v", i, r)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", mixers[0]+".s1", "result.json")); err != nil {
		t.Errorf("second seed's run directory: %v", err)
	}
	if !strings.Contains(f.Machine, "2 jobs") {
		t.Errorf("machine %q does not record the jobs", f.Machine)
	}
}

// TestArenaGoSrcTokenizer runs gosrc through a tokenizer: each run keeps
// its tokenizer.json, its config names it, and the test metric is bits
// per byte over the tokens' bytes.
func TestArenaGoSrcTokenizer(t *testing.T) {
	root := t.TempDir()
	var corpus strings.Builder
	for i := range 30 {
		dir := filepath.Join(root, fmt.Sprintf("pkg%d", i))
		os.MkdirAll(dir, 0o755)
		src := fmt.Sprintf("package pkg%d\n\n// F returns the answer.\nfunc F() int {\n\treturn %d\n}\n", i, i)
		os.WriteFile(filepath.Join(dir, "a.go"), []byte(src), 0o644)
		corpus.WriteString(src)
	}
	tk, err := tokenizer.Train([]string{corpus.String()}, tokenizer.TrainOptions{VocabSize: 300})
	if err != nil {
		t.Fatal(err)
	}
	tpath := filepath.Join(t.TempDir(), "tok.json")
	f, _ := os.Create(tpath)
	tk.WriteJSON(f)
	f.Close()
	rj, _ := strict.Marshal(root)
	tj, _ := strict.Marshal(tpath)
	p, err := ParsePreset([]byte(`{
		"task": {"name": "gosrc", "root": ` + string(rj) + `, "tokenizer": ` + string(tj) + `, "seq_len": 8, "val_percent": 20, "test_percent": 20},
		"model": {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32},
		"train": {"batch_size": 4, "lr": 0.003, "seed": 3, "log_every": 2, "eval_every": 2, "eval_batches": 2, "checkpoint_every": 4},
		"budget": "4", "mixers": ["full"]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Preset: p, Out: dir, Stdout: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	r := res.Results[0]
	if r.Status != StatusDone || !(r.Test > 0 && r.Test < 20) {
		t.Fatalf("result %+v", r)
	}
	st, err := run.Read(filepath.Join(dir, "runs", runName("full", 0, 0)), -1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Tokenizer == nil || st.Tokenizer.VocabSize() != 300 || !strings.Contains(string(st.Config), `"tokenizer": "tokenizer.json"`) {
		t.Errorf("the run's tokenizer: %v, config %s", st.Tokenizer, st.Config)
	}
}
