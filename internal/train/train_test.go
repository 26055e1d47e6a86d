package train

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/run"
)

// setup builds a tiny recall task, a fresh trainer for it and a run
// directory; keep and every set keep_checkpoints and checkpoint_every.
func setup(t *testing.T, keep, every int) (*run.Dir, *model.Trainer[float32], Source) {
	t.Helper()
	task, err := data.NewRecall(data.RecallConfig{Len: 16, Pairs: 3, Keys: 8, Values: 4, Train: 64, Val: 8, Test: 8})
	if err != nil {
		t.Fatal(err)
	}
	info := task.Info()
	cfg := fmt.Sprintf(`{"vocab_size": %d, "d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "max_len": %d,
	 "causal": true, "task": "lm", "mixer": {"kind": "full"},
	 "train": {"batch_size": 4, "steps": 7, "lr": 0.003, "log_every": 2, "eval_every": 0, "seed": 5,
	  "checkpoint_every": %d, "keep_checkpoints": %d}}`, info.Vocab, info.MaxLen, every, keep)
	d, tr, _ := newRun(t, t.TempDir()+"/r", cfg)
	return d, tr, TaskSource{L: data.NewLoader(task, data.Train, 4, true, 5, 0)}
}

// newRun parses the lm config cfg, builds its model initialised from seed
// 5 and a trainer, and opens the run directory dir, creating it with cfg
// when it holds no run.
func newRun(t *testing.T, dir, cfg string) (*run.Dir, *model.Trainer[float32], *model.Config) {
	t.Helper()
	c, err := model.ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New[float32](c)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(5)
	d, err := run.Open(dir)
	if err != nil {
		d, err = run.Create(dir, []byte(cfg), run.Info{Task: "lm"})
	}
	if err != nil {
		t.Fatal(err)
	}
	return d, model.NewTrainer(m), c
}

// TestRunKeepCheckpoints: checkpoint_every 1 and keep_checkpoints K leave
// exactly the newest K checkpoints of a 7-step run.
func TestRunKeepCheckpoints(t *testing.T) {
	for _, keep := range []int{1, 2, 3} {
		d, tr, src := setup(t, keep, 1)
		if _, err := Run(context.Background(), d, tr, src, Options{Steps: 7}); err != nil {
			t.Fatal(err)
		}
		steps, err := d.Checkpoints()
		if want := []int{5, 6, 7}[3-keep:]; err != nil || !slices.Equal(steps, want) {
			t.Errorf("keep_checkpoints %d: %v (%v), want %v", keep, steps, err, want)
		}
	}
}

// TestRunDropsLinesAfterCheckpoint: lines a killed run logged after its
// last checkpoint (or with none at all), a last one cut off included, are
// dropped when it resumes.
func TestRunDropsLinesAfterCheckpoint(t *testing.T) {
	d, tr, src := setup(t, 2, 0)
	os.WriteFile(filepath.Join(d.Path, run.MetricsName), []byte("{\"step\": 1}\n{\"step\": 2}\n{\"st"), 0o644)
	if _, err := Run(context.Background(), d, tr, src, Options{Steps: 7}); err != nil {
		t.Fatal(err)
	}
	m, err := d.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	var steps []float64
	for _, l := range m {
		steps = append(steps, l["step"].(float64))
	}
	if !slices.Equal(steps, []float64{2, 4, 6, 7}) {
		t.Errorf("metrics steps %v, want [2 4 6 7] (log_every 2)", steps)
	}
}

// stopAt cancels its context when step reaches at.
type stopAt struct {
	Progress
	at     int
	cancel func()
}

func (s stopAt) Update(step int, _, _ float64) {
	if step >= s.at {
		s.cancel()
	}
}

// TestRunResume interrupts a run at every step in turn and resumes it: the
// weights, the optimizer state and the metrics lines' steps equal an
// uninterrupted run's.
func TestRunResume(t *testing.T) {
	d0, ref, src0 := setup(t, 2, 3)
	if _, err := Run(context.Background(), d0, ref, src0, Options{Steps: 7}); err != nil {
		t.Fatal(err)
	}
	m0, _ := d0.Metrics()
	for at := 1; at < 7; at++ {
		d, tr, src := setup(t, 2, 3)
		ctx, cancel := context.WithCancel(context.Background())
		r, err := Run(ctx, d, tr, src, Options{Steps: 7, Progress: stopAt{NewProgress(nil), at, cancel}})
		if err != ErrInterrupted || r.Steps != at {
			t.Fatalf("stop at %d: %d steps, %v", at, r.Steps, err)
		}
		// A fresh trainer and source, as a new process would build them.
		_, tr2, src2 := setup(t, 2, 3)
		tr2.Model.Init(99) // overwritten by the checkpoint
		r, err = Run(context.Background(), d, tr2, src2, Options{Steps: 7})
		if err != nil || !r.Resumed || r.Steps != 7 {
			t.Fatalf("resume from %d: %+v, %v", at, r, err)
		}
		if !slices.Equal(tr2.Model.Params, ref.Model.Params) || !slices.Equal(tr2.Opt.M, ref.Opt.M) || !slices.Equal(tr2.Opt.V, ref.Opt.V) {
			t.Errorf("stopped at %d and resumed: weights or optimizer state differ", at)
		}
		m, _ := d.Metrics()
		if len(m) != len(m0) {
			t.Errorf("stopped at %d: %d metrics lines, uninterrupted %d", at, len(m), len(m0))
		}
		for i := range min(len(m), len(m0)) {
			if m[i]["step"] != m0[i]["step"] || m[i]["loss"] != m0[i]["loss"] {
				t.Errorf("stopped at %d: metrics line %d %v, uninterrupted %v", at, i, m[i], m0[i])
			}
		}
	}
}
