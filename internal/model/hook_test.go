package model

import (
	"fmt"
	"slices"
	"testing"
)

// TestMixerInputHook checks that MixerInput sees every block's mixer input
// LN1_i(res[i]) once per Forward (recomputed independently from the saved
// block inputs), the same with checkpointing, and that the hook changes
// neither the loss nor the gradients.
func TestMixerInputHook(t *testing.T) {
	const B, T = 2, 7
	plain := newTestModel(t, fmt.Sprintf(tinyLM, ""))
	ck := newTestModel(t, fmt.Sprintf(tinyLM, `, "checkpoint": true`))
	bare := newTestModel(t, fmt.Sprintf(tinyLM, ""))
	tokens, targets := testBatch(plain.Config, B, T, 9)
	L, D := plain.Config.NLayers, plain.Config.DModel
	var seen [2][][]float64
	for k, m := range []*Model[float64]{plain, ck} {
		calls := 0
		seen[k] = make([][]float64, L)
		m.MixerInput = func(i int, x []float64) {
			calls++
			if seen[k][i] == nil { // Backward recomputes with checkpointing
				seen[k][i] = slices.Clone(x)
			}
		}
		if _, err := m.Forward(tokens, targets, B, T); err != nil {
			t.Fatal(err)
		}
		if calls != L {
			t.Errorf("checkpoint=%v: %d hook calls in Forward, want %d", k == 1, calls, L)
		}
	}
	for i := 0; i < L; i++ {
		want := make([]float64, B*T*D)
		bw := &plain.w.blocks[i]
		layerNormForward(plain.plan.Threads, want, make([]float64, B*T), make([]float64, B*T), plain.act(plain.plan.res[i]), bw.ln1w, bw.ln1b, B*T, D)
		for k := range seen {
			if !slices.Equal(seen[k][i], want) {
				t.Errorf("checkpoint=%v: block %d hook input is not LN1(res[%d])", k == 1, i, i)
			}
		}
	}
	lb, err := bare.Forward(tokens, targets, B, T)
	if err != nil {
		t.Fatal(err)
	}
	plain.ZeroGrad()
	bare.ZeroGrad()
	plain.Backward()
	bare.Backward()
	if lb != plain.Loss() || !slices.Equal(bare.Grads, plain.Grads) {
		t.Errorf("the hook changed the loss (%v vs %v) or the gradients", plain.Loss(), lb)
	}
}
