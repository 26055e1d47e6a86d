package train

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/run"
)

// recorder is a Source that keeps a copy of every batch it hands out.
type recorder struct {
	Source
	batches [][]int32
}

func (r *recorder) Next(b *data.Batch) error {
	err := r.Source.Next(b)
	r.batches = append(r.batches, slices.Clone(b.Tokens))
	return err
}

// scaleRun trains an fp16 lm in dir for 6 steps (resuming when dir holds
// a checkpoint; interrupted after step stop when stop > 0), with the loss
// scale of a fresh run set to scale.
func scaleRun(t *testing.T, dir string, stop int, scale float64) (Result, *run.Dir, *recorder, *model.Trainer[float32]) {
	t.Helper()
	cfg := []byte(`{"vocab_size": 256, "d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32, "max_len": 16,
	 "causal": true, "task": "lm", "precision": "fp16", "mixer": {"kind": "full"},
	 "train": {"batch_size": 2, "steps": 6, "lr": 0.003, "log_every": 1, "seed": 3, "checkpoint_every": 2, "keep_checkpoints": 8}}`)
	c, err := model.ParseConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New[float32](c)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(3)
	var d *run.Dir
	if _, err := os.Stat(filepath.Join(dir, run.InfoName)); err == nil {
		d, err = run.Open(dir)
	} else {
		d, err = run.Create(dir, cfg, run.Info{Task: "lm"})
	}
	if err != nil {
		t.Fatal(err)
	}
	text := make([]byte, 4000)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range text {
		text[i] = byte(rng.IntN(256))
	}
	tr := model.NewTrainer(m)
	tr.Scale.Scale = scale
	ts, err := NewTextSource(data.BytesText(text), 2, 16, 9)
	if err != nil {
		t.Fatal(err)
	}
	src := &recorder{Source: ts}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := Options{Steps: 6}
	if stop > 0 {
		o.Progress = stopAt{NewProgress(nil), stop, cancel}
	}
	res, err := Run(ctx, d, tr, src, o)
	if err != nil && (stop == 0 || err != ErrInterrupted) {
		t.Fatal(err)
	}
	return res, d, src, tr
}

// TestLossScaleRun: a run whose fp16 loss scale starts far too high
// skips the overflowing steps, halving the scale each time, and takes the
// same batch again (the data position does not move); the metrics record
// the skips and the scale, state.json keeps them, and a run stopped at
// step 4 and resumed ends with the same weights and scale as one that ran
// through.
func TestLossScaleRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "through")
	res, d, src, tr := scaleRun(t, dir, 0, 0x1p60)
	k := tr.Scale.Skipped
	if res.Steps != 6 || k == 0 || len(src.batches) != 6+k {
		t.Fatalf("%d steps, %d overflows, %d batches drawn", res.Steps, k, len(src.batches))
	}
	for i := 1; i <= k; i++ {
		if !slices.Equal(src.batches[i], src.batches[0]) {
			t.Fatalf("batch %d after %d overflows differs from the first: the data position moved", i, i)
		}
	}
	if slices.Equal(src.batches[k+1], src.batches[0]) {
		t.Error("the batch after the first clean step is the first batch again")
	}
	ms, err := d.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	rows, scale := 0, 0x1p60
	for _, m := range ms {
		if m["loss"] == nil {
			rows++
			scale /= 2
			if m["step"] != 0.0 || m["loss_scale"] != scale || m["overflow_skips"] != float64(rows) {
				t.Errorf("overflow row %d: %v", rows, m)
			}
		} else if m["loss_scale"] == nil {
			t.Errorf("metrics row without the loss scale: %v", m)
		}
	}
	if rows != k {
		t.Errorf("%d overflow rows for %d overflows", rows, k)
	}
	st, err := d.ReadState(6)
	if err != nil || st.LossScale != tr.Scale.Scale || st.Overflows != k || st.LossScaleClean != tr.Scale.Clean {
		t.Errorf("state.json: %+v (%v), trainer %+v", st, err, tr.Scale)
	}

	split := filepath.Join(t.TempDir(), "split")
	scaleRun(t, split, 4, 0x1p60)
	_, _, _, tr2 := scaleRun(t, split, 0, 1) // the checkpoint's scale wins
	if *tr2.Scale != *tr.Scale {
		t.Errorf("resumed loss scale %+v, straight run %+v", tr2.Scale, tr.Scale)
	}
	a, err1 := os.ReadFile(filepath.Join(dir, "ckpt", "00000006", "weights.safetensors"))
	b, err2 := os.ReadFile(filepath.Join(split, "ckpt", "00000006", "weights.safetensors"))
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		t.Errorf("resumed run's weights differ from the straight run's (%v, %v)", err1, err2)
	}
}
