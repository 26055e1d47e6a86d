package model

import (
	"strings"
	"testing"
)

// TestPlanLinearInT checks that with full attention the planned memory of
// the model and of one mixer layer grows linearly in T (no T×T buffer):
// doubling T at most doubles it (plus a little for fixed-size parts).
func TestPlanLinearInT(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"vocab_size": 256, "d_model": 64, "n_heads": 4, "n_layers": 2, "d_ff": 256,
		"max_len": 4096, "causal": true, "task": "lm", "mixer": {"kind": "full"}}`))
	if err != nil {
		t.Fatal(err)
	}
	m, err := New[float32](cfg)
	if err != nil {
		t.Fatal(err)
	}
	for T := 512; T < 4096; T *= 2 {
		a, b := m.Plan(1, T).Bytes(), m.Plan(1, 2*T).Bytes()
		if float64(b) > 2.05*float64(a) {
			t.Errorf("model plan: %d bytes at T=%d, %d at T=%d (more than linear)", a, T, b, 2*T)
		}
		ma, mb := MixerBytes(m.Mixer(0), 1, T, 64, 2), MixerBytes(m.Mixer(0), 1, 2*T, 64, 2)
		if float64(mb) > 2.05*float64(ma) {
			t.Errorf("mixer plan: %d bytes at T=%d, %d at T=%d (more than linear)", ma, T, mb, 2*T)
		}
	}
	s := m.Plan(2, 16).String()
	for _, want := range []string{"memory plan B=2 T=16", "mixer.act[1]", "ff.gelu", "total"} {
		if !strings.Contains(s, want) {
			t.Errorf("plan table lacks %q:\n%s", want, s)
		}
	}
}
