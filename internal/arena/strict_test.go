package arena

import (
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/model"
)

// TestStrictEverywhere: a null, an unknown key, a wrong type and a value out
// of range are errors naming the key, worded alike, in a preset, its task,
// a model config and a mixer's options.
func TestStrictEverywhere(t *testing.T) {
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
	const base = `"vocab_size": 16, "d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "max_len": 32, "task": "lm"`
	cfg := func(keys, mixer string) error {
		_, err := model.ParseConfig([]byte(`{` + base + keys + `, "mixer": {"kind": "strided", "block": 4` + mixer + `}}`))
		return err
	}
	for _, c := range []struct {
		level, what string
		err         error
		want        string
	}{
		{"preset", "null", preset(`, "jobs": null`), "jobs: want an integer, got null"},
		{"preset", "unknown key", preset(`, "jobz": 2`), "jobz: unknown key"},
		{"preset", "type", preset(`, "jobs": "two"`), `jobs: want an integer, got "two"`},
		{"preset", "range", preset(`, "jobs": -1`), "jobs: want ≥ 0, got -1"},
		{"task", "null", task(`, "len": null`), "task.len: want an integer, got null"},
		{"task", "unknown key", task(`, "lenn": 3`), "task.lenn: unknown key"},
		{"task", "type", task(`, "len": "long"`), `task.len: want an integer, got "long"`},
		{"model", "null", cfg(`, "causal": null`, ""), "causal: want true or false, got null"},
		{"model", "unknown key", cfg(`, "casual": true`, ""), "casual: unknown key"},
		{"model", "type", cfg(`, "ff_chunks": "2"`, ""), `ff_chunks: want an integer, got "2"`},
		{"model", "range", cfg(`, "ff_chunks": 0`, ""), "ff_chunks: must be ≥ 1, got 0"},
		{"train", "null", cfg(`, "train": {"lr": null}`, ""), "train.lr: want a number, got null"},
		{"train", "range", cfg(`, "train": {"lr": 0}`, ""), "train.lr: must be > 0"},
		{"mixer", "null", cfg("", `, "combine": null`), "mixer.combine: want a string, got null"},
		{"mixer", "unknown key", cfg("", `, "blok": 4`), "mixer.blok: unknown key"},
		{"mixer", "type", cfg("", `, "combine": 1`), "mixer.combine: want a string, got 1"},
		{"mixer", "range", cfg("", `, "combine": "all"`), `mixer.combine: want "heads", "merge" or "interleave", got "all"`},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s, %s: error %v, want one containing %q", c.level, c.what, c.err, c.want)
		}
	}
}
