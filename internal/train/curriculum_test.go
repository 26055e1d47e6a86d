package train

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/run"
)

// shapes records the [B,T] of every batch a Source yields.
type shapes struct {
	Source
	seen *[][2]int
}

func (s shapes) Next(b *data.Batch) error {
	err := s.Source.Next(b)
	*s.seen = append(*s.seen, [2]int{b.B, b.T})
	return err
}

// curriculumRun builds a 9-step run on recall at T = 16 whose curriculum
// trains 2 updates at T = 8 (batch 2) and 3 at T = 12 (batch 4), with its
// source recording the batch shapes in seen.
func curriculumRun(t *testing.T, dir string, seen *[][2]int) (*run.Dir, *model.Trainer[float32], Source) {
	t.Helper()
	rc := data.RecallConfig{Len: 16, Pairs: 3, Keys: 8, Values: 4, Train: 64, Val: 8, Test: 8}
	task, err := data.NewRecall(rc)
	if err != nil {
		t.Fatal(err)
	}
	info := task.Info()
	cfg := fmt.Sprintf(`{"vocab_size": %d, "d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "max_len": %d,
	 "causal": true, "task": "lm", "mixer": {"kind": "full"},
	 "train": {"batch_size": 4, "steps": 9, "lr": 0.003, "log_every": 2, "eval_every": 0, "seed": 5,
	  "checkpoint_every": 2, "curriculum": [{"len": 8, "steps": 2, "batch_size": 2}, {"len": 12, "steps": 3}]}}`, info.Vocab, info.MaxLen)
	d, tr, c := newRun(t, dir, cfg)
	main := TaskSource{L: data.NewLoader(task, data.Train, 4, true, 5, 0)}
	src, err := NewCurriculum(c.Train, main, func(n, batch int) (Source, error) {
		r := rc
		r.Len = n
		st, err := data.NewRecall(r)
		if err != nil {
			return nil, err
		}
		return TaskSource{L: data.NewLoader(st, data.Train, batch, true, 5, 0)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return d, tr, shapes{src, seen}
}

// TestCurriculumRun: the batches follow the curriculum's lengths and
// batch sizes, and a run stopped at any step and resumed in a fresh
// process ends with the weights and optimizer state of an uninterrupted
// one.
func TestCurriculumRun(t *testing.T) {
	var seen [][2]int
	d0, ref, src0 := curriculumRun(t, t.TempDir()+"/r", &seen)
	if _, err := Run(context.Background(), d0, ref, src0, Options{Steps: 9}); err != nil {
		t.Fatal(err)
	}
	want := [][2]int{{2, 8}, {2, 8}, {4, 12}, {4, 12}, {4, 12}, {4, 16}, {4, 16}, {4, 16}, {4, 16}}
	if !slices.Equal(seen, want) {
		t.Fatalf("batch shapes %v, want %v", seen, want)
	}
	for at := 1; at < 9; at++ {
		dir := t.TempDir() + "/r"
		var s1, s2 [][2]int
		d, tr, src := curriculumRun(t, dir, &s1)
		ctx, cancel := context.WithCancel(context.Background())
		r, err := Run(ctx, d, tr, src, Options{Steps: 9, Progress: stopAt{NewProgress(nil), at, cancel}})
		if err != ErrInterrupted || r.Steps != at {
			t.Fatalf("stop at %d: %d steps, %v", at, r.Steps, err)
		}
		d2, tr2, src2 := curriculumRun(t, dir, &s2)
		tr2.Model.Init(99) // overwritten by the checkpoint
		if r, err = Run(context.Background(), d2, tr2, src2, Options{Steps: 9}); err != nil || r.Steps != 9 {
			t.Fatalf("resume from %d: %+v, %v", at, r, err)
		}
		if got := append(s1, s2...); !slices.Equal(got, want) {
			t.Errorf("stopped at %d: batch shapes %v, want %v", at, got, want)
		}
		if !slices.Equal(tr2.Model.Params, ref.Model.Params) || !slices.Equal(tr2.Opt.M, ref.Opt.M) || !slices.Equal(tr2.Opt.V, ref.Opt.V) {
			t.Errorf("stopped at %d and resumed: weights or optimizer state differ", at)
		}
	}
}

// TestCurriculumSteps: the source of each run step, with a pretraining
// stage before the curriculum.
func TestCurriculumSteps(t *testing.T) {
	tc := &model.TrainConfig{Steps: 10, BatchSize: 4, Pretrain: &model.PretrainConfig{Steps: 3},
		Curriculum: []model.CurriculumStage{{Len: 4, Steps: 2, BatchSize: 4}, {Len: 6, Steps: 1, BatchSize: 4}}}
	var made []int
	src, err := NewCurriculum(tc, nil, func(n, _ int) (Source, error) { made = append(made, n); return namedSource(n), nil })
	if err != nil {
		t.Fatal(err)
	}
	c := src.(*Curriculum)
	c.srcs[len(c.srcs)-1] = namedSource(0) // the training source
	want := []struct{ src, own int }{{0, 0}, {0, 1}, {0, 2}, {4, 0}, {4, 1}, {6, 0}, {0, 3}, {0, 4}}
	for s, w := range want {
		got, own := c.at(s)
		if got != namedSource(w.src) || own != w.own {
			t.Errorf("run step %d: source %v at its step %d, want %d at %d", s, got, own, w.src, w.own)
		}
	}
	if !slices.Equal(made, []int{4, 6}) {
		t.Errorf("stage sources made for lengths %v", made)
	}
	if _, err := NewCurriculum(tc, nil, func(n, _ int) (Source, error) { return nil, fmt.Errorf("no length %d", n) }); err == nil ||
		err.Error() != "train.curriculum[0]: no length 4" {
		t.Errorf("a stage without a source: %v", err)
	}
	tc.Curriculum = nil
	if s, _ := NewCurriculum(tc, namedSource(7), nil); s != namedSource(7) {
		t.Errorf("no curriculum: got %v, want the training source itself", s)
	}
}

// namedSource is a Source that only has an identity.
type namedSource int

func (namedSource) Next(*data.Batch) error             { return nil }
func (namedSource) State() (json.RawMessage, error)    { return nil, nil }
func (namedSource) Restore(int, json.RawMessage) error { return nil }

// TestCurriculumText: a text source's curriculum stages draw from its one
// random stream, so the state saved at any step restores the batches that
// follow.
func TestCurriculumText(t *testing.T) {
	text := make([]byte, 500)
	for i := range text {
		text[i] = byte(i*7 + i/13)
	}
	tc := &model.TrainConfig{Steps: 8, BatchSize: 3, Curriculum: []model.CurriculumStage{{Len: 5, Steps: 3, BatchSize: 6}}}
	build := func() Source {
		ts, err := NewTextSource(data.BytesText(text), 3, 20, 11)
		if err != nil {
			t.Fatal(err)
		}
		src, err := NewCurriculum(tc, ts, func(n, b int) (Source, error) { return ts.WithLen(b, n) })
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	ref := build()
	var batches [][]int32
	var states []json.RawMessage
	var b data.Batch
	for s := range 8 {
		st, err := ref.State()
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, st)
		ref.Next(&b)
		if wantT := map[bool]int{true: 5, false: 20}[s < 3]; b.T != wantT || len(b.Tokens) != b.B*b.T {
			t.Fatalf("step %d: batch [%d,%d], want T = %d", s, b.B, b.T, wantT)
		}
		batches = append(batches, slices.Clone(b.Tokens))
	}
	for at := range 8 {
		src := build()
		if err := src.Restore(at, states[at]); err != nil {
			t.Fatal(err)
		}
		for s := at; s < 8; s++ {
			src.Next(&b)
			if !slices.Equal(b.Tokens, batches[s]) {
				t.Fatalf("restored at step %d: batch %d differs", at, s)
			}
		}
	}
	if _, err := (&TextSource{text: data.BytesText(text[:10])}).WithLen(2, 10); err == nil {
		t.Error("WithLen longer than the text: no error")
	}
}
