package model

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzMaxParams bounds the models FuzzParseConfig builds and runs.
const fuzzMaxParams = 1_000_000

// paramsOf counts cfg's parameters without allocating them, from the
// mixers' ParamSpecs; it saturates at limit+1.
func paramsOf(t *testing.T, cfg *Config, limit int) int {
	mul := func(a, b int) int {
		if a == 0 || b == 0 {
			return 0
		}
		if a < 0 || b < 0 || a > (limit+1)/b {
			return limit + 1
		}
		return min(a*b, limit+1)
	}
	add := func(a, b int) int { return min(a+b, limit+1) }
	D := cfg.DModel
	n := add(mul(cfg.VocabSize, D), mul(cfg.MaxLen, D))
	n = add(n, add(mul(cfg.HeadOut(), D), cfg.HeadOut()+2*D))
	for i := 0; i < cfg.NLayers && n <= limit; i++ {
		n = add(n, 5*D)
		n = add(n, add(mul(2*D, cfg.DFF), cfg.DFF))
		mx, err := cfg.Kind().New32(cfg.MixerConfig(i))
		if err != nil {
			t.Fatalf("layer %d: mixer of a parsed config: %v", i, err)
		}
		for _, s := range mx.Params() {
			size := 1
			for _, d := range s.Shape {
				size = mul(size, d)
			}
			n = add(n, size)
		}
	}
	return n
}

// checkInvariants fails t unless c satisfies what ParseConfig promises.
func checkInvariants(t *testing.T, c *Config) {
	t.Helper()
	for _, v := range []int{c.VocabSize, c.DModel, c.NHeads, c.NLayers, c.DFF, c.MaxLen, c.FFChunks} {
		if v < 1 {
			t.Fatalf("a size below 1: %+v", c)
		}
	}
	if c.DModel%c.NHeads != 0 {
		t.Fatalf("n_heads %d does not divide d_model %d", c.NHeads, c.DModel)
	}
	switch c.Task {
	case "lm":
		if c.NClasses != 0 || c.Pool != "" {
			t.Fatalf("lm with n_classes %d, pool %q", c.NClasses, c.Pool)
		}
	case "classify":
		if c.NClasses < 2 || c.Pool != "mean" && c.Pool != "first" {
			t.Fatalf("classify with n_classes %d, pool %q", c.NClasses, c.Pool)
		}
	default:
		t.Fatalf("task %q", c.Task)
	}
	if c.PadID != nil && (*c.PadID < 0 || *c.PadID >= c.VocabSize) {
		t.Fatalf("pad_id %d outside [0, %d)", *c.PadID, c.VocabSize)
	}
	if c.Reversible && c.Checkpoint {
		t.Fatal("reversible and checkpoint")
	}
	k := c.Kind()
	if k.Name != c.Mixer.Kind || k.New32 == nil || k.New64 == nil {
		t.Fatalf("mixer kind %q resolved to %q", c.Mixer.Kind, k.Name)
	}
	if c.Causal && !k.Causal || !c.Causal && !k.Bidirectional {
		t.Fatalf("kind %s with causal=%v", k.Name, c.Causal)
	}
	if tr := c.Train; tr != nil {
		if tr.SeqLen < 1 || tr.SeqLen > c.MaxLen || tr.BatchSize < 1 || tr.Steps < 1 || !(tr.LR > 0) ||
			tr.MinLR < 0 || tr.MinLR > tr.LR || tr.Warmup < 0 || !(tr.Eps > 0) || tr.LogEvery < 1 ||
			tr.EvalEvery < 0 || tr.EvalBatches < 1 || tr.CheckpointEvery < 0 || tr.KeepCheckpoints < 1 {
			t.Fatalf("train %+v", tr)
		}
	}
}

// FuzzParseConfig checks that ParseConfig never panics, that a config it
// accepts keeps its invariants and parses back from its JSON, and that a
// small one builds a model that runs a forward and backward.
//
//	go test -run '^$' -fuzz '^FuzzParseConfig$' -fuzztime 45s ./internal/model
func FuzzParseConfig(f *testing.F) {
	paths, _ := filepath.Glob("testdata/parity/*/config.json")
	paths = append(paths, "../../testdata/spam/config.json", "../../testdata/fox/config.json")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	const base = `"vocab_size": 11, "d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 12, "max_len": 8`
	for _, s := range []string{
		`{` + base + `, "task": "lm", "causal": true, "ff_chunks": 3, "mixer": {"kind": "lsh", "bucket_size": 2}}`,
		`{` + base + `, "task": "classify", "n_classes": 3, "pool": "first", "mixer": {"kind": "fixed", "block": 2, "summary": 1}}`,
		`{` + base + `, "task": "lm", "mixer": {"kind": "strided", "block": 3, "combine": "interleave"}}`,
		`{` + base + `, "task": "lm", "causal": true, "reversible": true, "mixer": {"kind": "aft_conv", "window": 4}}`,
		`{` + base + `, "task": "lm", "mixer": {"kind": "fnet", "method": "fft"}, "train": {"seq_len": 4, "seed": 3}}`,
		`{` + base + `, "task": "lm", "ff_chunks": 9223372036854775807, "mixer": {"kind": "full"}}`,
		`{` + base + `, "task": "lm", "mixer": {"kind": "full"}, "train": {"seq_len": 9}}`,
		`{"vocab_size": 2, "d_model": 1099511627776, "n_heads": 1099511627776, "n_layers": 1, "d_ff": 1, "max_len": 1, "task": "lm", "mixer": {"kind": "entmax"}}`,
		`{"vocab_size": 2, "d_model": 1, "n_heads": 1, "n_layers": 1000000000000, "d_ff": 1, "max_len": 1, "task": "lm", "mixer": {"kind": "fnet"}}`,
		`{"vocab_size": 4294967296, "d_model": 4294967296, "n_heads": 1, "n_layers": 1, "d_ff": 1, "max_len": 1, "task": "lm", "mixer": {"kind": "aft_simple"}}`,
		`{` + base + `, "task": "lm", "causal": true, "mixer": {"kind": "aft_conv", "window": 1000000000001}}`,
		`{` + base + `, "task": "lm", "mixer": {"kind": "full"}} {}`,
		`{` + base + `, "task": "lm", "mixer": null}`,
		`[1]`,
		``,
	} {
		f.Add([]byte(s))
	}

	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := ParseConfig(b)
		if err != nil {
			if cfg != nil {
				t.Fatalf("ParseConfig returned a config with error %v", err)
			}
			return
		}
		checkInvariants(t, cfg)
		js, err := cfg.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		cfg2, err := ParseConfig(js)
		if err != nil {
			t.Fatalf("re-parsing %s: %v", js, err)
		}
		if js2, _ := cfg2.MarshalJSON(); !bytes.Equal(js, js2) {
			t.Fatalf("round trip changed the config:\n%s\n%s", js, js2)
		}
		if paramsOf(t, cfg, fuzzMaxParams) > fuzzMaxParams {
			return
		}
		m, err := New[float32](cfg)
		if err != nil {
			t.Fatalf("New of a parsed config: %v", err)
		}
		// One short sequence forward and backward.
		T := min(cfg.MaxLen, 5)
		toks := make([]int32, T)
		for i := range toks {
			toks[i] = int32(i % cfg.VocabSize)
		}
		targets := make([]int32, T)
		if cfg.Task == "classify" {
			targets = targets[:1]
		}
		m.Init(1)
		if _, err := m.Forward(toks, targets, 1, T); err != nil {
			t.Fatalf("Forward: %v", err)
		}
		m.Backward()
	})
}

// TestConfigLimits checks that configs too large to build are errors naming
// the problem (each once hung ParseConfig or crashed it or New).
func TestConfigLimits(t *testing.T) {
	const base = `"vocab_size": 11, "d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 12, "max_len": 8, "task": "lm"`
	for _, c := range []struct{ js, want string }{
		{`{"vocab_size": 2, "d_model": 1099511627776, "n_heads": 1099511627776, "n_layers": 1, "d_ff": 1, "max_len": 1, "task": "lm", "mixer": {"kind": "entmax"}}`, "n_heads: must be ≤"},
		{`{"vocab_size": 2, "d_model": 1, "n_heads": 1, "n_layers": 1000000000000, "d_ff": 1, "max_len": 1, "task": "lm", "mixer": {"kind": "fnet"}}`, "n_layers: must be ≤"},
		{`{"vocab_size": 4294967296, "d_model": 4294967296, "n_heads": 1, "n_layers": 1, "d_ff": 1, "max_len": 1, "task": "lm", "mixer": {"kind": "aft_simple"}}`, "parameters"},
		{`{"vocab_size": 2, "d_model": 1, "n_heads": 1, "n_layers": 1, "d_ff": 1, "max_len": 4294967296, "task": "lm", "mixer": {"kind": "aft_full"}}`, "parameters"},
		{`{` + base + `, "causal": true, "mixer": {"kind": "aft_conv", "window": 1000000000001}}`, "mixer.window: want ≤"},
		{`{"vocab_size": 2, "d_model": 1, "n_heads": 1, "n_layers": 16384, "d_ff": 1, "max_len": 1, "task": "lm", "causal": true, "mixer": {"kind": "aft_conv", "window": 1073741823}}`, "parameters"},
	} {
		_, err := ParseConfig([]byte(c.js))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("config %s:\n got error %v\nwant one containing %q", c.js, err, c.want)
		}
	}
}
