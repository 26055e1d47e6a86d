package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tokenmix/tokenmix/mixer/registry"
)

// revPair builds two float64 models of config js with identical parameters:
// one reconstructs block inputs in backward, the other (revKeep) keeps them.
func revPair(t *testing.T, js string) (rec, keep *Model[float64]) {
	t.Helper()
	rec = newTestModel(t, js)
	kc := testConfig(js)
	kc.revKeep = true
	keep, err := New[float64](kc)
	if err != nil {
		t.Fatal(err)
	}
	copy(keep.Params, rec.Params)
	return rec, keep
}

// maxRelDiff is max|a−b| / max(max|b|, floor). The floor keeps gradients
// that are zero in exact arithmetic (attention key biases: softmax ignores a
// constant shift) from dividing rounding noise by rounding noise.
func maxRelDiff[F, G float32 | float64](a []F, b []G, floor float64) float64 {
	num, den := 0.0, floor
	for i := range b {
		num = math.Max(num, math.Abs(float64(a[i])-float64(b[i])))
		den = math.Max(den, math.Abs(float64(b[i])))
	}
	return num / den
}

// gradScale is the largest gradient entry of m.
func gradScale[F float32 | float64](m *Model[F]) float64 {
	var s float64
	for _, g := range m.Grads {
		s = math.Max(s, math.Abs(float64(g)))
	}
	return s
}

// compareRev runs forward and backward on both models and checks that the
// losses are identical and every parameter gradient agrees to tol relative.
func compareRev(t *testing.T, rec, keep *Model[float64], B, T int, seed uint64, tol float64) {
	t.Helper()
	tokens, targets := testBatch(rec.Config, B, T, seed)
	var losses [2]float64
	for k, m := range []*Model[float64]{rec, keep} {
		l, err := m.Forward(tokens, targets, B, T)
		if err != nil {
			t.Fatal(err)
		}
		m.ZeroGrad()
		m.Backward()
		losses[k] = l
	}
	if losses[0] != losses[1] {
		t.Errorf("loss %v reconstructing, %v keeping", losses[0], losses[1])
	}
	floor := 1e-6 * gradScale(keep)
	for i, s := range rec.Specs {
		if e := maxRelDiff(rec.Grad(i), keep.Grad(i), floor); e > tol {
			t.Errorf("%s: reconstructed gradient differs from kept by %.3g relative (> %.3g)", s.Name, e, tol)
		}
	}
}

// TestReversibleReconstruction checks that gradients computed by
// reconstructing block inputs equal those of the same reversible network
// that keeps every block's inputs and internals, to 1e-8 relative (float64).
// Tensors are compared relative to their own largest entry, floored at 1e-6
// of the model's largest gradient.
func TestReversibleReconstruction(t *testing.T) {
	for _, c := range []struct{ name, js string }{
		{"lm", fmt.Sprintf(tinyLM, `, "reversible": true`)},
		{"lm ff_chunks", fmt.Sprintf(tinyLM, `, "reversible": true, "ff_chunks": 3`)},
		{"classify", fmt.Sprintf(tinyCls, `, "reversible": true`)},
		{"classify 1 layer", fmt.Sprintf(tinyCls, `, "reversible": true, "n_layers": 1`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, keep := revPair(t, c.js)
			compareRev(t, rec, keep, 2, 7, 3, 1e-8)
		})
	}
}

// kindOpts are the options of kinds that have required options, sized for
// revKindConfig.
var kindOpts = map[string]string{
	"strided": `, "block": 3`,
	"fixed":   `, "block": 3, "summary": 1`,
}

// revKindConfig is a tiny reversible config for mixer kind name, causal if
// the kind supports it, with pad_id if it honours key padding.
func revKindConfig(name string, causal, pad bool, task string) string {
	js := `{"vocab_size": 11, "d_model": 8, "n_heads": 2, "n_layers": 3, "d_ff": 12, "max_len": 8, "reversible": true`
	js += fmt.Sprintf(`, "causal": %v, "mixer": {"kind": %q%s}`, causal, name, kindOpts[name])
	if pad {
		js += `, "pad_id": 0`
	}
	if task == "classify" {
		return js + `, "task": "classify", "n_classes": 3}`
	}
	return js + `, "task": "lm"}`
}

// TestReversibleEveryMixer runs the reconstruction check for every
// registered mixer kind, lm and classify.
func TestReversibleEveryMixer(t *testing.T) {
	for _, k := range registry.All() {
		for _, task := range []string{"lm", "classify"} {
			t.Run(k.Name+"/"+task, func(t *testing.T) {
				js := revKindConfig(k.Name, k.Causal && (task == "lm" || !k.Bidirectional), k.KeyPadding, task)
				if _, err := ParseConfigWith([]byte(js), testLookup); err != nil {
					t.Fatalf("config (add the kind's required options to kindOpts): %v", err)
				}
				rec, keep := revPair(t, js)
				compareRev(t, rec, keep, 2, 8, 5, 1e-8)
			})
		}
	}
}

// TestReversibleFiniteDifferences checks reversible gradients (with
// reconstruction) against central differences of the loss.
func TestReversibleFiniteDifferences(t *testing.T) {
	for _, c := range []struct{ name, js string }{
		{"lm", fmt.Sprintf(tinyLM, `, "reversible": true, "ff_chunks": 2`)},
		{"classify", fmt.Sprintf(tinyCls, `, "reversible": true`)},
		{"lm dropout", fmt.Sprintf(tinyLM, `, "reversible": true, "dropout": 0.3`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newTestModel(t, c.js)
			m.Train = true
			const B, T = 2, 6
			tokens, targets := testBatch(m.Config, B, T, 1)
			loss := func() float64 {
				l, err := m.Forward(tokens, targets, B, T)
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			loss()
			m.ZeroGrad()
			m.Backward()
			rng := rand.New(rand.NewPCG(2, 2))
			for i, s := range m.Specs {
				checkFD(t, s.Name, m.ParamAt(i), slices.Clone(m.Grad(i)), loss, rng, 6, 1e-6)
			}
		})
	}
}

// TestReversibleFloat32 checks that at 12 layers float32 gradients with
// reconstruction agree with the float64 kept-activation gradients to 1e-3
// relative per tensor, max|a−b|/max|b| over that tensor (GPT-2 init; full
// attention, and LSH attention whose buckets are re-hashed from the
// reconstructed inputs). As in TestTorchParity the denominator is floored at
// 1e-6 of the model's largest gradient, and only gradients that are zero in
// exact arithmetic (zeroGrad) are measured against 1e-3 of it.
func TestReversibleFloat32(t *testing.T) {
	if testing.Short() {
		t.Skip("12-layer models")
	}
	for _, tc := range []struct {
		mixer string
		T     int
	}{
		{`{"kind": "full"}`, 16},
		{`{"kind": "lsh", "bucket_size": 8, "n_hashes": 4}`, 128},
	} {
		js := fmt.Sprintf(`{"vocab_size": 32, "d_model": 32, "n_heads": 4, "n_layers": 12, "d_ff": 64, "max_len": %d,
			"causal": true, "task": "lm", "pad_id": 0, "reversible": true, "mixer": %s}`, tc.T, tc.mixer)
		c64 := testConfig(js)
		c64.revKeep = true
		m64, err := New[float64](c64)
		if err != nil {
			t.Fatal(err)
		}
		m64.Init(3)
		m32, err := New[float32](testConfig(js))
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range m64.Params {
			m32.Params[i] = float32(v)
		}
		const B = 2
		tokens, targets := testBatch(c64, B, tc.T, 7)
		l64, _ := m64.Forward(tokens, targets, B, tc.T)
		m64.Backward()
		l32, _ := m32.Forward(tokens, targets, B, tc.T)
		m32.Backward()
		if math.Abs(l32-l64) > 1e-4*math.Abs(l64) {
			t.Errorf("%s: loss float32 %v, float64 %v", tc.mixer, l32, l64)
		}
		worst, name, zworst := 0.0, "", 0.0
		gmax := gradScale(m64)
		for i, s := range m64.Specs {
			floor := 1e-6 * gmax
			if zeroGrad(s.Name, m64.Config.Mixer.Has("rope")) {
				// max|g| (against zeros with denominator 1).
				if r := maxRelDiff(m64.Grad(i), make([]float64, len(m64.Grad(i))), 1); r > 1e-9*gmax {
					t.Fatalf("%s: %s: float64 max|g| = %.3g is not ~0 (gmax %.3g): zeroGrad is wrong for this mixer", tc.mixer, s.Name, r, gmax)
				}
				floor = 1e-3 * gmax
			}
			e := maxRelDiff(m32.Grad(i), m64.Grad(i), floor)
			if zeroGrad(s.Name, m64.Config.Mixer.Has("rope")) {
				zworst = math.Max(zworst, e)
			} else if e > worst {
				worst, name = e, s.Name
			}
			if e > 1e-3 {
				t.Errorf("%s: %s: float32 reversible gradient differs by %.3g relative (> 1e-3)", tc.mixer, s.Name, e)
			}
		}
		t.Logf("%s, 12 layers: worst float32 gradient error per tensor %.3g (%s); zero-exact gradients vs 1e-3·gmax %.3g", tc.mixer, worst, name, zworst)
	}
}

// TestReversiblePlan checks that reversible activation memory does not grow
// with depth while the plain model's does.
func TestReversiblePlan(t *testing.T) {
	plan := func(layers int, rev bool) Plan {
		js := fmt.Sprintf(`{"vocab_size": 11, "d_model": 16, "n_heads": 2, "n_layers": %d, "d_ff": 64, "max_len": 32,
			"causal": true, "task": "lm", "reversible": %v, "mixer": {"kind": "full"}}`, layers, rev)
		m, err := New[float32](testConfig(js))
		if err != nil {
			t.Fatal(err)
		}
		return m.Plan(4, 32)
	}
	r2, r12 := plan(2, true), plan(12, true)
	p2, p12 := plan(2, false), plan(12, false)
	t.Logf("activation elements: reversible %d (2 layers) → %d (12); plain %d → %d", r2.ActElems, r12.ActElems, p2.ActElems, p12.ActElems)
	if float64(r12.ActElems) > 1.3*float64(r2.ActElems) {
		t.Errorf("reversible activations grow with depth: %d at 2 layers, %d at 12", r2.ActElems, r12.ActElems)
	}
	if p12.ActElems < 4*p2.ActElems {
		t.Errorf("plain activations should grow about linearly: %d at 2 layers, %d at 12", p2.ActElems, p12.ActElems)
	}
	if r12.ActElems >= p12.ActElems {
		t.Errorf("reversible plan %d not smaller than plain %d at 12 layers", r12.ActElems, p12.ActElems)
	}
}

// TestReversibleBackwardTwice checks that Backward leaves the forward state
// intact: a second call doubles the gradients.
func TestReversibleBackwardTwice(t *testing.T) {
	m := newTestModel(t, fmt.Sprintf(tinyLM, `, "reversible": true`))
	tokens, targets := testBatch(m.Config, 2, 5, 3)
	m.Forward(tokens, targets, 2, 5)
	m.ZeroGrad()
	m.Backward()
	g1 := slices.Clone(m.Grads)
	m.Backward()
	for i := range g1 {
		if math.Abs(m.Grads[i]-2*g1[i]) > 1e-12*(1+math.Abs(g1[i])) {
			t.Fatalf("grad %d: second backward gives %v, want %v", i, m.Grads[i], 2*g1[i])
		}
	}
}
