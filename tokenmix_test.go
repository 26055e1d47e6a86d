package tokenmix

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/run"
)

// tinyRun writes a run directory with randomly initialised weights for cfg
// (checkpoint at step 3) and returns its path.
func tinyRun(t testing.TB, cfg string, labels []string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	c, err := model.ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New[float32](c)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(11)
	d, err := run.Create(dir, []byte(cfg), run.Info{Task: c.Task, LabelNames: labels})
	if err != nil {
		t.Fatal(err)
	}
	tr := model.NewTrainer(m)
	tr.Opt.Step = 3
	if err := d.SaveTrainer(tr, run.State{Step: 3}, 1); err != nil {
		t.Fatal(err)
	}
	return dir
}

const (
	clsCfg = `{"vocab_size": 260, "d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32, "max_len": 40,
	 "task": "classify", "n_classes": 3, "pad_id": 256, "mixer": {"kind": "full"}, "train": {"seed": 2}}`
	lmCfg = `{"vocab_size": 256, "d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32, "max_len": 40,
	 "causal": true, "task": "lm", "mixer": {"kind": "full"}, "train": {"seed": 4}}`
	fnetCfg = `{"vocab_size": 256, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 40,
	 "task": "classify", "n_classes": 2, "mixer": {"kind": "fnet"}, "train": {}}`
	lshLMCfg = `{"vocab_size": 256, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 40,
	 "causal": true, "task": "lm", "mixer": {"kind": "lsh", "bucket_size": 4, "n_hashes": 2}, "train": {}}`
	lshClsCfg = `{"vocab_size": 260, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 40, "pad_id": 256,
	 "task": "classify", "n_classes": 2, "mixer": {"kind": "lsh", "bucket_size": 4, "n_hashes": 2}, "train": {}}`
	stridedCfg = `{"vocab_size": 260, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 40, "pad_id": 256,
	 "task": "classify", "n_classes": 2, "mixer": {"kind": "strided", "block": 4}, "train": {}}`
	convCfg = `{"vocab_size": 256, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 40,
	 "causal": true, "task": "lm", "mixer": {"kind": "aft_conv", "window": 5}, "train": {}}`
)

// randomSeqs returns n sequences of lengths 1…maxLen with tokens below
// vocab, from a fixed seed.
func randomSeqs(n, maxLen, vocab int, seed uint64) [][]int32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([][]int32, n)
	for i := range out {
		s := make([]int32, 1+rng.IntN(maxLen))
		for j := range s {
			s[j] = int32(rng.IntN(vocab))
		}
		out[i] = s
	}
	return out
}

// maxRel is max|a−b| / max|b|.
func maxRel(a, b []float32) float64 {
	var d, m float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-b[i])))
		m = max(m, math.Abs(float64(b[i])))
	}
	return d / m
}

// TestLogitsEqualForward: Logits on one sequence equals the model's own
// forward exactly.
func TestLogitsEqualForward(t *testing.T) {
	for _, cfg := range []string{clsCfg, lmCfg} {
		dir := tinyRun(t, cfg, nil)
		m, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		net, err := run.LoadModel(dir, -1)
		if err != nil {
			t.Fatal(err)
		}
		net.Step = 3
		seq := m.Encode("hello, tokenmix")
		if _, err := net.Forward(seq, nil, 1, len(seq)); err != nil {
			t.Fatal(err)
		}
		got, err := m.Logits(context.Background(), [][]int32{seq})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Data, net.Logits()) {
			t.Errorf("%s: Logits differ from the model's forward", m.Config().Task)
		}
	}
}

// batchDiff is max|a−b| / max(1, max|b|): the bound on batching that the
// package doc states, absolute (in nats) for logits below 1, relative
// above.
func batchDiff(a, b []float32) float64 {
	var d, m float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-b[i])))
		m = max(m, math.Abs(float64(b[i])))
	}
	return d / max(m, 1)
}

// TestBatchingInvariance: a call on many sequences of different lengths
// gives each the result it gets alone, within 1e-6 (batchDiff), for padding
// classifiers, causal lms, a kind without key padding (FNet) and one whose
// results depend on the padded length (LSH), both grouped by length.
//
// NOTE: the bound is not relative to the largest logit. Padding leaves the
// attention mixers bitwise unchanged (sparse.TestPadAppendBitwise), but a
// product of at most 16 rows (a classifier's head on one sequence, every
// projection of a sequence of at most 16 tokens) runs as dot products in
// kernels.Gemm and a batch through the packed kernel, whose sums round
// differently. These freshly initialised classifiers have logits near 1e-3
// made of products whose magnitudes add up to 40–90 times more, so an
// ulp-level difference of those sums (1.3e-9 for strided's sequence 17,
// on AVX2) is 1.3e-6 of the largest logit; against max(1, max|logit|) it
// is 1.3e-9, and probabilities move by less than that.
func TestBatchingInvariance(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range []string{clsCfg, lmCfg, fnetCfg, lshLMCfg, lshClsCfg, stridedCfg, convCfg} {
		m, err := Load(tinyRun(t, cfg, nil))
		if err != nil {
			t.Fatal(err)
		}
		seqs := randomSeqs(23, 40, 256, 3)
		all, err := m.Logits(ctx, seqs)
		if err != nil {
			t.Fatal(err)
		}
		row := len(all.Data) / len(seqs)
		for i, s := range seqs {
			one, err := m.Logits(ctx, [][]int32{s})
			if err != nil {
				t.Fatal(err)
			}
			n := len(one.Data)
			if r := batchDiff(all.Data[i*row:i*row+n], one.Data); r > 1e-6 {
				t.Errorf("%s/%s: sequence %d (length %d): batched differs by %.3g", m.Config().Task, m.Config().Mixer, i, len(s), r)
			}
			if m.Config().Task == "lm" {
				for _, v := range all.Data[i*row+n : (i+1)*row] {
					if !math.IsNaN(float64(v)) {
						t.Fatalf("lm: position past sequence %d's end holds %v, want NaN", i, v)
					}
				}
			}
		}
	}
}

func TestClassifyScore(t *testing.T) {
	ctx := context.Background()
	m, err := Load(tinyRun(t, clsCfg, []string{"bird", "cat", "dog"}))
	if err != nil {
		t.Fatal(err)
	}
	seqs := [][]int32{m.Encode("a"), m.Encode("a longer input")}
	preds, err := m.Classify(ctx, seqs)
	if err != nil {
		t.Fatal(err)
	}
	lg, _ := m.Logits(ctx, seqs)
	for i, p := range preds {
		var sum float64
		for _, v := range p.Probs {
			sum += float64(v)
		}
		best := 0
		for k := range 3 {
			if lg.Data[i*3+k] > lg.Data[i*3+best] {
				best = k
			}
		}
		if math.Abs(sum-1) > 1e-6 || p.Label != best || p.Name != []string{"bird", "cat", "dog"}[best] {
			t.Errorf("prediction %d: %+v (logits %v)", i, p, lg.Data[i*3:i*3+3])
		}
	}
	if _, err := m.Score(ctx, seqs); err == nil || !strings.Contains(err.Error(), "causal lm") {
		t.Errorf("Score on a classifier: %v", err)
	}

	lm, err := Load(tinyRun(t, lmCfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	text := lm.Encode("to be or not to be")
	sc, err := lm.Score(ctx, [][]int32{text})
	if err != nil {
		t.Fatal(err)
	}
	lgl, _ := lm.Logits(ctx, [][]int32{text})
	var nats float64
	for t1 := 1; t1 < len(text); t1++ {
		row := lgl.Data[(t1-1)*256 : t1*256]
		nats -= data.LogSoftmaxAt(row, int(text[t1]))
	}
	s := sc[0]
	if len(s.LogProbs) != len(text)-1 || math.Abs(s.Nats-nats) > 1e-9 || math.Abs(s.BitsPerToken-nats/float64(len(text)-1)/math.Ln2) > 1e-12 {
		t.Errorf("score %+v, want nats %v", s, nats)
	}
	if _, err := lm.Classify(ctx, [][]int32{text}); err == nil || !strings.Contains(err.Error(), "classifier") {
		t.Errorf("Classify on an lm: %v", err)
	}
}

// TestInputErrors: every bad input is an error naming the sequence and the
// limit, never a panic.
func TestInputErrors(t *testing.T) {
	ctx := context.Background()
	m, err := Load(tinyRun(t, clsCfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	lm, err := Load(tinyRun(t, lmCfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	long := make([]int32, 41)
	for _, c := range []struct {
		name string
		call func() error
		want string
	}{
		{"no sequences", func() error { _, err := m.Classify(ctx, nil); return err }, "no sequences"},
		{"empty", func() error { _, err := m.Classify(ctx, [][]int32{{1}, {}}); return err }, "sequence 1 is empty"},
		{"too long", func() error { _, err := m.Logits(ctx, [][]int32{long}); return err }, "sequence 0 has 41 tokens, longer than max_len 40"},
		{"token too large", func() error { _, err := m.Classify(ctx, [][]int32{{1, 2, 260}}); return err }, "sequence 0, position 2: token 260 outside the vocabulary [0, 260)"},
		{"negative token", func() error { _, err := lm.Score(ctx, [][]int32{{5, -1}}); return err }, "token -1 outside"},
		{"score one token", func() error { _, err := lm.Score(ctx, [][]int32{{5, 6}, {5}}); return err }, "sequence 1: 1 token"},
		{"classify an lm", func() error { _, err := lm.Classify(ctx, [][]int32{{1}}); return err }, `task is "lm"`},
		{"score a classifier", func() error { _, err := m.Score(ctx, [][]int32{{1, 2}}); return err }, `task is "classify"`},
		{"threads", func() error { _, err := Load(t.TempDir(), WithThreads(0)); return err }, "WithThreads(0)"},
		{"checkpoint", func() error { _, err := Load(tinyRun(t, lmCfg, nil), WithCheckpoint(9)); return err }, "no checkpoint 9"},
		{"not a model", func() error { _, err := Load(t.TempDir()); return err }, "config.json"},
	} {
		err := c.call()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// TestCancel: a cancelled context stops a call with ctx.Err().
func TestCancel(t *testing.T) {
	m, err := Load(tinyRun(t, clsCfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Classify(ctx, [][]int32{{1, 2, 3}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Classify: %v", err)
	}
	// The model still works after a cancelled call, between layers too.
	ctx2, cancel2 := context.WithCancel(context.Background())
	calls := 0
	m.net.MixerInput = func(int, []float32) {
		if calls++; calls == 1 {
			cancel2()
		}
	}
	_, err = m.Classify(ctx2, [][]int32{{1, 2, 3}})
	m.net.MixerInput = nil
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("cancelled between layers: %v after %d layers", err, calls)
	}
	if _, err := m.Classify(context.Background(), [][]int32{{1, 2, 3}}); err != nil {
		t.Errorf("after cancellation: %v", err)
	}
}

// TestConcurrentClassify: 16 goroutines on one Model get the serial
// results (run with -race).
func TestConcurrentClassify(t *testing.T) {
	m, err := Load(tinyRun(t, clsCfg, []string{"a", "b", "c"}), WithThreads(2))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inputs := make([][][]int32, 16)
	want := make([][]Prediction, 16)
	for g := range inputs {
		inputs[g] = randomSeqs(1+g%5, 40, 256, uint64(g))
		if want[g], err = m.Classify(ctx, inputs[g]); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	got := make([][]Prediction, 16)
	errs := make([]error, 16)
	for g := range inputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				got[g], errs[g] = m.Classify(ctx, inputs[g])
			}
		}()
	}
	wg.Wait()
	for g := range got {
		if errs[g] != nil || fmt.Sprint(got[g]) != fmt.Sprint(want[g]) {
			t.Errorf("goroutine %d: %v, %v; serial %v", g, got[g], errs[g], want[g])
		}
	}
}

// TestPrecisionBF16: a model loaded WithPrecision("bf16") gives the
// float32 logits within bf16 rounding (and not the same numbers), generates
// from streams, and reports its precision; another precision is an error.
func TestPrecisionBF16(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range []string{clsCfg, lmCfg, convCfg, fnetCfg} {
		dir := tinyRun(t, cfg, nil)
		m32, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		m16, err := Load(dir, WithPrecision("bf16"))
		if err != nil {
			t.Fatal(err)
		}
		if p := m16.Config().Precision; p != "bf16" || m32.Config().Precision != "fp32" {
			t.Errorf("Precision %q and %q, want bf16 and fp32", p, m32.Config().Precision)
		}
		seqs := [][]int32{m32.Encode("hello, tokenmix"), m32.Encode("bf16")}
		want, err := m32.Logits(ctx, seqs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m16.Logits(ctx, seqs)
		if err != nil {
			t.Fatal(err)
		}
		var d, mx float64
		for i, w := range want.Data {
			if math.IsNaN(float64(w)) {
				continue
			}
			d = math.Max(d, math.Abs(float64(got.Data[i]-w)))
			mx = math.Max(mx, math.Abs(float64(w)))
		}
		if d == 0 || d > 1e-2*mx {
			t.Errorf("%s: bf16 logits differ from fp32 by %.3g of %.3g", m16.Config().Mixer, d, mx)
		}
		if m16.Config().Task == "lm" {
			res, err := m16.Generate(ctx, seqs[0], GenerateOptions{MaxTokens: 5})
			if err != nil || len(res.Tokens) != 5 {
				t.Errorf("bf16 Generate: %v, %v", res, err)
			}
		}
	}
	if _, err := Load(tinyRun(t, lmCfg, nil), WithPrecision("fp16")); err == nil || !strings.Contains(err.Error(), `"fp32" or "bf16"`) {
		t.Errorf("WithPrecision(fp16): %v", err)
	}
}
