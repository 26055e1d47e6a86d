package arena

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
)

// TestStrictEverywhere: a null, an unknown key, a wrong type and a value out
// of range are errors naming the key by its path, worded alike, at every
// level of a preset (its own keys, task, model, train, mixer options), in
// a model config and a mixer's options, and in the arena's saved files.
func TestStrictEverywhere(t *testing.T) {
	const (
		task0  = `"task": {"name": "recall", "len": 32, "pairs": 2, "queries": 2, "keys": 4, "values": 4, "train": 8, "val": 4, "test": 4}`
		model0 = `"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16`
	)
	parse := func(js string) error {
		_, err := ParsePreset([]byte(js))
		return err
	}
	// taskOf builds the task of a preset whose task object is
	// {"name": name + keys}.
	taskOf := func(name, keys string) error {
		p, err := ParsePreset([]byte(`{"task": {"name": "` + name + `"` + keys + `}, "model": {}, "budget": "10"}`))
		if err != nil {
			return err
		}
		_, err = p.BuildTask()
		return err
	}
	taskNamed := func(name string) error { return taskOf(name, "") }
	noGo := t.TempDir()
	preset := func(extra string) error {
		_, err := ParsePreset([]byte(`{"task": {"name": "recall"}, "model": {}, "budget": "10"` + extra + `}`))
		return err
	}
	task := func(keys string) error {
		p, err := ParsePreset([]byte(`{"task": {"name": "recall"` + keys + `}, "model": {}, "budget": "10"}`))
		if err != nil {
			return err
		}
		_, err = p.BuildTask()
		return err
	}
	// modelCfg parses a preset with the given model, train and mixer_options
	// keys and builds the full mixer's model config from it.
	info := data.Info{Name: "x", Mode: data.LM, Vocab: 16, PadID: -1, MaxLen: 32, Metric: data.Accuracy}
	modelCfg := func(modelKeys, trainKeys, opts string) error {
		p, err := ParsePreset([]byte(`{` + task0 + `, "model": {` + model0 + modelKeys + `}, "train": {"log_every": 1` + trainKeys +
			`}, "mixer_options": {"strided": {"block": 4` + opts + `}}, "budget": "10"}`))
		if err != nil {
			return err
		}
		kind := "full"
		if opts != "" {
			kind = "strided"
		}
		_, err = p.ModelConfig(kind, info, false, 10)
		return err
	}
	mdl := func(keys string) error { return modelCfg(keys, "", "") }
	modelOnly := func(keys string) error {
		p, err := ParsePreset([]byte(`{` + task0 + `, "model": {` + keys + `}, "budget": "10"}`))
		if err != nil {
			return err
		}
		_, err = p.ModelConfig("full", info, false, 10)
		return err
	}
	train := func(keys string) error { return modelCfg("", keys, "") }
	opts := func(keys string) error { return modelCfg("", "", keys) }
	const base = `"vocab_size": 16, "d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "max_len": 32, "task": "lm"`
	cfg := func(keys, mixer string) error {
		_, err := model.ParseConfig([]byte(`{` + base + keys + `, "mixer": {"kind": "strided", "block": 4` + mixer + `}}`))
		return err
	}
	dir := t.TempDir()
	saved := func(name, js string, dst any) error {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(js), 0o644); err != nil {
			t.Fatal(err)
		}
		err := readJSON(path, dst)
		if err != nil {
			// The error names the file, then the key.
			err = errors.New(strings.TrimPrefix(err.Error(), path+": "))
		}
		return err
	}
	for _, c := range []struct {
		level, what string
		err         error
		key, want   string // the error is "key: ..." and contains want
	}{
		{"preset", "null", preset(`, "jobs": null`), "jobs", "want an integer, got null"},
		{"preset", "unknown key", preset(`, "jobz": 2`), "jobz", "unknown key"},
		{"preset", "type", preset(`, "jobs": "two"`), "jobs", `want an integer, got "two"`},
		{"preset", "range", preset(`, "jobs": -1`), "jobs", "want ≥ 0, got -1"},
		{"preset", "required", parse(`{"task": {"name": "recall"}, "model": {}}`), "budget", "required"},
		{"preset", "nested null", preset(`, "mixer_steps": {"full": null}`), "mixer_steps.full", "want an integer, got null"},
		{"preset", "nested type", preset(`, "mixer_steps": {"full": "many"}`), "mixer_steps.full", `want an integer, got "many"`},
		{"preset", "nested range", preset(`, "mixer_steps": {"full": 0}`), "mixer_steps.full", "want ≥ 1 step, got 0"},
		{"preset", "list type", preset(`, "mixers": ["full", 3]`), "mixers[1]", "want a string, got 3"},
		{"preset", "object type", preset(`, "mixer_steps": [1]`), "mixer_steps", "want a JSON object, got [1]"},
		{"preset", "options null", preset(`, "mixer_options": {"lsh": {"bucket_size": null}}`), "mixer_options.lsh.bucket_size", "want a value, got null"},
		{"task", "null", task(`, "len": null`), "task.len", "want an integer, got null"},
		{"task", "unknown key", task(`, "lenn": 3`), "task.lenn", "unknown key"},
		{"task", "type", task(`, "len": "long"`), "task.len", `want an integer, got "long"`},
		{"task", "null", parse(`{"task": {"name": null}, "model": {}, "budget": "10"}`), "task.name", "want a string, got null"},
		{"task", "type", parse(`{"task": {"name": 3}, "model": {}, "budget": "10"}`), "task.name", "want a string, got 3"},
		{"task", "type", parse(`{"task": [], "model": {}, "budget": "10"}`), "task", "want a JSON object, got []"},
		{"task", "range", parse(`{"task": {"name": ""}, "model": {}, "budget": "10"}`), "task.name", "want one of " + strings.Join(data.TaskNames(), ", ")},
		{"task", "range", task(`, "len": 8, "pairs": 4`), "task.len", "4 pairs and 1 queries need ≥ 9 tokens, got 8"},
		{"task", "range", task(`, "len": 16, "pairs": 1, "values": 1`), "task.values", "want ≥ 2, got 1"},
		{"task", "range", task(`, "val": -1`), "task.val", "want ≥ 0, got -1"},
		{"task", "range", taskOf("listops", `, "max_depth": 1`), "task.max_depth", "want ≥ 2, got 1"},
		{"task", "range", taskOf("listops", `, "min_len": 10, "max_len": 11`), "task.max_len", "want > min_len+1 (11), got 11"},
		{"task", "range", taskOf("gosrc", `, "seq_len": 8, "eval_context": 9`), "task.eval_context", "want in [0, seq_len (8)), got 9"},
		{"task", "range", taskOf("gosrc", `, "val_percent": 50, "test_percent": 50`), "task.test_percent", "want val_percent + test_percent < 100, got 50 + 50"},
		{"task", "range", taskOf("gosrc", `, "root": "`+noGo+`"`), "task.root", "no .go files under"},
		{"task", "range", taskOf("fmnist", `, "test": -3`), "task.test", "want ≥ 0, got -3"},
		{"task", "range", taskOf("fmnist", `, "data_dir": "`+noGo+`"`), "task.data_dir", "Fashion-MNIST files not found"},
		{"task", "range", taskNamed("nosuch"), "task.name", `unknown task "nosuch"`},
		{"model", "null", parse(`{"task": {"name": "recall"}, "model": null, "budget": "10"}`), "model", "want a JSON object, got null"},
		{"model", "null", mdl(`, "causal": null`), "model.causal", "want true or false, got null"},
		{"model", "unknown key", mdl(`, "d_modle": 8`), "model.d_modle", "unknown key"},
		{"model", "type", mdl(`, "ff_chunks": "2"`), "model.ff_chunks", `want an integer, got "2"`},
		{"model", "type", parse(`{"task": {"name": "recall"}, "model": {"d_model": "big"}, "budget": "10"}`), "model.d_model", `want an integer, got "big"`},
		{"model", "range", mdl(`, "ff_chunks": 0`), "model.ff_chunks", "must be ≥ 1, got 0"},
		{"model", "range", modelOnly(`"n_heads": 2, "n_layers": 1, "d_ff": 16`), "model.d_model", "must be ≥ 1, got 0"},
		{"model", "range", modelOnly(`"d_model": 6, "n_heads": 4, "n_layers": 1, "d_ff": 16`), "model.n_heads", "must divide d_model"},
		{"model", "range", mdl(`, "dropout": -0.5`), "model.dropout", "must be in [0, 1), got -0.5"},
		{"model", "range", mdl(`, "pool": "first"`), "model.pool", `only for task "classify"`},
		{"model", "derived", mdl(`, "vocab_size": 16`), "model.vocab_size", "set by the arena from the task; remove it"},
		{"train", "null", train(`, "warmup": null`), "train.warmup", "want an integer, got null"},
		{"train", "unknown key", train(`, "lrr": 1`), "train.lrr", "unknown key"},
		{"train", "type", train(`, "lr": "fast"`), "train.lr", `want a number, got "fast"`},
		{"train", "type", train(`, "batch_size": 1.5`), "train.batch_size", `want an integer, got 1.5`},
		{"train", "range", train(`, "beta1": 1`), "train.beta1", "must be in [0, 1)"},
		{"train", "range", train(`, "seed": -2`), "train.seed", "want a non-negative integer, got -2"},
		{"train", "derived", train(`, "steps": 5`), "train.steps", "set by the arena (budget, task); remove it"},
		{"mixer options", "range", opts(`, "combine": "all"`), "mixer_options.strided.combine", `want "heads", "merge" or "interleave", got "all"`},
		{"mixer options", "unknown key", opts(`, "blok": 4`), "mixer_options.strided.blok", "unknown key"},
		{"config", "null", cfg(`, "causal": null`, ""), "causal", "want true or false, got null"},
		{"config", "unknown key", cfg(`, "casual": true`, ""), "casual", "unknown key"},
		{"config", "type", cfg(`, "ff_chunks": "2"`, ""), "ff_chunks", `want an integer, got "2"`},
		{"config", "range", cfg(`, "ff_chunks": 0`, ""), "ff_chunks", "must be ≥ 1, got 0"},
		{"config", "train null", cfg(`, "train": {"lr": null}`, ""), "train.lr", "want a number, got null"},
		{"config", "train range", cfg(`, "train": {"lr": 0}`, ""), "train.lr", "must be > 0"},
		{"mixer", "null", cfg("", `, "combine": null`), "mixer.combine", "want a string, got null"},
		{"mixer", "unknown key", cfg("", `, "blok": 4`), "mixer.blok", "unknown key"},
		{"mixer", "type", cfg("", `, "combine": 1`), "mixer.combine", "want a string, got 1"},
		{"mixer", "range", cfg("", `, "combine": "all"`), "mixer.combine", `want "heads", "merge" or "interleave", got "all"`},
		{"result", "null", saved("r1.json", `{"mixer": "full", "steps": null}`, &Result{}), "steps", "want an integer, got null"},
		{"result", "unknown key", saved("r2.json", `{"mixer": "full", "stepz": 3}`, &Result{}), "stepz", "unknown key"},
		{"result", "type", saved("r3.json", `{"mixer": "full", "curve": [{"step": "one"}]}`, &Result{}), "curve[0].step", `want an integer, got "one"`},
		{"results", "type", saved("f.json", `{"task": {"Name": 3}}`, &File{}), "task.Name", "want a string, got 3"},
		{"job", "unknown key", saved("j.json", `{"kind": "full", "budgett": "10"}`, &jobFile{}), "budgett", "unknown key"},
	} {
		if c.err == nil || !strings.HasPrefix(c.err.Error(), c.key+": ") || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s, %s: error %v, want %q", c.level, c.what, c.err, c.key+": …"+c.want)
		}
	}
}

// TestSavedFiles: files an earlier build wrote read back strictly. An
// arena.json (the canonical preset, compared on resume) keeps its exact
// bytes through ParsePreset and Canonical, and a results.json from before
// seeds and kernel paths loads with its preset.
func TestSavedFiles(t *testing.T) {
	b, err := os.ReadFile("testdata/saved/arena.json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePreset(b)
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Canonical(); string(c) != strings.TrimSpace(string(b)) {
		t.Errorf("canonical form changed:\n%s\nwant\n%s", c, b)
	}
	if !sameArena(b, p) {
		t.Error("sameArena: the saved preset differs from itself")
	}
	q := *p
	q.Model.NLayers++
	if sameArena(b, &q) {
		t.Error("sameArena: a preset with another n_layers is the same arena")
	}
	f, err := LoadFile("testdata/saved/results.json")
	if err != nil {
		t.Fatal(err)
	}
	if f.Task.Name != "listops" || len(f.Results) == 0 || len(f.Results[0].Curve) == 0 || f.Seeds != nil {
		t.Errorf("results.json: task %q, %d results", f.Task.Name, len(f.Results))
	}
	if _, err := ParsePreset(f.Preset); err != nil {
		t.Errorf("results.json's preset: %v", err)
	}
}
