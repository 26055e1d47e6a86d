package train

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/run"
	"github.com/tokenmix/tokenmix/internal/safetensors"
)

// TestMaskPinned pins the mlm mask of seed 1, step 0, rate 0.25 over 24
// tokens (python/tests/test_rng.py checks tokenmix_torch against the same
// positions), and checks the rate, the streams and the key's inputs.
func TestMaskPinned(t *testing.T) {
	tokens := make([]int32, 24)
	for i := range tokens {
		tokens[i] = int32(1 + i%7)
	}
	orig := slices.Clone(tokens)
	targets := make([]int32, 24)
	MaskTokens(tokens, targets, 24, 0.25, 9, -1, MaskKey(1, 0))
	var got []int
	for j := range tokens {
		switch {
		case targets[j] == -1 && tokens[j] == orig[j]:
		case targets[j] == orig[j] && tokens[j] == 9:
			got = append(got, j)
		default:
			t.Fatalf("position %d: token %d, target %d (was %d)", j, tokens[j], targets[j], orig[j])
		}
	}
	// The positions of tokenmix_torch's rng (an implementation of its own
	// of the recipe in pretrain.go).
	if want := []int{3, 6, 8, 11, 13, 14, 15}; !slices.Equal(got, want) {
		t.Errorf("masked positions %v, want %v", got, want)
	}

	const n = 1 << 16
	big, tg := make([]int32, n), make([]int32, n)
	count := func(seed uint64, step int) (int, []int32) {
		for i := range big {
			big[i] = 1
		}
		MaskTokens(big, tg, n, 0.15, 9, -1, MaskKey(seed, step))
		c := 0
		for _, v := range tg {
			if v != -1 {
				c++
			}
		}
		return c, slices.Clone(tg)
	}
	c0, m0 := count(7, 3)
	if r := float64(c0) / n; math.Abs(r-0.15) > 0.01 {
		t.Errorf("mask rate %.4f, want 0.15", r)
	}
	for _, o := range []struct {
		seed uint64
		step int
	}{{7, 4}, {8, 3}} {
		if _, m := count(o.seed, o.step); slices.Equal(m, m0) {
			t.Errorf("seed %d step %d draws the mask of seed 7 step 3", o.seed, o.step)
		}
	}
	if _, m := count(7, 3); !slices.Equal(m, m0) {
		t.Error("the same key drew another mask")
	}
}

// TestMaskPadAndAtLeastOne: pad positions are never masked; a batch that
// the draw leaves unmasked gets exactly one masked non-pad position; an
// all-pad batch gets none.
func TestMaskPadAndAtLeastOne(t *testing.T) {
	for key := range uint64(200) {
		tokens := []int32{3, 4, 0, 0, 5, 6, 7, 0}
		targets := make([]int32, len(tokens))
		MaskTokens(tokens, targets, len(tokens), 0.01, 9, 0, key)
		masked := 0
		for j, v := range targets {
			if v != -1 {
				masked++
				if v == 0 {
					t.Fatalf("key %d: pad position %d masked", key, j)
				}
			}
		}
		if masked != 1 { // rate 0.01: the draw masks none of 5 in most keys
			t.Fatalf("key %d: %d masked positions at rate 0.01, want 1 (the draw's or the fallback's)", key, masked)
		}
	}
	pad := []int32{0, 0, 0}
	targets := make([]int32, 3)
	MaskTokens(pad, targets, 3, 1, 9, 0, 1)
	if !slices.Equal(targets, []int32{-1, -1, -1}) || !slices.Equal(pad, []int32{0, 0, 0}) {
		t.Errorf("all-pad batch: tokens %v, targets %v", pad, targets)
	}
}

func TestNextTokenTargets(t *testing.T) {
	tokens := []int32{5, 6, 7, 0, 1, 2, 3, 4}
	targets := make([]int32, 8)
	NextTokenTargets(targets, tokens, 2, 4, 0)
	if want := []int32{6, 7, -1, -1, 2, 3, 4, -1}; !slices.Equal(targets, want) {
		t.Errorf("targets %v, want %v", targets, want)
	}
	NextTokenTargets(targets, tokens, 1, 8, -1)
	if want := []int32{6, 7, 0, 1, 2, 3, 4, -1}; !slices.Equal(targets, want) {
		t.Errorf("no pad: targets %v, want %v", targets, want)
	}
}

// TestPretrainLM pretrains a causal classifier with next-token prediction
// on inputs that count up (each token the previous plus one, mod 12, after
// a random start, padded with 0), then fine-tunes it: the pretraining loss
// falls far below its start (the next token is a function of the
// previous), the stage's checkpoint holds pretrain_head [vocab_size, d],
// the fine-tuning stage starts from its body with a fresh task head, and
// the metrics lines carry both stages.
func TestPretrainLM(t *testing.T) {
	var recs []data.Record
	for i := range 64 {
		n, s := 4+i%5, int32(i*7%12)
		toks := make([]int32, n)
		for j := range toks {
			toks[j] = 1 + (s+int32(j))%12
		}
		recs = append(recs, data.Record{Tokens: toks, Label: fmt.Sprint(i % 2), Where: fmt.Sprint(i)})
	}
	task, err := data.NewLabeled(recs, nil, []string{"0", "1"}, data.Limits{Vocab: 14, MaxLen: 8, PadID: 0}, 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := `{"vocab_size": 14, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 8, "causal": true,
	 "task": "classify", "n_classes": 2, "pad_id": 0, "mixer": {"kind": "full"},
	 "train": {"batch_size": 8, "steps": 4, "lr": 0.003, "log_every": 1, "eval_every": 0, "seed": 2,
	  "pretrain": {"objective": "lm", "steps": 40, "lr": 0.03, "warmup": 2}}}`
	c, err := model.ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New[float32](c)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(2)
	d, err := run.Create(filepath.Join(t.TempDir(), "r"), []byte(cfg), run.Info{Task: "classify"})
	if err != nil {
		t.Fatal(err)
	}
	tr := model.NewTrainer(m)
	src := TaskSource{L: data.NewLoader(task, data.Train, 8, true, 2, 0)}
	// Stop at the switch (the fine-tuning stage's first Err call) to see
	// the pretraining stage's last checkpoint and the fresh head.
	res, err := Run(&stopAfterN{Context: context.Background(), n: 40}, d, tr, src, Options{Steps: 4})
	if err != ErrInterrupted || res.PretrainSteps != 40 || res.Steps != 0 {
		t.Fatalf("run stopped at the switch: %+v, %v; want 40 pretraining steps, 0 of fine-tuning", res, err)
	}
	r, err := safetensors.OpenReader(filepath.Join(d.CkptPath(40), run.WeightsName))
	if err != nil {
		t.Fatal(err)
	}
	_, shape, ok := r.Info("pretrain_head.weight")
	_, _, hasHead := r.Info("head.weight")
	pre := make([]float32, 16)
	if err := r.ReadFloats32("ln_f.weight", pre); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if !ok || !slices.Equal(shape, []int{14, 16}) || hasHead {
		t.Errorf("pretraining checkpoint: pretrain_head.weight %v (%v), head.weight present %v", shape, ok, hasHead)
	}
	lnf, _, _ := m.Param("ln_f.weight")
	head, spec, _ := m.Param("head.weight")
	fresh := make([]float32, len(head))
	model.InitTensor(fresh, spec, 2, 1)
	if !slices.Equal(lnf, pre) || !slices.Equal(head, fresh) {
		t.Error("at the switch the model does not hold the pretrained body and a freshly initialised head")
	}

	tr2 := model.NewTrainer(mustModel(t, c))
	res, err = Run(context.Background(), d, tr2, src, Options{Steps: 4})
	if err != nil || res.PretrainSteps != 40 || res.Steps != 4 || res.RunSteps() != 44 {
		t.Fatalf("finished run: %+v, %v", res, err)
	}
	ms, err := d.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	var pl []float64
	stages := map[string]int{}
	for _, l := range ms {
		stages[l["stage"].(string)]++
		if l["stage"] == "pretrain" {
			pl = append(pl, l["loss"].(float64))
		}
	}
	// 40 + 4 loss lines, and the swap line.
	if stages["pretrain"] != 40 || stages["train"] != 5 {
		t.Errorf("metrics lines per stage %v, want 40 pretrain, 5 train", stages)
	}
	if first, last := pl[0], pl[len(pl)-1]; !(first > 2 && last < first/3) {
		t.Errorf("lm pretraining loss %.3f → %.3f, want from about ln 14 to below a third of it", first, last)
	}
}

// stopAfterN is a context whose Err reports cancellation from its (n+1)-th
// call on: Run checks it once per step.
type stopAfterN struct {
	context.Context
	n int
}

func (c *stopAfterN) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

func mustModel(t *testing.T, c *model.Config) *model.Model[float32] {
	t.Helper()
	m, err := model.New[float32](c)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(c.Train.Seed)
	return m
}
