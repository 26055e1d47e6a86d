package model

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/safetensors"
)

const trainJS = `, "train": {"lr": 0.01, "steps": 6, "warmup": 2, "weight_decay": 0.1, "grad_clip": 0.5, "seed": 3}`

func TestWeightsRoundTrip(t *testing.T) {
	m := newTestModel(t, fmt.Sprintf(tinyLM, ""))
	f := m.WeightsFile()
	b, err := f.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	g, err := safetensors.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := New[float64](m.Config)
	if err := m2.LoadWeights(g); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Params, m2.Params) {
		t.Error("weights changed in a round trip")
	}
	// The names are the contract's.
	for _, n := range []string{"embed.weight", "pos.weight", "blocks.1.ln1.bias", "blocks.0.mixer.o.weight",
		"blocks.1.ff.fc2.weight", "ln_f.weight", "head.bias"} {
		if _, ok := g.Tensors[n]; !ok {
			t.Errorf("missing %s in %v", n, g.Names())
		}
	}
	bad := safetensors.New()
	for _, n := range g.Names() {
		bad.Tensors[n] = g.Tensors[n]
	}
	bad.SetF32("extra", []int{1}, []float32{1})
	if err := m2.LoadWeights(bad); err == nil || !strings.Contains(err.Error(), `unexpected tensor "extra"`) {
		t.Errorf("extra tensor: %v", err)
	}
	delete(bad.Tensors, "extra")
	bad.SetF32("head.bias", []int{5}, make([]float32, 5))
	if err := m2.LoadWeights(bad); err == nil || !strings.Contains(err.Error(), "shape [5], want [11]") {
		t.Errorf("bad shape: %v", err)
	}
	delete(bad.Tensors, "head.bias")
	if err := m2.LoadWeights(bad); err == nil || !strings.Contains(err.Error(), `missing tensor "head.bias"`) {
		t.Errorf("missing: %v", err)
	}
}

func TestGradFile(t *testing.T) {
	m := newTestModel(t, fmt.Sprintf(tinyCls, ""))
	tokens, targets := testBatch(m.Config, 2, 5, 1)
	bf := safetensors.New()
	bf.SetI32("tokens", []int{2, 5}, tokens)
	bf.SetI32("targets", []int{2}, targets)
	out, err := m.GradFile(bf)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Tensors) != len(m.Specs)+2 {
		t.Errorf("%d tensors, want %d", len(out.Tensors), len(m.Specs)+2)
	}
	loss, shape, _ := out.F64("loss")
	if len(shape) != 0 || loss[0] != m.Loss() {
		t.Errorf("loss %v shape %v", loss, shape)
	}
	if _, shape, _ := out.F64("logits"); !slices.Equal(shape, []int{2, 3}) {
		t.Errorf("logits shape %v", shape)
	}
	bf.SetI32("targets", []int{2, 5}, make([]int32, 10))
	if _, err := m.GradFile(bf); err == nil || !strings.Contains(err.Error(), "want [2]") {
		t.Errorf("lm-shaped targets for classify: %v", err)
	}
}

// TestResume checks that training 2 steps, saving, loading into a fresh
// trainer and training 2 more gives bitwise the weights of 4 straight steps.
func TestResume(t *testing.T) {
	js := fmt.Sprintf(tinyLM, trainJS)
	batches := make([][2][]int32, 4)
	c := testConfig(js)
	for i := range batches {
		tok, tgt := testBatch(c, 2, 6, uint64(i))
		batches[i] = [2][]int32{tok, tgt}
	}
	newTrainer := func() *Trainer[float32] {
		m, err := New[float32](testConfig(js))
		if err != nil {
			t.Fatal(err)
		}
		m.Init(7)
		return NewTrainer(m)
	}
	straight := newTrainer()
	for _, b := range batches {
		if _, err := straight.Step(b[0], b[1], 2, 6); err != nil {
			t.Fatal(err)
		}
	}
	first := newTrainer()
	for _, b := range batches[:2] {
		first.Step(b[0], b[1], 2, 6)
	}
	// Through the bytes of the two files, as a checkpoint stores them.
	wb, err := first.Model.WeightsFile().Bytes()
	if err != nil {
		t.Fatal(err)
	}
	ob, err := first.OptimFile().Bytes()
	if err != nil {
		t.Fatal(err)
	}
	second := newTrainer()
	second.Model.Init(99) // different weights, to be overwritten
	wf, err := safetensors.Parse(wb)
	if err != nil {
		t.Fatal(err)
	}
	of, err := safetensors.Parse(ob)
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Model.LoadWeights(wf); err != nil {
		t.Fatal(err)
	}
	if err := second.LoadOptim(of, of.Metadata); err != nil {
		t.Fatal(err)
	}
	if second.Opt.Step != 2 {
		t.Errorf("restored optimizer step %d, want 2", second.Opt.Step)
	}
	delete(of.Tensors, "v."+second.Model.Specs[0].Name)
	if err := second.LoadOptim(of, of.Metadata); err == nil || !strings.Contains(err.Error(), second.Model.Specs[0].Name) {
		t.Errorf("optimizer file without a tensor: %v", err)
	}
	for _, b := range batches[2:] {
		second.Step(b[0], b[1], 2, 6)
	}
	if !slices.Equal(second.Model.Params, straight.Model.Params) {
		t.Error("resumed training differs from straight training")
	}
	if !slices.Equal(second.Opt.V, straight.Opt.V) {
		t.Error("resumed optimizer state differs")
	}
}

// TestTrainerFitsOneBatch checks that repeated steps on one batch lower its
// loss, with the schedule's learning rates.
func TestTrainerFitsOneBatch(t *testing.T) {
	m, err := New[float32](testConfig(fmt.Sprintf(tinyCls, trainJS)))
	if err != nil {
		t.Fatal(err)
	}
	m.Init(1)
	tr := NewTrainer(m)
	tok, tgt := testBatch(m.Config, 2, 6, 1)
	var first, last StepStats
	for i := 0; i < 6; i++ {
		st, err := tr.Step(tok, tgt, 2, 6)
		if err != nil {
			t.Fatal(err)
		}
		if want := tr.Sched.At(i); st.LR != want {
			t.Errorf("step %d lr %v, want %v", i, st.LR, want)
		}
		if i == 0 {
			first = st
		}
		last = st
	}
	if !(last.Loss < first.Loss) {
		t.Errorf("loss went from %v to %v", first.Loss, last.Loss)
	}
}
