package model

import (
	"fmt"
	"math"
	"testing"

	"github.com/tokenmix/tokenmix/mixer/registry"
)

// budgetDependentGrads are the kinds whose gradients depend on the thread
// budget in their last bits (see Model.Threads): the row-rule engine
// (entmax, topk) sums a head shared by two threads' work from private
// accumulators, and aft_conv sums its rel_bias gradient per thread.
var budgetDependentGrads = map[string]bool{"entmax": true, "topk": true, "aft_conv": true}

// budgetRun is what TestThreadBudget compares: the logits and gradients
// of one Forward and Backward, and the logits of decoding the same tokens
// (for kinds that decode).
type budgetRun struct {
	logits, grads, decoded []float32
}

// runBudget builds the float32 model of config c with Init(1) and the
// thread budget th, and runs it on tokens [B,T].
func runBudget(t *testing.T, c *Config, th int, tokens, targets []int32, B, T int) budgetRun {
	t.Helper()
	m, err := New[float32](c)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(1)
	m.Threads = th
	if _, err := m.Forward(tokens, nil, B, T); err != nil {
		t.Fatal(err)
	}
	r := budgetRun{logits: append([]float32(nil), m.Logits()...)}
	if _, err := m.Forward(tokens, targets, B, T); err != nil {
		t.Fatal(err)
	}
	if m.Plan(B, T).Threads != th {
		t.Fatalf("plan for %d threads, want %d", m.Plan(B, T).Threads, th)
	}
	m.Backward()
	r.grads = append([]float32(nil), m.Grads...)
	if m.CanDecode() != nil {
		return r
	}
	if c.Precision == "bf16" { // decoding on the packed weights of bf16 inference
		if err := m.UseBF16(); err != nil {
			t.Fatal(err)
		}
	}
	V := c.VocabSize
	d, err := m.NewDecoding(T)
	if err != nil {
		t.Fatal(err)
	}
	// A prompt of 5 positions, then one at a time.
	out := make([]float32, T*V)
	for pos, n := 0, 5; pos < T; pos, n = pos+n, 1 {
		if err := m.Decode(d, tokens[pos:pos+n], out[pos*V:(pos+n)*V]); err != nil {
			t.Fatal(err)
		}
	}
	r.decoded = out
	return r
}

// differ counts the elements of a and b with different bits.
func differ(a, b []float32) int {
	n := 0
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			n++
		}
	}
	return n
}

// TestThreadBudget: for every mixer kind, in fp32 and bf16, a model's
// logits and its decoded logits are bitwise the same whether it runs on 1,
// 2 or 3 threads (Model.Threads), and so are its gradients except for the
// kinds in budgetDependentGrads. The shapes split every loop unevenly
// (B·H·blocks not a multiple of the thread count).
func TestThreadBudget(t *testing.T) {
	for _, k := range registry.All() {
		for _, prec := range []string{"fp32", "bf16"} {
			t.Run(k.Name+"/"+prec, func(t *testing.T) {
				js := fmt.Sprintf(`{"vocab_size": 32, "d_model": 64, "n_heads": 4, "n_layers": 2, "d_ff": 128,
					"max_len": 128, "causal": %v, "precision": %q, "task": "lm", "mixer": {"kind": %q%s}}`,
					k.Causal, prec, k.Name, kindOpts[k.Name])
				c, err := ParseConfig([]byte(js))
				if err != nil {
					t.Fatal(err)
				}
				B, T := 1, 120
				tokens, targets := testBatch(c, B, T, 3)
				want := runBudget(t, c, 1, tokens, targets, B, T)
				for _, th := range []int{2, 3} {
					got := runBudget(t, c, th, tokens, targets, B, T)
					if n := differ(got.logits, want.logits); n > 0 {
						t.Errorf("%d threads: %d of %d logits differ from 1 thread's", th, n, len(want.logits))
					}
					if n := differ(got.decoded, want.decoded); n > 0 {
						t.Errorf("%d threads: %d of %d decoded logits differ from 1 thread's", th, n, len(want.decoded))
					}
					if n := differ(got.grads, want.grads); n > 0 && !budgetDependentGrads[k.Name] {
						t.Errorf("%d threads: %d of %d gradients differ from 1 thread's", th, n, len(want.grads))
					}
				}
			})
		}
	}
}
