package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer"
)

const tinyLM = `{"vocab_size": 11, "d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 12, "max_len": 8,
	"causal": true, "task": "lm", "pad_id": 0 %s, "mixer": {"kind": "cummean"}}`

const tinyCls = `{"vocab_size": 11, "d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 12, "max_len": 8,
	"task": "classify", "n_classes": 3, "pad_id": 0 %s, "mixer": {"kind": "cummean"}}`

const tinyTag = `{"vocab_size": 11, "d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 12, "max_len": 8,
	"task": "tag", "n_classes": 5, "pad_id": 0 %s, "mixer": {"kind": "cummean"}}`

const tinyEmbed = `{"vocab_size": 11, "d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 12, "max_len": 8,
	"task": "embed", "temperature": 0.5, "pad_id": 0 %s, "mixer": {"kind": "cummean"}}`

// testBatch returns tokens [B,T] with a padded tail in sequence 1 and
// targets with some ignored (−1) positions.
func testBatch(c *Config, B, T int, seed uint64) (tokens, targets []int32) {
	rng := rand.New(rand.NewPCG(seed, 3))
	tokens = make([]int32, B*T)
	for i := range tokens {
		tokens[i] = int32(1 + rng.IntN(c.VocabSize-1))
	}
	if B > 1 {
		tokens[2*T-1], tokens[2*T-2] = 0, 0
	}
	if c.Task == "classify" {
		targets = make([]int32, B)
		for i := range targets {
			targets[i] = int32(rng.IntN(c.NClasses))
		}
		return tokens, targets
	}
	if c.Task == "embed" { // rows 0…B/2−1 are anchors, their positives the rows B/2 on
		targets = make([]int32, B)
		for i := range targets {
			targets[i] = -1
			if i < B/2 {
				targets[i] = int32(i + B/2)
			}
		}
		return tokens, targets
	}
	targets = make([]int32, B*T)
	for i := range targets {
		targets[i] = int32(rng.IntN(c.HeadOut()))
	}
	targets[1] = -1
	return tokens, targets
}

// newTestModel builds a float64 model with GPT-2 init plus noise, so
// biases and LayerNorm gains are not trivially 0 and 1.
func newTestModel(t *testing.T, js string) *Model[float64] {
	t.Helper()
	m, err := New[float64](testConfig(js))
	if err != nil {
		t.Fatal(err)
	}
	m.Init(1)
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range m.Params {
		m.Params[i] += 0.2 * rng.NormFloat64()
	}
	return m
}

func TestModelFiniteDifferences(t *testing.T) {
	for _, c := range []struct {
		name, js string
		headRows int // headChunkRows: the fused head's chunk (0: the rule)
	}{
		{"lm causal pad", fmt.Sprintf(tinyLM, ""), 0},
		{"lm head chunks smoothing", fmt.Sprintf(tinyLM, `, "train": {"label_smoothing": 0.1}`), 5},
		{"lm checkpoint ff_chunks", fmt.Sprintf(tinyLM, `, "checkpoint": true, "ff_chunks": 5`), 0},
		{"classify pad", fmt.Sprintf(tinyCls, ""), 0},
		{"classify checkpoint", fmt.Sprintf(tinyCls, `, "checkpoint": true, "ff_chunks": 2`), 0},
		{"classify pool first", fmt.Sprintf(tinyCls, `, "pool": "first"`), 0},
		{"lm dropout", fmt.Sprintf(tinyLM, `, "dropout": 0.3`), 0},
		{"tag pad", fmt.Sprintf(tinyTag, ""), 0},
		{"embed pad", fmt.Sprintf(tinyEmbed, ""), 0},
		{"embed first checkpoint", fmt.Sprintf(tinyEmbed, `, "pool": "first", "checkpoint": true`), 0},
		{"tag checkpoint ff_chunks", fmt.Sprintf(tinyTag, `, "checkpoint": true, "ff_chunks": 3`), 0},
		{"classify dropout checkpoint ff_chunks", fmt.Sprintf(tinyCls, `, "dropout": 0.5, "checkpoint": true, "ff_chunks": 2`), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func(r int) { headChunkRows = r }(headChunkRows)
			headChunkRows = c.headRows
			m := newTestModel(t, c.js)
			m.Train = true // a training forward: dropout, where configured, with a fixed mask
			B, T := 2, 6
			if m.Config.Task == "embed" {
				B = 6 // three anchors: each scores its positive against 4 other rows
			}
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
				w, g := m.ParamAt(i), slices.Clone(m.Grad(i))
				checkFD(t, s.Name, w, g, loss, rng, 6, 1e-6)
			}
		})
	}
}

// checkFD compares grad with central differences of loss at up to n
// random entries of v. The error is relative to max(max|grad|, 1e-6).
func checkFD(t *testing.T, name string, v, grad []float64, loss func() float64, rng *rand.Rand, n int, tol float64) {
	t.Helper()
	const h = 1e-5
	scale := 1e-6
	for _, g := range grad {
		scale = math.Max(scale, math.Abs(g))
	}
	idx := rng.Perm(len(v))
	if len(idx) > n {
		idx = idx[:n]
	}
	for _, i := range idx {
		old := v[i]
		v[i] = old + h
		lp := loss()
		v[i] = old - h
		lm := loss()
		v[i] = old
		fd := (lp - lm) / (2 * h)
		if e := math.Abs(fd-grad[i]) / scale; e > tol {
			t.Errorf("%s[%d]: analytic %.10g, numeric %.10g (rel err %.3g > %.3g)", name, i, grad[i], fd, e, tol)
			return
		}
	}
}

// TestCheckpointIdentical checks that gradient checkpointing gives bitwise
// the gradients of the plain model, and that its plan is smaller.
func TestCheckpointIdentical(t *testing.T) {
	for _, js := range []string{tinyLM, tinyCls} {
		plain := newTestModel(t, fmt.Sprintf(js, ""))
		ck := newTestModel(t, fmt.Sprintf(js, `, "checkpoint": true`))
		const B, T = 2, 7
		tokens, targets := testBatch(plain.Config, B, T, 9)
		var grads [2][]float64
		var losses [2]float64
		for k, m := range []*Model[float64]{plain, ck} {
			l, err := m.Forward(tokens, targets, B, T)
			if err != nil {
				t.Fatal(err)
			}
			m.ZeroGrad()
			m.Backward()
			grads[k], losses[k] = m.Grads, l
		}
		if losses[0] != losses[1] {
			t.Errorf("loss %v with checkpointing, %v without", losses[1], losses[0])
		}
		for i := range grads[0] {
			if grads[0][i] != grads[1][i] {
				t.Fatalf("grad %d: %v with checkpointing, %v without", i, grads[1][i], grads[0][i])
			}
		}
		pp, pc := plain.Plan(B, T), ck.Plan(B, T)
		if pc.ActElems >= pp.ActElems {
			t.Errorf("checkpoint plan %d activation elements, plain %d", pc.ActElems, pp.ActElems)
		}
	}
}

// TestFFChunksSame checks that chunking the feed-forward changes neither
// the loss nor the gradients (beyond rounding) and shrinks the plan.
func TestFFChunksSame(t *testing.T) {
	a := newTestModel(t, fmt.Sprintf(tinyLM, ""))
	b := newTestModel(t, fmt.Sprintf(tinyLM, `, "ff_chunks": 4`))
	const B, T = 2, 8
	tokens, targets := testBatch(a.Config, B, T, 4)
	la, _ := a.Forward(tokens, targets, B, T)
	a.Backward()
	lb, _ := b.Forward(tokens, targets, B, T)
	b.Backward()
	if math.Abs(la-lb) > 1e-13 {
		t.Errorf("loss %v chunked, %v plain", lb, la)
	}
	for i := range a.Grads {
		if math.Abs(a.Grads[i]-b.Grads[i]) > 1e-13 {
			t.Fatalf("grad %d: %v chunked, %v plain", i, b.Grads[i], a.Grads[i])
		}
	}
	if pa, pb := a.Plan(64, 8), b.Plan(64, 8); pb.Bytes() >= pa.Bytes() {
		t.Errorf("ff_chunks plan %d bytes, plain %d", pb.Bytes(), pa.Bytes())
	}
}

// TestBackwardAccumulates checks that a second Backward doubles the
// gradients and that inputs are not modified.
func TestBackwardAccumulates(t *testing.T) {
	m := newTestModel(t, fmt.Sprintf(tinyCls, ""))
	tokens, targets := testBatch(m.Config, 2, 5, 3)
	tc, gc := slices.Clone(tokens), slices.Clone(targets)
	pc := slices.Clone(m.Params)
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
	if !slices.Equal(tc, tokens) || !slices.Equal(gc, targets) || !slices.Equal(pc, m.Params) {
		t.Error("forward/backward modified tokens, targets or parameters")
	}
}

// TestPadPooling checks that in classify, changing padded tokens changes
// nothing: they are neither keys nor pooled.
func TestPadPooling(t *testing.T) {
	for _, pool := range []string{"mean", "first"} {
		t.Run(pool, func(t *testing.T) { testPadPooling(t, pool) })
	}
}

func testPadPooling(t *testing.T, pool string) {
	m := newTestModel(t, fmt.Sprintf(tinyCls, `, "pool": "`+pool+`"`))
	tokens, targets := testBatch(m.Config, 2, 6, 3)
	l1, _ := m.Forward(tokens, targets, 2, 6)
	logits := slices.Clone(m.Logits())
	// Make more of sequence 0 padding, then compare with a shorter batch.
	tokens[4], tokens[5] = 0, 0
	l2, _ := m.Forward(tokens, targets, 2, 6)
	if l1 == l2 {
		t.Error("padding had no effect on the loss")
	}
	short := []int32{tokens[0], tokens[1], tokens[2], tokens[3]}
	m.Forward(short, targets[:1], 1, 4)
	want := slices.Clone(m.Logits())
	m.Forward(tokens, targets, 2, 6)
	for k := range want {
		if math.Abs(m.Logits()[k]-want[k]) > 1e-12 {
			t.Fatalf("logit %d with padded tail %v, without %v", k, m.Logits()[k], want[k])
		}
	}
	_ = logits
}

func TestPassSeed(t *testing.T) {
	seen := map[uint64]bool{}
	for step := 0; step < 4; step++ {
		for layer := 0; layer < 4; layer++ {
			s := PassSeed(7, step, layer)
			if seen[s] {
				t.Fatalf("PassSeed(7,%d,%d) repeats", step, layer)
			}
			seen[s] = true
			if s != PassSeed(7, step, layer) {
				t.Fatal("PassSeed not deterministic")
			}
		}
	}
}

func TestCheckBatch(t *testing.T) {
	lm := testConfig(fmt.Sprintf(tinyLM, ""))
	cls := testConfig(fmt.Sprintf(tinyCls, ""))
	for _, c := range []struct {
		cfg     *Config
		tok     []int32
		tgt     []int32
		B, T    int
		wantErr bool
	}{
		{lm, []int32{1, 2, 3, 4}, []int32{1, 2, -1, 4}, 2, 2, false},
		{lm, []int32{1, 2, 3, 4}, nil, 2, 2, false},
		{lm, []int32{1, 2, 3}, nil, 2, 2, true},              // wrong length
		{lm, []int32{1, 2, 3, 11}, nil, 2, 2, true},          // token ≥ vocab
		{lm, []int32{1, 2, 3, -1}, nil, 2, 2, true},          // negative token
		{lm, make([]int32, 9), nil, 1, 9, true},              // T > max_len
		{lm, []int32{1, 2, 3, 4}, []int32{1, 2}, 2, 2, true}, // lm targets [B]
		{lm, []int32{1, 2, 3, 4}, []int32{1, 2, -2, 4}, 2, 2, true},
		{cls, []int32{1, 2, 3, 4}, []int32{0, 2}, 2, 2, false},
		{cls, []int32{1, 2, 3, 4}, []int32{0, 3}, 2, 2, true}, // class ≥ n_classes
	} {
		err := c.cfg.CheckBatch(c.tok, c.tgt, c.B, c.T)
		if (err != nil) != c.wantErr {
			t.Errorf("CheckBatch(%v, %v, %d, %d) = %v, want error %v", c.tok, c.tgt, c.B, c.T, err, c.wantErr)
		}
	}
}

// TestThreadsChangeReplans: mixer scratch is sized per thread, so raising
// the thread budget between steps (Model.Threads, or the default it falls
// back to) must re-plan instead of indexing past the scratch of the old
// plan.
func TestThreadsChangeReplans(t *testing.T) {
	for _, kind := range []string{"full", "aft_local", "fnet", "entmax"} {
		cfg := `{"vocab_size": 16, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 64,
			"task": "lm", "mixer": {"kind": "` + kind + `"}}`
		c, err := ParseConfig([]byte(cfg))
		if err != nil {
			t.Fatal(err)
		}
		m, err := New[float32](c)
		if err != nil {
			t.Fatal(err)
		}
		m.Init(1)
		tokens := make([]int32, 2*64)
		targets := make([]int32, 2*64)
		old := parallel.SetThreads(1)
		for _, tc := range []struct{ model, def int }{{0, 1}, {0, 4}, {1, 4}, {5, 4}} {
			m.Threads = tc.model
			parallel.SetThreads(tc.def)
			if _, err := m.Forward(tokens, targets, 2, 64); err != nil {
				t.Fatal(err)
			}
			if want := mixer.Budget(tc.model); m.plan.Threads != want {
				t.Errorf("%s: Threads %d, default %d: plan for %d threads, want %d", kind, tc.model, tc.def, m.plan.Threads, want)
			}
			m.Backward()
		}
		parallel.SetThreads(old)
	}
}
