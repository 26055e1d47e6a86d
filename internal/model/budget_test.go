package model

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestNeedOfEqualsModel: the need computed from the config alone equals
// the plan and parameter count of the built model.
func TestNeedOfEqualsModel(t *testing.T) {
	for _, mix := range []string{`{"kind": "full"}`, `{"kind": "aft_full"}`, `{"kind": "lsh", "bucket_size": 8}`, `{"kind": "fnet"}`} {
		c, err := ParseConfig([]byte(fmt.Sprintf(`{"vocab_size": 50, "d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32,
			"max_len": 64, "task": "lm", "causal": %v, "mixer": %s}`, !strings.Contains(mix, "fnet"), mix)))
		if err != nil {
			t.Fatal(err)
		}
		m, err := New[float32](c)
		if err != nil {
			t.Fatal(err)
		}
		m.Threads = 2
		n, err := NeedOf(c, 3, 64, 2, true)
		if err != nil {
			t.Fatal(err)
		}
		if n.NumParams != m.NumParams() || n.Plan.Bytes() != m.Plan(3, 64).Bytes() || n.ParamBytes() != m.ParamBytes() {
			t.Errorf("%s: need %d params, plan %d B; model %d params, plan %d B", mix, n.NumParams, n.Plan.Bytes(), m.NumParams(), m.Plan(3, 64).Bytes())
		}
	}
}

// TestEvalBatch: evaluation during training runs in batches whose forward
// fits in the training pass's slabs. With a large vocabulary (logits that
// only a forward without targets keeps) the batch is split; after a
// training step and such an evaluation the model's slabs are exactly the
// training plan, which is also the run's need. A small vocabulary keeps
// the training batch.
func TestEvalBatch(t *testing.T) {
	cfg := func(V int) *Config {
		c, err := ParseConfig([]byte(fmt.Sprintf(`{"vocab_size": %d, "d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32,
			"max_len": 2048, "task": "lm", "causal": true, "mixer": {"kind": "full"}, "train": {}}`, V)))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	const B, T = 4, 512 // 2048 rows: the head's chunks of 1024 rows hold two sequences' logits
	c := cfg(2048)
	m, err := New[float32](c)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(1)
	m.Threads = 2
	eb := m.EvalBatch(B, T)
	tp, fits, whole := m.Plan(B, T), m.ForwardPlan(eb, T), m.ForwardPlan(B, T)
	if eb >= B || B%eb != 0 || fits.ActElems > tp.ActElems || fits.GradElems > tp.GradElems || (whole.ActElems <= tp.ActElems && whole.GradElems <= tp.GradElems) {
		t.Fatalf("EvalBatch(%d, %d) = %d: forward %d+%d elements, training %d+%d, the whole batch's forward %d+%d",
			B, T, eb, fits.ActElems, fits.GradElems, tp.ActElems, tp.GradElems, whole.ActElems, whole.GradElems)
	}
	tokens, targets := testBatch(c, B, T, 2)
	if _, err := NewTrainer(m).Step(tokens, targets, B, T); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Forward(tokens[:eb*T], nil, eb, T); err != nil {
		t.Fatal(err)
	}
	n, err := NeedOf(c, B, T, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.WorkspaceBytes(); got != tp.Bytes() || n.PassBytes() != got || n.Bytes() != got+n.ParamBytes()+n.SaveBytes() {
		t.Errorf("slabs %d bytes after training and evaluation; training plan %d, need %d (in all %d)", got, tp.Bytes(), n.PassBytes(), n.Bytes())
	}
	// One sequence of 2048 tokens has more logits than a training chunk of
	// 1024 rows: the evaluation then grows the slabs, and the need says so.
	if n, err := NeedOf(c, 1, 2048, 2, true); err != nil || n.PassBytes() <= n.Plan.Bytes() ||
		!strings.Contains(strings.Join(n.Largest(10), "; "), "the evaluation forward's logits") {
		t.Errorf("T=2048: need %d bytes for the passes, %d for training (%v); largest %q", n.PassBytes(), n.Plan.Bytes(), err, n.Largest(10))
	}
	small, err := New[float32](cfg(50))
	if err != nil {
		t.Fatal(err)
	}
	if eb := small.EvalBatch(B, T); eb != B {
		t.Errorf("vocabulary 50: EvalBatch(%d, %d) = %d, want the training batch", B, T, eb)
	}
}

// TestCheckTrainBudget: a config over the budget is refused with the
// largest tensors named and changes that fit, each of which does fit.
func TestCheckTrainBudget(t *testing.T) {
	c, err := ParseConfig([]byte(`{"vocab_size": 256, "d_model": 64, "n_heads": 4, "n_layers": 2, "d_ff": 256,
		"max_len": 65536, "task": "lm", "causal": true, "mixer": {"kind": "full"}, "train": {"batch_size": 64}}`))
	if err != nil {
		t.Fatal(err)
	}
	const budget = 4 << 30
	err = CheckTrainBudget(c, 2, budget)
	be, ok := err.(*BudgetError)
	if !ok {
		t.Fatalf("want a *BudgetError, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"over the memory budget of 4.00 GiB", "largest: ", "batch_size ", "max_len "} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	if be.Need.Bytes() <= budget {
		t.Errorf("need %d within the budget", be.Need.Bytes())
	}
	// Each suggested change fits, and one step more does not.
	for _, f := range be.Fits {
		var k string
		var v int
		if _, err := fmt.Sscanf(f, "%s %d", &k, &v); err != nil {
			continue // "checkpoint": true
		}
		c2 := *c
		tc := *c.Train
		c2.Train = &tc
		switch k {
		case "batch_size":
			tc.BatchSize = v
		case "max_len":
			c2.MaxLen, tc.SeqLen = v, v
		}
		if err := CheckTrainBudget(&c2, 2, budget); err != nil {
			t.Errorf("suggested %s does not fit: %v", f, err)
		}
		switch k {
		case "batch_size":
			tc.BatchSize = v + 1
		case "max_len":
			c2.MaxLen, tc.SeqLen = v+64, v+64
		}
		if err := CheckTrainBudget(&c2, 2, budget); err == nil {
			t.Errorf("%s is not the largest that fits", f)
		}
	}
	// A budget between the checkpointed and the plain need suggests
	// checkpointing.
	ck := *c
	ck.Checkpoint = true
	small := *c.Train
	small.BatchSize = 2
	c.Train, ck.Train = &small, &small
	plain, _ := TrainNeed(c, 2)
	ckNeed, _ := TrainNeed(&ck, 2)
	if err := CheckTrainBudget(c, 2, (plain.Bytes()+ckNeed.Bytes())/2); err == nil || !strings.Contains(err.Error(), `"checkpoint": true`) {
		t.Errorf("checkpointing not suggested: %v", err)
	}
	if err := CheckTrainBudget(c, 2, 1<<50); err != nil {
		t.Errorf("a large budget refused: %v", err)
	}
	if err := CheckTrainBudget(c, 2, 0); err != nil {
		t.Errorf("no budget refused: %v", err)
	}
}

// TestStateBytesBound: every decoding kind's state bound holds after n
// positions, and is at most twice the state plus 64 positions' keys and
// values.
func TestStateBytesBound(t *testing.T) {
	const maxLen = 300
	for _, mix := range []string{`{"kind": "full"}`, `{"kind": "strided", "block": 16}`, `{"kind": "topk", "k": 4}`,
		`{"kind": "aft_full"}`, `{"kind": "aft_local", "window": 8}`, `{"kind": "aft_simple"}`, `{"kind": "lsh", "bucket_size": 16, "n_hashes": 2}`} {
		c, err := ParseConfig([]byte(fmt.Sprintf(`{"vocab_size": 17, "d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 16,
			"max_len": %d, "causal": true, "task": "lm", "mixer": %s}`, maxLen, mix)))
		if err != nil {
			t.Fatal(err)
		}
		m, err := New[float32](c)
		if err != nil {
			t.Fatal(err)
		}
		m.Init(1)
		d, err := m.NewDecoding(maxLen)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		logits := make([]float32, c.VocabSize)
		for n := 1; n <= maxLen; n++ {
			if err := m.Decode(d, []int32{int32(rng.IntN(c.VocabSize))}, logits); err != nil {
				t.Fatal(err)
			}
			if n%50 != 0 {
				continue
			}
			bound, ok := m.StateBytes(maxLen, n)
			got := d.Bytes()
			if !ok || got > bound || bound > 2*got+2*64*4*int64(c.DModel*c.NLayers) {
				t.Errorf("%s: after %d positions the state holds %d bytes, bound %d (ok %v)", mix, n, got, bound, ok)
			}
		}
	}
}
