package bench

import (
	"testing"

	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/nodetest"
)

// TestInfer runs the infer protocol on a small classifier where
// TOKENMIX_NODE_MODULES names a node_modules with onnxruntime-node: both
// engines time every round, and the result is consistent.
func TestInfer(t *testing.T) {
	_, modules := nodetest.Modules(t)
	c, err := model.ParseConfig([]byte(`{"vocab_size": 256, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32,
		"max_len": 16, "task": "classify", "n_classes": 2, "mixer": {"kind": "fnet"}}`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Infer(c, 2, 16, 1, 2, 3, modules, "../../scripts/onnxruntime.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != "fnet" || r.Rounds != 2 || !(r.Tokenmix > 0 && r.ORT > 0 && r.Ratio > 0) || r.ORTVersion == "" {
		t.Errorf("%+v", r)
	}
	for _, p := range [][2]float64{{r.Tokenmix, r.TokenmixMs}, {r.ORT, r.ORTMs}} {
		if x := p[0] * p[1]; x < 1999 || x > 2001 { // B·1000
			t.Errorf("seqs/s and ms/batch disagree: %+v", r)
		}
	}
}
