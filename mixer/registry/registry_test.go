package registry

import (
	"math"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/mixer"
)

// TestRegistryContract checks what every registered kind owes the rest of
// tokenmix: a unique name, a paper, both constructors, defaults that build (given
// the options a kind requires),
// strict options, honest capability flags, and a forward that writes finite
// outputs in float32. The full conformance suite (finite differences,
// causality, padding, double backward) runs in each kind's own package with
// inputs chosen for that kind.
func TestRegistryContract(t *testing.T) {
	// Options a kind requires (no sensible default exists for them).
	required := map[string]map[string]any{
		"strided": {"block": 8},
		"fixed":   {"block": 8, "summary": 2},
	}
	seen := map[string]bool{}
	for _, k := range All() {
		if k.Name == "" || seen[k.Name] {
			t.Fatalf("kind name %q empty or repeated", k.Name)
		}
		seen[k.Name] = true
		if k.Paper == "" {
			t.Errorf("%s: no paper", k.Name)
		}
		if k.New32 == nil || k.New64 == nil {
			t.Fatalf("%s: missing constructor", k.Name)
		}
		if got, err := Lookup(k.Name); err != nil || got.Name != k.Name {
			t.Errorf("Lookup(%q) = %q, %v", k.Name, got.Name, err)
		}
		for _, causal := range []bool{false, true} {
			cfg := mixer.Config{D: 16, Heads: 2, MaxLen: 64, Causal: causal, NLayers: 2, Opts: mixer.OptionsOf(k.Name, required[k.Name])}
			supported := (causal && k.Causal) || (!causal && k.Bidirectional)
			m, err := k.New32(cfg)
			if !supported {
				if err == nil {
					t.Errorf("%s: causal=%v is not supported but the constructor accepted it", k.Name, causal)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s causal=%v: defaults do not build: %v", k.Name, causal, err)
				continue
			}
			opts := map[string]any{"no_such_option": 1}
			for key, v := range required[k.Name] {
				opts[key] = v
			}
			cfg.Opts = mixer.OptionsOf(k.Name, opts)
			if _, err := k.New32(cfg); err == nil || !strings.Contains(err.Error(), "no_such_option") {
				t.Errorf("%s: unknown option not rejected by name (err %v)", k.Name, err)
			}
			forwardFinite(t, k.Name, m)
		}
	}
	if _, err := Lookup("no-such-kind"); err == nil {
		t.Error("Lookup accepted an unknown kind")
	}
}

func forwardFinite(t *testing.T, name string, m mixer.Mixer[float32]) {
	const B, T, D = 2, 64, 16
	var w, g [][]float32
	for i, s := range m.Params() {
		v := make([]float32, s.Size())
		for j := range v {
			v[j] = float32(math.Sin(float64(i*131+j))) * 0.2
		}
		w = append(w, v)
		g = append(g, make([]float32, s.Size()))
	}
	m.Bind(w, g)
	x := make([]float32, B*T*D)
	for i := range x {
		x[i] = float32(math.Cos(float64(i)))
	}
	out := make([]float32, len(x))
	for i := range out {
		out[i] = float32(math.NaN())
	}
	act := make([]float32, m.ActSize(B, T))
	scr := make([]float32, m.ScratchSize(B, T, 0))
	m.Forward(out, act, scr, x, mixer.Pass{B: B, T: T, Seed: 1})
	for i, v := range out {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("%s: output %d is %v", name, i, v)
		}
	}
	dx := make([]float32, len(x))
	m.Backward(dx, scr, out, act, x, mixer.Pass{B: B, T: T, Seed: 1})
	for i, v := range dx {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("%s: dx %d is %v", name, i, v)
		}
	}
}
