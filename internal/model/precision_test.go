package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// precisionModel returns a float32 model of a small lm with mixer mix in
// precision prec, its trainer, and a fixed batch; every precision gets
// the same initial weights.
func precisionModel(t *testing.T, mix, prec string) (*Trainer[float32], []int32, []int32) {
	t.Helper()
	c, err := ParseConfig([]byte(fmt.Sprintf(`{"vocab_size": 37, "d_model": 64, "n_heads": 4, "n_layers": 2, "d_ff": 128,
		"max_len": 24, "causal": true, "task": "lm", "precision": %q, "mixer": %s,
		"train": {"lr": 0.003, "warmup": 0, "steps": 40, "seed": 2}}`, prec, mix)))
	if err != nil {
		t.Fatal(err)
	}
	m, err := New[float32](c)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(1)
	rng := rand.New(rand.NewPCG(3, 3))
	tok, tgt := make([]int32, 2*24), make([]int32, 2*24)
	for i := range tok {
		tok[i] = int32(rng.IntN(37))
		tgt[i] = int32((int(tok[i]) * 7) % 37) // learnable: a function of the token
	}
	return NewTrainer(m), tok, tgt
}

// TestPrecisionTraining: for every causal kind, a model in "bf16" and one
// in "fp16" start from the fp32 model's weights and batch: their first
// loss agrees with fp32's within 1%, their first gradients within 5% of
// the largest, and 40 steps on the batch bring each loss within 5% of
// fp32's (all three fall by more than half).
func TestPrecisionTraining(t *testing.T) {
	for _, mix := range []string{`{"kind": "full"}`, `{"kind": "strided", "block": 4}`, `{"kind": "fixed", "block": 4, "summary": 1}`,
		`{"kind": "entmax"}`, `{"kind": "topk", "k": 3}`, `{"kind": "lsh", "bucket_size": 4}`, `{"kind": "aft_simple"}`,
		`{"kind": "aft_full"}`, `{"kind": "aft_local", "window": 4}`, `{"kind": "aft_conv", "window": 5}`} {
		t.Run(mix, func(t *testing.T) {
			ref, tok, tgt := precisionModel(t, mix, "fp32")
			l0, err := ref.Model.Forward(tok, tgt, 2, 24)
			if err != nil {
				t.Fatal(err)
			}
			ref.Model.ZeroGrad()
			ref.Model.Backward()
			g0 := slices.Clone(ref.Model.Grads)
			for _, prec := range []string{"bf16", "fp16"} {
				tr, _, _ := precisionModel(t, mix, prec)
				l, err := tr.Model.Forward(tok, tgt, 2, 24)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(l-l0) > 0.01*l0 {
					t.Errorf("%s: first loss %.6g, fp32 %.6g", prec, l, l0)
				}
				tr.Model.ZeroGrad()
				tr.Model.Backward()
				if e := bf16RelErr(tr.Model.Grads, g0); e > 0.05 || e == 0 && prec == "bf16" {
					t.Errorf("%s: gradients differ from fp32 by %.3g of the largest", prec, e)
				}
			}
			var final [3]float64
			for i, prec := range []string{"fp32", "bf16", "fp16"} {
				tr, _, _ := precisionModel(t, mix, prec)
				for range 40 {
					s, err := tr.Step(tok, tgt, 2, 24)
					if err != nil || s.NonFinite || s.Overflow {
						t.Fatalf("%s: step: %+v %v", prec, s, err)
					}
				}
				if final[i], err = tr.Model.Forward(tok, tgt, 2, 24); err != nil {
					t.Fatal(err)
				}
				if final[i] > 0.5*l0 {
					t.Errorf("%s: loss %.4g after 40 steps, from %.4g", prec, final[i], l0)
				}
			}
			for i, prec := range []string{"bf16", "fp16"} {
				if math.Abs(final[i+1]-final[0]) > 0.05*final[0] {
					t.Errorf("%s: loss %.4g after 40 steps, fp32 %.4g", prec, final[i+1], final[0])
				}
			}
		})
	}
}

// TestLossScale injects an fp16 overflow with a huge loss scale: the step
// is skipped, the scale halves, and the weights, the optimizer state and
// step (so the schedule) are unchanged; with a clean scale, the scale
// doubles after Interval clean steps and not before.
func TestLossScale(t *testing.T) {
	tr, tok, tgt := precisionModel(t, `{"kind": "full"}`, "fp16")
	if tr.Scale == nil || tr.Scale.Scale != InitialLossScale || tr.Scale.Interval != LossScaleInterval {
		t.Fatalf("fp16 trainer's loss scale: %+v", tr.Scale)
	}
	if fp32, _, _ := precisionModel(t, `{"kind": "full"}`, "fp32"); fp32.Scale != nil {
		t.Fatal("an fp32 trainer has a loss scale")
	}
	w0, m0, v0 := slices.Clone(tr.Model.Params), slices.Clone(tr.Opt.M), slices.Clone(tr.Opt.V)
	tr.Scale.Scale = 0x1p60 // the loss gradient overflows half
	s, err := tr.Step(tok, tgt, 2, 24)
	if err != nil || !s.Overflow || s.NonFinite || s.LossScale != 0x1p60 {
		t.Fatalf("overflowing step: %+v %v", s, err)
	}
	if tr.Scale.Scale != 0x1p59 || tr.Scale.Skipped != 1 || tr.Scale.Clean != 0 {
		t.Errorf("after the overflow: %+v", tr.Scale)
	}
	if tr.Opt.Step != 0 || !slices.Equal(tr.Model.Params, w0) || !slices.Equal(tr.Opt.M, m0) || !slices.Equal(tr.Opt.V, v0) {
		t.Errorf("an overflowing step changed the weights or the optimizer (step %d)", tr.Opt.Step)
	}
	tr.Scale.Scale, tr.Scale.Interval = 1024, 3
	for i := 1; i <= 7; i++ {
		s, err := tr.Step(tok, tgt, 2, 24)
		if err != nil || s.Overflow || s.NonFinite {
			t.Fatalf("clean step %d: %+v %v", i, s, err)
		}
		want := 1024.0 * math.Exp2(float64(i/3))
		if tr.Scale.Scale != want || tr.Opt.Step != i {
			t.Errorf("after clean step %d: scale %g (want %g), optimizer step %d", i, tr.Scale.Scale, want, tr.Opt.Step)
		}
	}
	if tr.Scale.Skipped != 1 {
		t.Errorf("skips counted: %d", tr.Scale.Skipped)
	}
}

// TestPrecisionStructures: bf16 and fp16 with gradient checkpointing,
// chunked feed-forward and (bf16) reversible blocks: the first loss and
// gradients agree with the same structure in fp32 (1% and 5% of the
// largest gradient); fp16 refuses reversible blocks.
func TestPrecisionStructures(t *testing.T) {
	for _, extra := range []string{`"checkpoint": true`, `"ff_chunks": 3`, `"reversible": true`} {
		for _, prec := range []string{"bf16", "fp16"} {
			js := fmt.Sprintf(`{"vocab_size": 37, "d_model": 32, "n_heads": 2, "n_layers": 2, "d_ff": 64,
				"max_len": 16, "causal": true, "task": "lm", %s, "precision": %%q, "mixer": {"kind": "full"}}`, extra)
			c, err := ParseConfig([]byte(fmt.Sprintf(js, prec)))
			if prec == "fp16" && extra == `"reversible": true` {
				if err == nil {
					t.Error("fp16 with reversible blocks: no error")
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			c32, _ := ParseConfig([]byte(fmt.Sprintf(js, "fp32")))
			var loss [2]float64
			var grads [2][]float32
			for i, cfg := range []*Config{c32, c} {
				var m *Model[float32]
				m, loss[i] = forward37(t, cfg, 3, 16, 4)
				m.ZeroGrad()
				m.Backward()
				grads[i] = m.Grads
			}
			if math.Abs(loss[1]-loss[0]) > 0.01*loss[0] {
				t.Errorf("%s %s: loss %.6g, fp32 %.6g", prec, extra, loss[1], loss[0])
			}
			if e := bf16RelErr(grads[1], grads[0]); e > 0.05 || e == 0 {
				t.Errorf("%s %s: gradients differ from fp32 by %.3g of the largest", prec, extra, e)
			}
		}
	}
}

// TestGeluRecompute: with the 16-bit slab, backward's GELU output,
// recomputed from the stored fc1 output (geluFrom16), is bitwise what
// forward fed fc2: the bf16 g in the gradient slab, or in fp16 the g
// rounded to half. d_ff 40 and B·T = 21 leave partial vectors.
func TestGeluRecompute(t *testing.T) {
	for _, prec := range []string{"bf16", "fp16"} {
		c, err := ParseConfig([]byte(fmt.Sprintf(`{"vocab_size": 37, "d_model": 32, "n_heads": 2, "n_layers": 2, "d_ff": 40,
			"max_len": 7, "causal": true, "task": "lm", "precision": %q, "mixer": {"kind": "full"}}`, prec)))
		if err != nil {
			t.Fatal(err)
		}
		m, _ := forward37(t, c, 3, 7, 5)
		p := &m.plan
		if p.HalfElems != 2*3*7*40 || p.blocks[1].fcg.n != 0 {
			t.Fatalf("%s: 16-bit slab of %d elements, GELU kept: %v", prec, p.HalfElems, p.blocks[1].fcg.n != 0)
		}
		h16 := m.act16(p.blocks[1].fch) // the last block's, whose g forward left
		if prec == "bf16" {
			want := slices.Clone(m.gelu16())
			got := make([]uint16, len(want))
			geluFrom16(2, m.f16, nil, got, h16)
			if !slices.Equal(got, want) {
				t.Errorf("bf16: recomputed GELU differs from forward's")
			}
			continue
		}
		if m.gelu16() != nil {
			t.Error("fp16 model has a bf16 GELU buffer")
		}
		want := slices.Clone(m.grad(p.dg))
		got := make([]float32, len(want))
		geluFrom16(2, m.f16, got, nil, h16)
		if !slices.Equal(got, want) {
			t.Errorf("fp16: recomputed GELU differs from forward's")
		}
	}
}

// forward37 builds the float32 model of c (vocabulary 37) with Init(1)
// and runs Forward on B×T random tokens and targets drawn with seed,
// returning the model and its loss.
func forward37(t *testing.T, c *Config, B, T int, seed uint64) (*Model[float32], float64) {
	t.Helper()
	m, err := New[float32](c)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(1)
	rng := rand.New(rand.NewPCG(seed, seed))
	tok, tgt := make([]int32, B*T), make([]int32, B*T)
	for j := range tok {
		tok[j], tgt[j] = int32(rng.IntN(37)), int32(rng.IntN(37))
	}
	loss, err := m.Forward(tok, tgt, B, T)
	if err != nil {
		t.Fatal(err)
	}
	return m, loss
}
