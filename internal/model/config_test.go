package model

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

const baseCfg = `"vocab_size": 11, "d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 12, "max_len": 8`

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct{ js, want string }{
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": "cummean"}, "colour": 1}`, "colour: unknown key"},
		{`{"vocab_size": 11, "d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 12, "task": "lm", "mixer": {"kind": "cummean"}}`, "max_len: required"},
		{`{` + strings.Replace(baseCfg, `"d_model": 8`, `"d_model": "8"`, 1) + `, "task": "lm", "mixer": {"kind": "cummean"}}`, `d_model: want an integer, got "8"`},
		{`{` + strings.Replace(baseCfg, `"d_model": 8`, `"d_model": 8.5`, 1) + `, "task": "lm", "mixer": {"kind": "cummean"}}`, `d_model: want an integer`},
		{`{` + strings.Replace(baseCfg, `"n_heads": 2`, `"n_heads": 3`, 1) + `, "task": "lm", "mixer": {"kind": "cummean"}}`, "n_heads: must divide d_model"},
		{`{` + strings.Replace(baseCfg, `"n_layers": 2`, `"n_layers": 0`, 1) + `, "task": "lm", "mixer": {"kind": "cummean"}}`, "n_layers: must be ≥ 1"},
		{`{` + baseCfg + `, "mixer": {"kind": "cummean"}}`, "task: required"},
		{`{` + baseCfg + `, "task": "mlm", "mixer": {"kind": "cummean"}}`, `task: must be "lm", "classify", "tag" or "embed"`},
		{`{` + baseCfg + `, "task": "classify", "mixer": {"kind": "cummean"}}`, "n_classes: must be ≥ 2"},
		{`{` + baseCfg + `, "task": "tag", "mixer": {"kind": "cummean"}}`, `n_classes: must be ≥ 2 for task "tag"`},
		{`{` + baseCfg + `, "task": "tag", "n_classes": 3, "pool": "mean", "mixer": {"kind": "cummean"}}`, `pool: only for task "classify"`},
		{`{` + baseCfg + `, "task": "embed", "temperature": 0, "n_classes": 3, "mixer": {"kind": "cummean"}}`, `n_classes: not for task "embed"`},
		{`{` + baseCfg + `, "task": "embed", "temperature": -1, "mixer": {"kind": "cummean"}}`, `temperature: must be in (0, 10]`},
		{`{` + baseCfg + `, "task": "lm", "temperature": 1, "mixer": {"kind": "cummean"}}`, `temperature: only for task "embed"`},
		{`{` + baseCfg + `, "task": "lm", "n_classes": 3, "mixer": {"kind": "cummean"}}`, "n_classes: only for task"},
		{`{` + baseCfg + `, "task": "lm", "pad_id": 11, "mixer": {"kind": "cummean"}}`, "pad_id: must be in [0, vocab_size=11)"},
		{`{` + baseCfg + `, "task": "lm", "tokenizer": "t.tiktoken", "tokenizer_pattern": "lines", "mixer": {"kind": "cummean"}}`, `tokenizer_pattern: unknown pattern "lines" (want gpt2, cl100k, o200k or blocks)`},
		{`{` + baseCfg + `, "task": "lm", "pool": "first", "mixer": {"kind": "cummean"}}`, "pool: only for task"},
		{`{` + baseCfg + `, "task": "classify", "n_classes": 3, "pool": "max", "mixer": {"kind": "cummean"}}`, `pool: must be "mean" or "first"`},
		{`{` + baseCfg + `, "task": "lm", "causal": "yes", "mixer": {"kind": "cummean"}}`, "causal: want true or false"},
		{`{` + baseCfg + `, "task": "lm", "ff_chunks": 0, "mixer": {"kind": "cummean"}}`, "ff_chunks: must be ≥ 1"},
		{`{` + baseCfg + `, "task": "lm", "reversible": true, "checkpoint": true, "mixer": {"kind": "cummean"}}`, "checkpoint: not with reversible"},
		{`{` + baseCfg + `, "task": "lm", "dropout": 1, "mixer": {"kind": "cummean"}}`, "dropout: must be in [0, 1), got 1"},
		{`{` + baseCfg + `, "task": "lm", "dropout": -0.1, "mixer": {"kind": "cummean"}}`, "dropout: must be in [0, 1), got -0.1"},
		{`{` + baseCfg + `, "task": "lm", "dropout": "0.1", "mixer": {"kind": "cummean"}}`, `dropout: want a number, got "0.1"`},
		{`{` + baseCfg + `, "task": "lm"}`, "mixer: required"},
		{`{` + baseCfg + `, "task": "lm", "mixer": "full"}`, "mixer: want a JSON object"},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"window": 3}}`, `mixer.kind: required`},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": 3}}`, `mixer.kind: want a string, got 3`},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": "cummean", "strict": null}}`, `mixer.strict: want true or false, got null`},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": "nonesuch"}}`, `mixer.kind: unknown kind "nonesuch"`},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": "cummean", "window": 3}}`, `mixer.window: unknown key (kind cummean`},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": "cummean", "strict": 3}}`, `mixer.strict: want true or false`},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": "causalonly"}}`, `causal: mixer kind "causalonly" is causal-only`},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"lr": -1}}`, "train.lr: must be > 0"},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"steps": "many"}}`, "train.steps: want an integer"},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"batchsize": 4}}`, "train.batchsize: unknown key"},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"seq_len": 9}}`, "train.seq_len: 9 exceeds max_len 8"},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"min_lr": 1}}`, "train.min_lr: must be in [0, lr]"},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"label_smoothing": 1}}`, "train.label_smoothing: must be in [0, 1), got 1"},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"label_smoothing": -0.1}}`, "train.label_smoothing: must be in [0, 1)"},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"label_smoothing": null}}`, "train.label_smoothing: want a number, got null"},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"schedule": "linear"}}`, `train.schedule: want "cosine" or "constant", got "linear"`},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"schedule": 3}}`, "train.schedule: want a string"},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"schedule": "constant", "lr": 0.01, "min_lr": 0.001}}`, "train.min_lr: the constant schedule has no decay"},
		{fmt.Sprintf(`{`+baseCfg+`, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"steps": 10, "curriculum": %s}}`, `{}`), "train.curriculum: want an array"},
		{fmt.Sprintf(`{`+baseCfg+`, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"steps": 10, "curriculum": %s}}`, `[]`), "train.curriculum: empty"},
		{fmt.Sprintf(`{`+baseCfg+`, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"steps": 10, "curriculum": %s}}`, `[{"len": 4}]`), "train.curriculum[0].steps: required"},
		{fmt.Sprintf(`{`+baseCfg+`, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"steps": 10, "curriculum": %s}}`, `[{"steps": 4}]`), "train.curriculum[0].len: required"},
		{fmt.Sprintf(`{`+baseCfg+`, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"steps": 10, "curriculum": %s}}`, `[{"len": 4, "steps": 2, "size": 1}]`), "train.curriculum[0].size: unknown key"},
		{fmt.Sprintf(`{`+baseCfg+`, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"steps": 10, "curriculum": %s}}`, `[{"len": 4, "steps": "2"}]`), "train.curriculum[0].steps: want an integer"},
		{fmt.Sprintf(`{`+baseCfg+`, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"steps": 10, "curriculum": %s}}`, `[{"len": 0, "steps": 2}]`), "train.curriculum[0].len: must be ≥ 1, got 0"},
		{fmt.Sprintf(`{`+baseCfg+`, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"steps": 10, "curriculum": %s}}`, `[{"len": 4, "steps": 2}, {"len": 4, "steps": 2}]`), "train.curriculum[1].len: must exceed the previous stage's len (4), got 4"},
		{fmt.Sprintf(`{`+baseCfg+`, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"steps": 10, "curriculum": %s}}`, `[{"len": 4, "steps": 0}]`), "train.curriculum[0].steps: must be ≥ 1, got 0"},
		{fmt.Sprintf(`{`+baseCfg+`, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"steps": 10, "curriculum": %s}}`, `[{"len": 4, "steps": 2, "batch_size": 0}]`), "train.curriculum[0].batch_size: must be ≥ 1, got 0"},
		{fmt.Sprintf(`{`+baseCfg+`, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"steps": 10, "curriculum": %s}}`, `[{"len": 4, "steps": 6}, {"len": 6, "steps": 4}]`), "train.curriculum: its stages take 10 updates, train.steps is 10"},
		{fmt.Sprintf(`{`+baseCfg+`, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"steps": 10, "curriculum": %s}}`, `[{"len": 8, "steps": 2}]`), "train.curriculum[0].len: 8 is not below the training length 8"},
		{fmt.Sprintf(`{`+baseCfg+`, "task": "lm", "mixer": {"kind": "cummean"}, "train": {"steps": 10, "curriculum": %s}}`, `[{"len": 4, "steps": 2}, null]`), "train.curriculum[1]"},
		{`{` + baseCfg + `, "task": "lm", "mixer": {"kind": "cummean"}} {}`, "trailing data"},
		{`[1]`, "config:"},
		{`{` + baseCfg + `, "task": null, "mixer": {"kind": "cummean"}}`, "task: want a string, got null"},
	} {
		_, err := ParseConfigWith([]byte(c.js), testLookup)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("config %s:\n got error %v\nwant one containing %q", c.js, err, c.want)
		}
	}
}

// TestConfigRoundTrip checks defaults and that the resolved config parses
// back to itself.
func TestConfigRoundTrip(t *testing.T) {
	c, err := ParseConfigWith([]byte(`{`+baseCfg+`, "task": "classify", "n_classes": 4, "pad_id": 0,
		"mixer": {"kind": "cummean", "strict": true}, "train": {"lr": 0.01, "steps": 50}}`), testLookup)
	if err != nil {
		t.Fatal(err)
	}
	if c.FFChunks != 1 || c.Causal || c.Checkpoint || *c.PadID != 0 {
		t.Errorf("defaults: %+v", c)
	}
	tr := c.Train
	if tr.BatchSize != 8 || tr.SeqLen != 8 || tr.GradClip != 1 || tr.Beta2 != 0.999 || tr.LR != 0.01 || tr.Steps != 50 {
		t.Errorf("train defaults: %+v", tr)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := ParseConfigWith(b, testLookup)
	if err != nil {
		t.Fatalf("re-parsing %s: %v", b, err)
	}
	b2, _ := json.Marshal(c2)
	if string(b) != string(b2) {
		t.Errorf("round trip changed the config:\n%s\n%s", b, b2)
	}
	if !strings.Contains(string(b), `"mixer":{"kind":"cummean","strict":true}`) {
		t.Errorf("mixer options not kept: %s", b)
	}
	if strings.Contains(string(b), "dropout") {
		t.Errorf("dropout 0 written: %s", b)
	}
	c2.Dropout = 0.125
	b, _ = json.Marshal(c2)
	if c3, err := ParseConfigWith(b, testLookup); err != nil || c3.Dropout != 0.125 {
		t.Errorf("dropout 0.125 round trip: %s gave %v, %v", b, c3, err)
	}
}

// TestCurriculumConfig decodes train.curriculum: a stage's batch_size
// defaults to train.batch_size, it round-trips, a config without one
// writes none, and a pretraining stage's config carries none.
func TestCurriculumConfig(t *testing.T) {
	c, err := ParseConfigWith([]byte(`{`+baseCfg+`, "task": "classify", "n_classes": 3, "mixer": {"kind": "cummean"},
		"train": {"batch_size": 6, "steps": 20, "curriculum": [{"len": 2, "steps": 5, "batch_size": 24}, {"len": 4, "steps": 3}],
		"pretrain": {"objective": "mlm", "steps": 4, "mask_id": 10}}}`), testLookup)
	if err != nil {
		t.Fatal(err)
	}
	want := []CurriculumStage{{Len: 2, Steps: 5, BatchSize: 24}, {Len: 4, Steps: 3, BatchSize: 6}}
	if !slices.Equal(c.Train.Curriculum, want) || c.Train.CurriculumSteps() != 8 {
		t.Errorf("curriculum %+v, want %+v", c.Train.Curriculum, want)
	}
	b, _ := json.Marshal(c)
	c2, err := ParseConfigWith(b, testLookup)
	if err != nil || !slices.Equal(c2.Train.Curriculum, want) {
		t.Errorf("round trip of %s: %+v, %v", b, c2, err)
	}
	if p := c.PretrainStage(); p.Train.Curriculum != nil {
		t.Errorf("the pretraining stage's config has a curriculum: %+v", p.Train.Curriculum)
	}
	c.Train.Curriculum = nil
	if b, _ := json.Marshal(c); strings.Contains(string(b), "curriculum") {
		t.Errorf("no curriculum, yet written: %s", b)
	}
	// A config built in Go is checked as a parsed one is.
	c.Train.Curriculum = []CurriculumStage{{Len: 4, Steps: 30, BatchSize: 1}}
	if err := c.Resolve(); err == nil || !strings.Contains(err.Error(), "train.curriculum: its stages take 30 updates") {
		t.Errorf("Resolve of a curriculum longer than train.steps: %v", err)
	}
}

// TestPretrainConfig decodes the train object's "pretrain" object: every
// error names its key, and a valid one resolves its defaults and round-trips.
func TestPretrainConfig(t *testing.T) {
	cls := `{` + baseCfg + `, "task": "classify", "n_classes": 3, "pad_id": 0, "mixer": {"kind": "cummean"}, "train": {"lr": 0.01, "min_lr": 0.001, "warmup": 3, "pretrain": %s}}`
	causal := `{` + baseCfg + `, "task": "classify", "n_classes": 3, "causal": true, "mixer": {"kind": "cummean"}, "train": {"pretrain": %s}}`
	lm := `{` + baseCfg + `, "task": "lm", "causal": true, "mixer": {"kind": "cummean"}, "train": {"pretrain": %s}}`
	for _, c := range []struct{ cfg, pre, want string }{
		{cls, `null`, "train.pretrain: want a JSON object, got null"},
		{cls, `"mlm"`, `train.pretrain: want a JSON object, got "mlm"`},
		{cls, `[]`, "train.pretrain: want a JSON object"},
		{cls, `{"objective": "mlm", "steps": 5, "mask_id": 10, "masking": "bert"}`, "train.pretrain.masking: unknown key"},
		{cls, `{"steps": 5, "mask_id": 10}`, "train.pretrain.objective: required"},
		{cls, `{"objective": null, "steps": 5, "mask_id": 10}`, "train.pretrain.objective: want a string, got null"},
		{cls, `{"objective": "denoise", "steps": 5}`, `train.pretrain.objective: must be "mlm" or "lm", got "denoise"`},
		{cls, `{"objective": "mlm", "mask_id": 10}`, "train.pretrain.steps: required"},
		{cls, `{"objective": "mlm", "steps": "5", "mask_id": 10}`, `train.pretrain.steps: want an integer, got "5"`},
		{cls, `{"objective": "mlm", "steps": 2.5, "mask_id": 10}`, "train.pretrain.steps: want an integer, got 2.5"},
		{cls, `{"objective": "mlm", "steps": 0, "mask_id": 10}`, "train.pretrain.steps: must be ≥ 1, got 0"},
		{cls, `{"objective": "mlm", "steps": null, "mask_id": 10}`, "train.pretrain.steps: want an integer, got null"},
		{cls, `{"objective": "mlm", "steps": 5}`, "train.pretrain.mask_id: required for objective \"mlm\""},
		{cls, `{"objective": "mlm", "steps": 5, "mask_id": null}`, "train.pretrain.mask_id: want an integer, got null"},
		{cls, `{"objective": "mlm", "steps": 5, "mask_id": -1}`, "train.pretrain.mask_id: must be ≥ 0, got -1"},
		{cls, `{"objective": "mlm", "steps": 5, "mask_id": 11}`, "train.pretrain.mask_id: must be in [0, vocab_size=11), got 11"},
		{cls, `{"objective": "mlm", "steps": 5, "mask_id": 0}`, "train.pretrain.mask_id: must differ from pad_id (0)"},
		{cls, `{"objective": "mlm", "steps": 5, "mask_id": 10, "mask_rate": 0}`, "train.pretrain.mask_rate: must be in (0, 1], got 0"},
		{cls, `{"objective": "mlm", "steps": 5, "mask_id": 10, "mask_rate": 1.5}`, "train.pretrain.mask_rate: must be in (0, 1], got 1.5"},
		{cls, `{"objective": "mlm", "steps": 5, "mask_id": 10, "mask_rate": "0.15"}`, `train.pretrain.mask_rate: want a number, got "0.15"`},
		{cls, `{"objective": "mlm", "steps": 5, "mask_id": 10, "lr": 0}`, "train.pretrain.lr: must be > 0, got 0"},
		{cls, `{"objective": "mlm", "steps": 5, "mask_id": 10, "lr": 0.0005}`, "train.pretrain.min_lr: must be in [0, lr=0.0005], got 0.001 (it defaults to train.min_lr)"},
		{cls, `{"objective": "mlm", "steps": 5, "mask_id": 10, "min_lr": -1}`, "train.pretrain.min_lr: must be in [0, lr=0.01], got -1"},
		{cls, `{"objective": "mlm", "steps": 5, "mask_id": 10, "warmup": -2}`, "train.pretrain.warmup: must be ≥ 0, got -2"},
		{cls, `{"objective": "mlm", "steps": 5, "mask_id": 10, "warmup": true}`, "train.pretrain.warmup: want an integer, got true"},
		{cls, `{"objective": "lm", "steps": 5}`, `train.pretrain.objective: "lm" needs a causal model (causal: true)`},
		{cls, `{"objective": "lm", "steps": 5, "mask_id": 10}`, `train.pretrain.mask_id: only for objective "mlm"`},
		{cls, `{"objective": "lm", "steps": 5, "mask_rate": 0.2}`, `train.pretrain.mask_rate: only for objective "mlm"`},
		{causal, `{"objective": "mlm", "steps": 5, "mask_id": 10}`, `train.pretrain.objective: "mlm" needs a bidirectional model (causal: false)`},
		{lm, `{"objective": "lm", "steps": 5}`, `train.pretrain: only for task "classify"`},
	} {
		js := fmt.Sprintf(c.cfg, c.pre)
		_, err := ParseConfigWith([]byte(js), testLookup)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("pretrain %s:\n got error %v\nwant one containing %q", c.pre, err, c.want)
		}
	}

	// Defaults: mask_rate 0.15, and the schedule's keys from train.
	c, err := ParseConfigWith([]byte(fmt.Sprintf(cls, `{"objective": "mlm", "steps": 7, "mask_id": 10}`)), testLookup)
	if err != nil {
		t.Fatal(err)
	}
	want := PretrainConfig{Objective: "mlm", Steps: 7, MaskRate: 0.15, MaskID: 10, LR: 0.01, MinLR: 0.001, Warmup: 3}
	if *c.Train.Pretrain != want {
		t.Errorf("pretrain %+v, want %+v", *c.Train.Pretrain, want)
	}
	b, _ := json.Marshal(c)
	c2, err := ParseConfigWith(b, testLookup)
	if err != nil || *c2.Train.Pretrain != want {
		t.Fatalf("round trip of %s: %v, %v", b, c2, err)
	}
	// The stage's model: token-level head pretrain_head, the stage's
	// schedule, the config itself untouched.
	p := c.PretrainStage()
	if p.Task != "lm" || p.HeadOut() != 11 || p.HeadName() != PretrainHead || p.Train.Steps != 7 || p.Train.Pretrain != nil ||
		c.Task != "classify" || c.HeadName() != "head" || c.Train.Steps != 1000 {
		t.Errorf("PretrainStage: task %q, head %s [%d], steps %d; the config: task %q, head %s, steps %d",
			p.Task, p.HeadName(), p.HeadOut(), p.Train.Steps, c.Task, c.HeadName(), c.Train.Steps)
	}
	// lm: no mask keys written.
	c, err = ParseConfigWith([]byte(fmt.Sprintf(causal, `{"objective": "lm", "steps": 4}`)), testLookup)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(c); strings.Contains(string(b), "mask") || !strings.Contains(string(b), `"objective":"lm"`) {
		t.Errorf("lm pretrain config written as %s", b)
	}
}
