package train

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/run"
	"github.com/tokenmix/tokenmix/mixer"
	"github.com/tokenmix/tokenmix/mixer/registry"
)

// poison is a test mixer: out = scale ⊙ x, which in layer 1 writes a NaN
// into its output (or into its input gradient) on the calls of Forward (or
// Backward) numbered in poisonFwd (poisonBwd), counted from 1.
type poison[F kernels.Float] struct {
	d, layer int
	w, g     []F
}

var (
	fwdCalls, bwdCalls   atomic.Int32
	poisonFwd, poisonBwd map[int32]bool
)

func (p *poison[F]) Params() []mixer.ParamSpec {
	return []mixer.ParamSpec{{Name: "scale.weight", Shape: []int{p.d}, Init: mixer.InitOnes, NoDecay: true}}
}
func (p *poison[F]) Bind(w, g [][]F)             { p.w, p.g = w[0], g[0] }
func (p *poison[F]) ActSize(b, t int) int        { return 0 }
func (p *poison[F]) ScratchSize(b, t, _ int) int { return 0 }
func (p *poison[F]) Forward(out, act, scratch, x []F, ps mixer.Pass) {
	for i, v := range x[:ps.B*ps.T*p.d] {
		out[i] = p.w[i%p.d] * v
	}
	if p.layer == 1 && poisonFwd[fwdCalls.Add(1)] {
		out[0] = F(math.NaN())
	}
}
func (p *poison[F]) Backward(dx, scratch, dout, act, x []F, ps mixer.Pass) {
	for i, v := range dout[:ps.B*ps.T*p.d] {
		dx[i] += p.w[i%p.d] * v
		p.g[i%p.d] += x[i] * v
	}
	if p.layer == 1 && poisonBwd[bwdCalls.Add(1)] {
		dx[0] = F(math.NaN())
	}
}

func poisonKind() mixer.Kind {
	return mixer.Kind{Name: "poison", Causal: true, Bidirectional: true, KeyPadding: true,
		New32: func(c mixer.Config) (mixer.Mixer[float32], error) {
			return &poison[float32]{d: c.D, layer: c.Layer}, c.Opts.Err()
		},
		New64: func(c mixer.Config) (mixer.Mixer[float64], error) {
			return &poison[float64]{d: c.D, layer: c.Layer}, c.Opts.Err()
		},
	}
}

// poisonRun trains steps steps of a 2-layer lm of poison mixers on random
// text in a fresh run directory, checkpointing every 2 steps (all kept).
func poisonRun(t *testing.T, dir string, steps, skip int) (Result, *run.Dir, error) {
	t.Helper()
	cfg := `{"vocab_size": 256, "d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 16, "max_len": 16,
	 "causal": true, "task": "lm", "mixer": {"kind": "poison"},
	 "train": {"batch_size": 2, "steps": 8, "lr": 0.003, "log_every": 1, "seed": 3, "checkpoint_every": 2, "keep_checkpoints": 8}}`
	lookup := func(name string) (mixer.Kind, error) {
		if name == "poison" {
			return poisonKind(), nil
		}
		return registry.Lookup(name)
	}
	c, err := model.ParseConfigWith([]byte(cfg), lookup)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New[float32](c)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(3)
	d, err := run.Create(dir, []byte(cfg), run.Info{Task: "lm"})
	if err != nil {
		t.Fatal(err)
	}
	text := make([]byte, 4000)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range text {
		text[i] = byte(rng.IntN(256))
	}
	fwdCalls.Store(0)
	bwdCalls.Store(0)
	src, err := NewTextSource(data.BytesText(text), 2, 16, 9)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), d, model.NewTrainer(m), src, Options{Steps: steps, SkipNonFinite: skip})
	return res, d, err
}

// TestNonFinite: a NaN written into one layer's activations (and,
// separately, into one input gradient) at step 5 stops the run with the
// step, the layer and tensor, and the batch's data position; the
// checkpoint of step 4 equals a clean run's byte for byte. With
// --skip-nonfinite 1 the run passes over that step, records it, and ends.
func TestNonFinite(t *testing.T) {
	defer func() { poisonFwd, poisonBwd = nil, nil }()
	ref := filepath.Join(t.TempDir(), "ref")
	if _, _, err := poisonRun(t, ref, 8, 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		fwd, bwd map[int32]bool // calls 5 (the step) and 6 (its diagnosis)
		want     string
	}{
		{"activation", map[int32]bool{5: true, 6: true}, nil, "first non-finite value in blocks.1.mixer: output (element 0)"},
		{"gradient", nil, map[int32]bool{5: true, 6: true}, "first non-finite value in blocks.1.mixer backward: input gradient (element 0)"},
	} {
		poisonFwd, poisonBwd = c.fwd, c.bwd
		dir := filepath.Join(t.TempDir(), c.name)
		res, d, err := poisonRun(t, dir, 8, 0)
		if !errors.Is(err, ErrNonFinite) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "at step 5") ||
			!strings.Contains(err.Error(), "data: the batch of step 5, drawn from source state {\"pcg\":") {
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Logf("%s: %v", c.name, err)
		steps, _ := d.Checkpoints()
		if res.Steps != 4 || fmt.Sprint(steps) != "[2 4]" {
			t.Errorf("%s: stopped after %d steps with checkpoints %v", c.name, res.Steps, steps)
		}
		for _, f := range []string{"weights.safetensors", "optim.safetensors", "state.json"} {
			got, err1 := os.ReadFile(filepath.Join(d.CkptPath(4), f))
			want, err2 := os.ReadFile(filepath.Join(ref, "ckpt", "00000004", f))
			if err1 != nil || err2 != nil || (f != "state.json" && !bytes.Equal(got, want)) {
				t.Errorf("%s: checkpoint 4's %s differs from a clean run's (%v, %v)", c.name, f, err1, err2)
			}
		}
	}
	poisonFwd, poisonBwd = map[int32]bool{5: true}, nil
	res, d, err := poisonRun(t, filepath.Join(t.TempDir(), "skip"), 8, 1)
	if err != nil || res.Steps != 8 {
		t.Fatalf("--skip-nonfinite 1: %d steps, %v", res.Steps, err)
	}
	ms, err := d.Metrics()
	skips := 0
	for _, m := range ms {
		if m["skipped_nonfinite"] != nil {
			skips++
			if m["step"] != 4.0 || !strings.Contains(fmt.Sprint(m["nonfinite"]), "NaN") {
				t.Errorf("skip line: %v", m)
			}
		}
	}
	if err != nil || skips != 1 {
		t.Errorf("--skip-nonfinite 1: %d skip lines in the metrics (%v)", skips, err)
	}
}
