package model

import (
	"encoding/json"
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
		{`{` + baseCfg + `, "task": "mlm", "mixer": {"kind": "cummean"}}`, `task: must be "lm" or "classify"`},
		{`{` + baseCfg + `, "task": "classify", "mixer": {"kind": "cummean"}}`, "n_classes: must be ≥ 2"},
		{`{` + baseCfg + `, "task": "lm", "n_classes": 3, "mixer": {"kind": "cummean"}}`, "n_classes: only for task"},
		{`{` + baseCfg + `, "task": "lm", "pad_id": 11, "mixer": {"kind": "cummean"}}`, "pad_id: must be in [0, vocab_size=11)"},
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
