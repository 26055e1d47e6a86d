package model

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

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
	// Scale is the dynamic loss scale of precision "fp16", nil otherwise.
	Scale *LossScale
	// frozen lists the slab ranges of the parameters train.freeze
	// freezes: their gradients are zeroed before clipping.
	frozen []optim.Group
	// Base is the run's step count before this trainer's first update (a
	// fine-tuning stage after pretraining starts at the pretraining's
	// updates): update Opt.Step runs its passes at step Base+Opt.Step
	// (PassSeed, dropout), while the schedule follows Opt.Step.
	Base int
	// Timing, when set, accumulates the wall time of each step's phases.
	Timing *StepTiming
}

// StepTiming is the wall time Trainer.Step spent in each phase, summed
// over steps: the forward pass with the loss (and a token-level head's
// backward, which runs fused with its forward), the backward pass (zeroing
// the gradients included), and the rest (clipping and the optimizer).
type StepTiming struct {
	Steps                     int
	Forward, Backward, Update time.Duration
}

// LossScale is dynamic loss scaling: Backward runs on the loss times
// Scale; a step whose gradients overflow (any Inf or NaN) is skipped and
// halves Scale, and Interval clean steps in a row double it.
type LossScale struct {
	Scale    float64 // the current scale (starts at InitialLossScale)
	Interval int     // clean steps before doubling (LossScaleInterval)
	Clean    int     // clean steps since the last change
	Skipped  int     // steps skipped for overflow, in the whole run
}

const (
	// InitialLossScale is fp16's first loss scale, 2¹⁵.
	InitialLossScale = 1 << 15
	// LossScaleInterval is the clean steps after which the scale doubles.
	LossScaleInterval = 2000
)

// StepStats reports one training step.
type StepStats struct {
	Loss     float64 // loss before the update
	GradNorm float64 // global gradient norm before clipping
	LR       float64 // learning rate of the update
	// NonFinite says the loss or the gradient norm was NaN or infinite:
	// the step made no update (Model.Diagnose names the first bad tensor).
	NonFinite bool
	// Overflow says the loss-scaled gradients overflowed (precision
	// "fp16", finite loss): the step made no update, Scale halved, and
	// the batch is to be taken again. It is not a non-finite error.
	Overflow bool
	// LossScale is the loss scale the step ran with (0 without one).
	LossScale float64
}

// NewTrainer returns a trainer for m with fresh optimiser state. Parameters
// whose spec says NoDecay (biases, LayerNorm gains, pos.weight, mixer
// biases) are excluded from weight decay; those train.freeze names are
// not updated. NewTrainer panics if the config has no "train" object, or
// a train.freeze prefix matches no parameter (Model.Frozen checks that
// first).
func NewTrainer[F kernels.Float](m *Model[F]) *Trainer[F] {
	tc := m.Config.Train
	if tc == nil {
		panic("model: NewTrainer for a config without \"train\"")
	}
	frozen, err := m.Frozen(tc.Freeze)
	if err != nil {
		panic(err)
	}
	sizes := make([]int, len(m.Specs))
	noDecay := make([]bool, len(m.Specs))
	for i, s := range m.Specs {
		sizes[i], noDecay[i] = s.Size(), s.NoDecay
	}
	m.Seed = tc.Seed
	groups := optim.Groups(sizes, noDecay, frozen)
	t := &Trainer[F]{
		Model: m,
		Opt:   optim.NewAdamW[F](len(m.Params), groups, tc.Beta1, tc.Beta2, tc.Eps, tc.WeightDecay),
		Sched: optim.Schedule{LR: tc.LR, MinLR: tc.MinLR, Warmup: tc.Warmup, Steps: tc.Steps, Constant: tc.Schedule == "constant"},
		Clip:  tc.GradClip,
	}
	for _, g := range groups {
		if g.Frozen {
			t.frozen = append(t.frozen, g)
		}
	}
	if m.half {
		t.Scale = &LossScale{Scale: InitialLossScale, Interval: LossScaleInterval}
	}
	return t
}

// Step performs the update with index Opt.Step on one batch and returns
// its statistics. The model's pass seeds use Base+Opt.Step. With a loss
// scale, gradients are unscaled before clipping; an overflowed step
// (StepStats.Overflow) changes nothing but the scale.
func (t *Trainer[F]) Step(tokens, targets []int32, B, T int) (StepStats, error) {
	m := t.Model
	m.Step = t.Base + t.Opt.Step
	var scale float64
	if t.Scale != nil {
		scale = t.Scale.Scale
	}
	m.Train, m.LossScale = true, scale // the forward already runs the head's backward
	var t0 time.Time
	if t.Timing != nil {
		t0 = time.Now()
		defer func() { // t0 is then the end of the backward pass
			t.Timing.Update += time.Since(t0)
			t.Timing.Steps++
		}()
	}
	loss, err := m.Forward(tokens, targets, B, T)
	if err != nil {
		m.Train, m.LossScale = false, 0
		return StepStats{}, err
	}
	if t.Timing != nil {
		t.Timing.Forward += time.Since(t0)
		t0 = time.Now()
	}
	m.ZeroGrad()
	m.Backward()
	m.LossScale, m.Train = 0, false
	if t.Timing != nil {
		t.Timing.Backward += time.Since(t0)
		t0 = time.Now()
	}
	lr := t.Sched.At(t.Opt.Step)
	lossOK := !math.IsNaN(loss) && !math.IsInf(loss, 0)
	if t.Scale != nil {
		kernels.Scale(m.Grads, F(1/scale)) // an Inf or NaN stays one
	}
	for _, g := range t.frozen {
		clear(m.Grads[g.Lo:g.Hi])
	}
	norm := optim.ClipGradNorm(t.Opt.Threads, m.Grads, t.Clip)
	if t.Scale != nil && lossOK && (math.IsNaN(norm) || math.IsInf(norm, 0)) {
		t.Scale.Scale /= 2
		t.Scale.Clean = 0
		t.Scale.Skipped++
		return StepStats{Loss: loss, GradNorm: norm, LR: lr, Overflow: true, LossScale: scale}, nil
	}
	if finite := lossOK && !math.IsNaN(norm) && !math.IsInf(norm, 0); !finite {
		// No update: the parameters, the optimizer state and its step
		// count stay those before the batch.
		return StepStats{Loss: loss, GradNorm: norm, LR: lr, NonFinite: true, LossScale: scale}, nil
	}
	t.Opt.Update(m.Params, m.Grads, lr)
	if t.Scale != nil {
		if t.Scale.Clean++; t.Scale.Clean >= t.Scale.Interval {
			t.Scale.Scale *= 2
			t.Scale.Clean = 0
		}
	}
	return StepStats{Loss: loss, GradNorm: norm, LR: lr, LossScale: scale}, nil
}

// Frozen returns, for each of m's parameters (Specs), whether its name
// starts with one of prefixes, and an error naming a prefix that matches
// no parameter.
func (m *Model[F]) Frozen(prefixes []string) ([]bool, error) {
	if len(prefixes) == 0 {
		return nil, nil
	}
	out := make([]bool, len(m.Specs))
	for _, p := range prefixes {
		if p == "" {
			return nil, fmt.Errorf("train.freeze: an empty prefix would freeze every parameter")
		}
		n := 0
		for i, s := range m.Specs {
			if strings.HasPrefix(s.Name, p) {
				out[i] = true
				n++
			}
		}
		if n == 0 {
			var tops []string
			for _, s := range m.Specs {
				top, _, _ := strings.Cut(s.Name, ".")
				if !slices.Contains(tops, top+".") {
					tops = append(tops, top+".")
				}
			}
			return nil, fmt.Errorf("train.freeze: %q matches no parameter name (they start with %s; blocks.N. is block N)", p, strings.Join(tops, ", "))
		}
	}
	return out, nil
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
