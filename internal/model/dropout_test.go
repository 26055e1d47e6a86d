package model

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// TestDropoutMask checks the mask of Model.drop: about p of the elements
// are zeroed and the rest scaled by 1/(1−p); the mask depends on the step,
// the layer and the branch and on nothing else; and its first elements
// are pinned (the PyTorch twin's test_rng.py pins the same ones).
func TestDropoutMask(t *testing.T) {
	m := newTestModel(t, fmt.Sprintf(tinyLM, `, "dropout": 0.25`))
	m.Seed = 7
	ones := make([]float64, 1<<16)
	for i := range ones {
		ones[i] = 1
	}
	mask := func(step, layer, branch int) []float64 {
		m.Step = step
		out := make([]float64, len(ones))
		m.drop(out, ones, layer, branch)
		return out
	}
	a := mask(3, 1, 0)
	zeros := 0
	for _, v := range a {
		switch v {
		case 0:
			zeros++
		case 1 / 0.75:
		default:
			t.Fatalf("dropped output %v: want 0 or 1/(1−p)", v)
		}
	}
	if f := float64(zeros) / float64(len(a)); math.Abs(f-0.25) > 0.01 {
		t.Errorf("%.4f of the elements dropped, want 0.25", f)
	}
	if !slices.Equal(a, mask(3, 1, 0)) {
		t.Error("the same step, layer and branch gave another mask")
	}
	for _, o := range [][3]int{{4, 1, 0}, {3, 0, 0}, {3, 1, 1}} {
		if slices.Equal(a, mask(o[0], o[1], o[2])) {
			t.Errorf("step, layer, branch %v: the mask of (3, 1, 0)", o)
		}
	}
	m.Seed = 1
	var got []int
	for j, v := range mask(0, 0, 0)[:24] {
		if v == 0 {
			got = append(got, j)
		}
	}
	want := []int{0, 3, 7, 8, 15, 19, 20, 21, 23}
	if !slices.Equal(got, want) {
		t.Errorf("seed 1, step 0, layer 0, branch 0, p 0.25: elements %v of the first 24 dropped, want %v", got, want)
	}
}

// TestDropoutOnlyInTraining: with Train false a model with dropout
// computes bitwise what the same weights without dropout compute; a
// training forward differs, and Trainer.Step leaves Train false.
func TestDropoutOnlyInTraining(t *testing.T) {
	plain := newTestModel(t, fmt.Sprintf(tinyCls, ""))
	drop := newTestModel(t, fmt.Sprintf(tinyCls, `, "dropout": 0.5`))
	const B, T = 2, 7
	tokens, targets := testBatch(plain.Config, B, T, 3)
	lp, err := plain.Forward(tokens, targets, B, T)
	if err != nil {
		t.Fatal(err)
	}
	ld, err := drop.Forward(tokens, targets, B, T)
	if err != nil {
		t.Fatal(err)
	}
	if lp != ld {
		t.Errorf("evaluation loss %v with dropout, %v without", ld, lp)
	}
	drop.Train = true
	if lt, _ := drop.Forward(tokens, targets, B, T); lt == lp {
		t.Errorf("training loss with dropout 0.5 is the evaluation loss %v", lt)
	}
	drop.Train = false
	drop.Config.Train = &TrainConfig{BatchSize: B, Steps: 10, LR: 1e-3, GradClip: 1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	tr := NewTrainer(drop)
	if _, err := tr.Step(tokens, targets, B, T); err != nil {
		t.Fatal(err)
	}
	if drop.Train {
		t.Error("Trainer.Step left Train set")
	}
}

// TestDropoutStructures: under dropout, checkpointing gives bitwise the
// gradients of the plain model and ff_chunks the same to rounding;
// reversible blocks that reconstruct their inputs give those of
// reversible blocks that keep them.
func TestDropoutStructures(t *testing.T) {
	const B, T = 2, 7
	run := func(js string, keep bool) ([]float64, float64) {
		m := newTestModel(t, fmt.Sprintf(tinyLM, `, "dropout": 0.4`+js))
		m.Config.revKeep = keep
		m.Train, m.Step = true, 5
		tokens, targets := testBatch(m.Config, B, T, 2)
		l, err := m.Forward(tokens, targets, B, T)
		if err != nil {
			t.Fatal(err)
		}
		m.ZeroGrad()
		m.Backward()
		return m.Grads, l
	}
	for _, c := range []struct {
		js, ref string
		keep    bool // ref keeps reversible blocks' inputs
		tol     float64
	}{
		{`, "checkpoint": true`, "", false, 0},
		{`, "ff_chunks": 3`, "", false, 1e-13},
		{`, "reversible": true`, `, "reversible": true`, true, 1e-9},
	} {
		g, l := run(c.js, false)
		g0, l0 := run(c.ref, c.keep)
		if math.Abs(l-l0) > c.tol {
			t.Errorf("%s: loss %v, want %v", c.js, l, l0)
		}
		if e := maxRelDiff(g, g0, 1e-12); e > c.tol {
			t.Errorf("%s: gradients differ by %.3g (relative), want ≤ %g", c.js, e, c.tol)
		}
	}
}

// TestDropoutPrecision: float32 models with dropout in bf16 (whose fc2
// writes the branch from its bf16 input) and fp16 have the fp32 model's
// gradients within 5% of the largest.
func TestDropoutPrecision(t *testing.T) {
	const B, T = 2, 24
	js := `{"vocab_size": 37, "d_model": 64, "n_heads": 4, "n_layers": 2, "d_ff": 128, "max_len": 24,
		"causal": true, "task": "lm", "dropout": 0.3, "precision": %q, "mixer": {"kind": "full"}}`
	tok, tgt := testBatch(testConfig(fmt.Sprintf(js, "fp32")), B, T, 4)
	grads := func(prec string) []float32 { // of one training step from Init(1)
		m, err := New[float32](testConfig(fmt.Sprintf(js, prec)))
		if err != nil {
			t.Fatal(err)
		}
		m.Init(1)
		m.Train = true
		if _, err := m.Forward(tok, tgt, B, T); err != nil {
			t.Fatal(err)
		}
		m.Backward()
		return m.Grads
	}
	ref := grads("fp32")
	for _, prec := range []string{"bf16", "fp16"} {
		if e := bf16RelErr(grads(prec), ref); e > 0.05 || e == 0 {
			t.Errorf("%s: gradients differ from fp32 by %.3g of the largest", prec, e)
		}
	}
}
