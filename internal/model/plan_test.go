package model

import (
	"fmt"
	"math"
	"slices"
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

// TestForwardPlan checks that a forward without targets, on the
// forward-only plan, gives bitwise the logits of the same forward on the
// training plan (a token-level task's, which that plan does not keep,
// through their loss), for every task, precision and layout; that the plan
// is smaller (reversible blocks keep their layout); and that a training
// pass after it gives the gradients it gives alone.
func TestForwardPlan(t *testing.T) {
	for _, c := range []struct{ name, js string }{
		{"lm", fmt.Sprintf(tinyLM, "")},
		{"lm checkpoint ff_chunks", fmt.Sprintf(tinyLM, `, "checkpoint": true, "ff_chunks": 3`)},
		{"lm dropout", fmt.Sprintf(tinyLM, `, "dropout": 0.3`)},
		{"lm reversible", fmt.Sprintf(tinyLM, `, "reversible": true`)},
		{"classify", fmt.Sprintf(tinyCls, "")},
		{"tag", fmt.Sprintf(tinyTag, "")},
		{"embed", fmt.Sprintf(tinyEmbed, "")},
		{"lm bf16", fmt.Sprintf(tinyLM, `, "precision": "bf16"`)},
		{"lm fp16", fmt.Sprintf(tinyLM, `, "precision": "fp16"`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := New[float32](testConfig(c.js))
			if err != nil {
				t.Fatal(err)
			}
			m.Init(3)
			const B, T = 4, 8
			tokens, targets := testBatch(m.Config, B, T, 6)
			fp, tp := m.ForwardPlan(B, T), m.Plan(B, T)
			if !m.Config.Reversible && fp.Bytes() >= tp.Bytes() {
				t.Errorf("forward plan %d bytes, training plan %d", fp.Bytes(), tp.Bytes())
			}
			if !fp.Forward || tp.Forward {
				t.Errorf("ForwardPlan is marked Forward %v, Plan %v", fp.Forward, tp.Forward)
			}
			train := func() []float32 {
				m.Train = true
				defer func() { m.Train = false }()
				if _, err := m.Forward(tokens, targets, B, T); err != nil {
					t.Fatal(err)
				}
				m.ZeroGrad()
				m.Backward()
				return slices.Clone(m.Grads)
			}
			g1 := train()
			loss, err := m.Forward(tokens, targets, B, T) // the training plan
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(m.Logits())
			if m.plan.Forward || (want == nil) != !m.Config.Pooled() {
				t.Fatalf("a forward with targets ran on a plan with Forward %v and kept %d logits", m.plan.Forward, len(want))
			}
			if _, err := m.Forward(tokens, nil, B, T); err != nil {
				t.Fatal(err)
			}
			if !m.plan.Forward {
				t.Fatal("a forward without targets ran on the training plan")
			}
			got := m.Logits()
			if want == nil { // a token-level task: the same logits give the same loss, bit for bit
				N, V := B*T, m.Config.HeadOut()
				if l, _ := crossEntropyForward(m.plan.Threads, got, targets, N, V, 0); l != loss {
					t.Fatalf("the forward plan's logits give the loss %v, the training plan %v", l, loss)
				}
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("logit %d: %v on the forward plan, %v on the training plan", i, got[i], want[i])
				}
			}
			if g2 := train(); !slices.Equal(g1, g2) {
				t.Error("a training pass after a forward-only pass gives other gradients")
			}
		})
	}
}
