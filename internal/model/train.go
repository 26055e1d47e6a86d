package model

import (
	"fmt"
	"math"
	"strconv"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/optim"
	"github.com/tokenmix/tokenmix/internal/safetensors"
)

// Trainer runs training steps: forward, backward, global gradient-norm
// clipping and an AdamW update with the warmup+cosine schedule, all from the
// config's "train" object.
type Trainer[F kernels.Float] struct {
	Model *Model[F]
	Opt   *optim.AdamW[F]
	Sched optim.Schedule
	Clip  float64
}

// StepStats reports one training step.
type StepStats struct {
	Loss     float64 // loss before the update
	GradNorm float64 // global gradient norm before clipping
	LR       float64 // learning rate of the update
	// NonFinite says the loss or the gradient norm was NaN or infinite:
	// the step made no update (Model.Diagnose names the first bad tensor).
	NonFinite bool
}

// NewTrainer returns a trainer for m with fresh optimiser state. Parameters
// whose spec says NoDecay (biases, LayerNorm gains, pos.weight, mixer
// biases) are excluded from weight decay. NewTrainer panics if the config
// has no "train" object.
func NewTrainer[F kernels.Float](m *Model[F]) *Trainer[F] {
	tc := m.Config.Train
	if tc == nil {
		panic("model: NewTrainer for a config without \"train\"")
	}
	sizes := make([]int, len(m.Specs))
	noDecay := make([]bool, len(m.Specs))
	for i, s := range m.Specs {
		sizes[i], noDecay[i] = s.Size(), s.NoDecay
	}
	m.Seed = tc.Seed
	return &Trainer[F]{
		Model: m,
		Opt:   optim.NewAdamW[F](len(m.Params), optim.Groups(sizes, noDecay), tc.Beta1, tc.Beta2, tc.Eps, tc.WeightDecay),
		Sched: optim.Schedule{LR: tc.LR, MinLR: tc.MinLR, Warmup: tc.Warmup, Steps: tc.Steps},
		Clip:  tc.GradClip,
	}
}

// Step performs the update with index Opt.Step on one batch and returns
// its statistics. The model's pass seeds use that index.
func (t *Trainer[F]) Step(tokens, targets []int32, B, T int) (StepStats, error) {
	m := t.Model
	m.Step = t.Opt.Step
	loss, err := m.Forward(tokens, targets, B, T)
	if err != nil {
		return StepStats{}, err
	}
	m.ZeroGrad()
	m.Backward()
	norm := optim.ClipGradNorm(m.Grads, t.Clip)
	lr := t.Sched.At(t.Opt.Step)
	if finite := !math.IsNaN(loss) && !math.IsInf(loss, 0) && !math.IsNaN(norm) && !math.IsInf(norm, 0); !finite {
		// No update: the parameters, the optimizer state and its step
		// count stay those before the batch.
		return StepStats{Loss: loss, GradNorm: norm, LR: lr, NonFinite: true}, nil
	}
	t.Opt.Update(m.Params, m.Grads, lr)
	return StepStats{Loss: loss, GradNorm: norm, LR: lr}, nil
}

// Eval returns the loss of the current parameters on one batch without
// touching gradients.
func (t *Trainer[F]) Eval(tokens, targets []int32, B, T int) (float64, error) {
	return t.Model.Forward(tokens, targets, B, T)
}

// DefaultTrainConfig returns the "train" defaults for config c (as if the
// config had "train": {}).
func DefaultTrainConfig(c *Config) *TrainConfig {
	t, err := parseTrain([]byte("{}"))
	if err != nil {
		panic(err)
	}
	t.SeqLen = c.MaxLen
	return t
}

// OptimFile returns the optimizer state as a safetensors file: the AdamW
// moments as "m.<name>" and "v.<name>" with the parameters' shapes, and the
// update count as metadata "step".
func (t *Trainer[F]) OptimFile() *safetensors.File {
	m := t.Model
	f := safetensors.New()
	f.Metadata["step"] = strconv.Itoa(t.Opt.Step)
	for i, s := range m.Specs {
		lo, hi := m.Offsets[i], m.Offsets[i]+s.Size()
		putTensor(f, "m."+s.Name, s.Shape, t.Opt.M[lo:hi])
		putTensor(f, "v."+s.Name, s.Shape, t.Opt.V[lo:hi])
	}
	return f
}

// LoadOptim restores the optimizer state written by OptimFile, from src
// (a File, or a Reader streaming it) and its metadata. It returns an error
// naming the tensor that is missing or misshapen, or when the metadata's
// step is not a non-negative integer.
func (t *Trainer[F]) LoadOptim(src safetensors.Source, meta map[string]string) error {
	m := t.Model
	step, err := strconv.Atoi(meta["step"])
	if err != nil || step < 0 {
		return fmt.Errorf("optimizer state: metadata step %q is not a step count", meta["step"])
	}
	for i, s := range m.Specs {
		lo, hi := m.Offsets[i], m.Offsets[i]+s.Size()
		if err := readTensor(t.Opt.M[lo:hi], src, "m."+s.Name, s.Shape); err != nil {
			return fmt.Errorf("optimizer state: %w", err)
		}
		if err := readTensor(t.Opt.V[lo:hi], src, "v."+s.Name, s.Shape); err != nil {
			return fmt.Errorf("optimizer state: %w", err)
		}
	}
	if n := len(src.Names()); n != 2*len(m.Specs) {
		return fmt.Errorf("optimizer state: %d tensors, want %d (m and v of every parameter)", n, 2*len(m.Specs))
	}
	t.Opt.Step = step
	return nil
}
