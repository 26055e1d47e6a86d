package model

import (
	"fmt"
	"slices"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/safetensors"
)

// WeightsFile returns the parameters as a safetensors file with the
// contract's names: F32 for a float32 model, F64 for a float64 one.
func (m *Model[F]) WeightsFile() *safetensors.File {
	f := safetensors.New()
	for i, s := range m.Specs {
		putTensor(f, s.Name, s.Shape, m.ParamAt(i))
	}
	return f
}

// putTensor stores v under name as F32 or F64 by its element type.
func putTensor[F kernels.Float](f *safetensors.File, name string, shape []int, v []F) {
	switch v := any(v).(type) {
	case []float32:
		f.SetF32(name, shape, v)
	case []float64:
		f.SetF64(name, shape, v)
	}
}

// readTensor fills dst with tensor name of src, which must have shape
// shape.
func readTensor[F kernels.Float](dst []F, src safetensors.Source, name string, shape []int) error {
	_, sh, ok := src.Info(name)
	switch {
	case !ok:
		return fmt.Errorf("weights: missing tensor %q", name)
	case !slices.Equal(sh, shape):
		return fmt.Errorf("weights: tensor %q has shape %v, want %v", name, sh, shape)
	}
	switch d := any(dst).(type) {
	case []float32:
		return src.ReadFloats32(name, d)
	case []float64:
		return src.ReadFloats64(name, d)
	}
	return nil
}

// LoadWeights sets every parameter from the tensor of the same name in
// src (a File in memory, or a Reader streaming from disk straight into the
// parameters). Missing tensors, shape mismatches and tensors the model does
// not have are errors, found before any parameter changes; F32, F64, F16
// and BF16 tensors are accepted.
func (m *Model[F]) LoadWeights(src safetensors.Source) error {
	want := map[string]bool{}
	for _, s := range m.Specs {
		want[s.Name] = true
		_, shape, ok := src.Info(s.Name)
		switch {
		case !ok:
			return fmt.Errorf("weights: missing tensor %q", s.Name)
		case !slices.Equal(shape, s.Shape):
			return fmt.Errorf("weights: tensor %q has shape %v, want %v", s.Name, shape, s.Shape)
		}
	}
	for _, n := range src.Names() {
		if !want[n] {
			return fmt.Errorf("weights: unexpected tensor %q (not a parameter of this config)", n)
		}
	}
	for i, s := range m.Specs {
		if err := readTensor(m.ParamAt(i), src, s.Name, s.Shape); err != nil {
			return err
		}
	}
	return nil
}

// ReadBatch reads a batch file: "tokens" I32 [B,T] and, if present,
// "targets" I32 ([B,T] for lm, [B] for classify). It validates the batch
// against c.
func (c *Config) ReadBatch(f *safetensors.File) (tokens, targets []int32, B, T int, err error) {
	tokens, shape, err := f.I32("tokens")
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("batch: %w", err)
	}
	if len(shape) != 2 {
		return nil, nil, 0, 0, fmt.Errorf("batch: tokens has shape %v, want [B,T]", shape)
	}
	B, T = shape[0], shape[1]
	if _, ok := f.Tensors["targets"]; ok {
		var ts []int
		targets, ts, err = f.I32("targets")
		if err != nil {
			return nil, nil, 0, 0, fmt.Errorf("batch: %w", err)
		}
		want := []int{B, T}
		if c.Pooled() {
			want = []int{B}
		}
		if !slices.Equal(ts, want) {
			return nil, nil, 0, 0, fmt.Errorf("batch: targets has shape %v, want %v for task %q", ts, want, c.Task)
		}
	}
	if err := c.CheckBatch(tokens, targets, B, T); err != nil {
		return nil, nil, 0, 0, err
	}
	return tokens, targets, B, T, nil
}

// GradFile runs one training forward and backward of m (Train: with
// config dropout, the masks of m.Step) on a batch file (which must have
// targets) and returns "logits", "loss" (a scalar) and "grad.<name>" for
// every parameter, in m's float type. This is what `tokenmix grad` writes.
// The logits come from a forward without targets (the same pass: a
// token-level task's forward with targets keeps none).
func (m *Model[F]) GradFile(batch *safetensors.File) (*safetensors.File, error) {
	c := m.Config
	tokens, targets, B, T, err := c.ReadBatch(batch)
	if err != nil {
		return nil, err
	}
	if targets == nil {
		return nil, fmt.Errorf("batch: missing tensor \"targets\"")
	}
	m.Train = true
	defer func() { m.Train = false }()
	if _, err := m.Forward(tokens, nil, B, T); err != nil {
		return nil, err
	}
	logits := slices.Clone(m.Logits())
	loss, err := m.Forward(tokens, targets, B, T)
	if err != nil {
		return nil, err
	}
	m.ZeroGrad()
	m.Backward()
	out := safetensors.New()
	lshape := []int{B, T, c.HeadOut()}
	if c.Pooled() {
		lshape = []int{B, c.HeadOut()}
	}
	putTensor(out, "logits", lshape, logits)
	putTensor(out, "loss", []int{}, []F{F(loss)})
	for i, s := range m.Specs {
		putTensor(out, "grad."+s.Name, s.Shape, m.Grad(i))
	}
	return out, nil
}
