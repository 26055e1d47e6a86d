package model

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestInit checks the GPT-2 initialisation statistics, the decay flags
// and that the streams are keyed by (seed, name).
func TestInit(t *testing.T) {
	js := `{"vocab_size": 300, "d_model": 64, "n_heads": 2, "n_layers": 8, "d_ff": 128, "max_len": 40,
		"task": "lm", "mixer": {"kind": "cummean"}}`
	m, err := New[float64](testConfig(js))
	if err != nil {
		t.Fatal(err)
	}
	m.Init(42)
	resid := 0.02 / math.Sqrt(16)
	for _, c := range []struct {
		name      string
		mean, std float64
		noDecay   bool
	}{
		{"embed.weight", 0, 0.02, false},
		{"pos.weight", 0, 0.02, true},
		{"blocks.3.ln1.weight", 1, 0, true},
		{"blocks.3.ln2.bias", 0, 0, true},
		{"blocks.3.ff.fc1.weight", 0, 0.02, false},
		{"blocks.3.ff.fc1.bias", 0, 0, true},
		{"blocks.3.ff.fc2.weight", 0, resid, false},
		{"blocks.3.mixer.o.weight", 0, resid, false},
		{"ln_f.weight", 1, 0, true},
		{"head.weight", 0, 0.02, false},
		{"head.bias", 0, 0, true},
	} {
		w, spec, ok := m.Param(c.name)
		if !ok {
			t.Fatalf("no parameter %s", c.name)
		}
		var s, s2 float64
		for _, v := range w {
			s += v
			s2 += v * v
		}
		n := float64(len(w))
		mean := s / n
		std := math.Sqrt(s2/n - mean*mean)
		// 4 standard errors of the mean and of the standard deviation.
		if math.Abs(mean-c.mean) > 4*c.std/math.Sqrt(n)+1e-12 || math.Abs(std-c.std) > 4*c.std/math.Sqrt(2*n)+1e-12 {
			t.Errorf("%s: mean %.5f std %.5f, want %.5f and %.5f", c.name, mean, std, c.mean, c.std)
		}
		if spec.NoDecay != c.noDecay {
			t.Errorf("%s: NoDecay %v, want %v", c.name, spec.NoDecay, c.noDecay)
		}
	}
	// Same seed, same weights; another seed, other weights; a tensor's
	// values do not depend on the others (keyed by name).
	m2, _ := New[float64](testConfig(js))
	m2.Init(42)
	if !slices.Equal(m.Params, m2.Params) {
		t.Error("Init is not deterministic")
	}
	m2.Init(43)
	if slices.Equal(m.Params, m2.Params) {
		t.Error("Init ignores the seed")
	}
	shallow, _ := New[float64](testConfig(strings.Replace(js, `"n_layers": 8`, `"n_layers": 4`, 1)))
	shallow.Init(42)
	a, _, _ := m.Param("blocks.3.ff.fc1.weight")
	b, _, _ := shallow.Param("blocks.3.ff.fc1.weight")
	if !slices.Equal(a, b) {
		t.Error("a tensor's init depends on more than (seed, name)")
	}
}
