package bench

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/mixer"
)

// MixerWarmup is how long Mixer calls forward and backward before it
// times them (see Mixer).
var MixerWarmup = time.Second

// MixerResult is one `tokenmix bench mixer` measurement.
type MixerResult struct {
	Mixer        string  `json:"mixer"`
	Len          int     `json:"len"`
	Batch        int     `json:"batch"`
	Precision    string  `json:"precision"`
	BF16Kernels  string  `json:"bf16_kernels"` // the bf16 GEMM path (kernels.BF16Path)
	FwdMs        float64 `json:"fwd_ms"`
	BwdMs        float64 `json:"bwd_ms"`
	PlannedBytes int64   `json:"planned_bytes"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
}

// Mixer times forward and backward of block 0's mixer of config c alone
// (float32, GPT-2-initialised weights, N(0,1) inputs) at batch B and length
// T: the median of reps samples after a warm-up of MixerWarmup. Only that one layer is
// built, so peak_rss_bytes is the layer's own memory plus the process base.
// planned_bytes is model.MixerBytes; peak_rss_bytes is this process's VmHWM
// afterwards (run it in a fresh process). Mixer returns an error if T
// exceeds c.MaxLen or the mixer cannot be built.
func Mixer(c *model.Config, B, T, reps int) (MixerResult, error) {
	if T > c.MaxLen {
		return MixerResult{}, fmt.Errorf("bench: len %d exceeds max_len %d", T, c.MaxLen)
	}
	mx, err := c.Kind().New32(c.MixerConfig(0))
	if err != nil {
		return MixerResult{}, err
	}
	var w, g [][]float32
	for _, s := range mx.Params() {
		wi := make([]float32, s.Size())
		model.InitTensor(wi, s, 1, c.NLayers)
		w, g = append(w, wi), append(g, make([]float32, s.Size()))
	}
	mx.Bind(w, g)
	D := c.DModel
	rng := rand.New(rand.NewPCG(1, 1))
	x, dout := randn(rng, B*T*D), randn(rng, B*T*D)
	out, dx := make([]float32, B*T*D), make([]float32, B*T*D)
	act := make([]float32, mx.ActSize(B, T))
	scr := make([]float32, mx.ScratchSize(B, T))
	p := mixer.Pass{B: B, T: T, Seed: model.PassSeed(0, 0, 0)}
	forward := func() { mx.Forward(out, act, scr, x, p) }
	backward := func() { mx.Backward(dx, scr, dout, act, x, p) }
	// A fresh process on the 2-vCPU machine runs sub-millisecond parallel
	// calls up to 2-3x slower for its first second or so (FNet at T=1024,
	// 2 threads: forward 0.65-0.95 ms against 0.27 ms later), so the
	// samples start only after MixerWarmup of forward and backward calls.
	for t0 := time.Now(); time.Since(t0) < MixerWarmup; {
		forward()
		backward()
	}
	fwd := median(forward, reps)
	bwd := median(backward, reps)
	r := MixerResult{Mixer: c.Kind().Name, Len: T, Batch: B, Precision: c.Precision, BF16Kernels: kernels.BF16Path(), FwdMs: fwd * 1e3, BwdMs: bwd * 1e3,
		PlannedBytes: model.MixerBytes(mx, B, T, D)}
	r.PeakRSSBytes, err = PeakRSS()
	return r, err
}

// TrainResult is one `tokenmix bench train` measurement.
type TrainResult struct {
	Precision    string  `json:"precision"`
	BF16Kernels  string  `json:"bf16_kernels"` // the bf16 GEMM path (kernels.BF16Path)
	TokensPerS   float64 `json:"tokens_per_s"`
	StepMs       float64 `json:"step_ms"`
	PlannedBytes int64   `json:"planned_bytes"`
	ParamBytes   int64   `json:"param_bytes"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
}

// Train times full float32 training steps (forward, backward, clipping and
// AdamW) of config c on random tokens at batch B and length T: one warm-up
// step, then the median of reps steps. The config's "train" object is used
// when present, else its defaults. planned_bytes is the model's memory plan
// (activations and activation gradients); param_bytes is parameters,
// gradients and AdamW moments.
func Train(c *model.Config, B, T, reps int) (TrainResult, error) {
	if T > c.MaxLen {
		return TrainResult{}, fmt.Errorf("bench: len %d exceeds max_len %d", T, c.MaxLen)
	}
	if c.Train == nil {
		c.Train = model.DefaultTrainConfig(c)
	}
	m, err := model.New[float32](c)
	if err != nil {
		return TrainResult{}, err
	}
	m.Init(1)
	tr := model.NewTrainer(m)
	rng := rand.New(rand.NewPCG(2, 2))
	tokens, targets := make([]int32, B*T), make([]int32, B*T)
	V := c.VocabSize
	for i := range tokens {
		tokens[i] = int32(rng.IntN(V))
		if c.PadID != nil && int(tokens[i]) == *c.PadID {
			tokens[i] = int32((*c.PadID + 1) % V)
		}
	}
	if c.Task == "classify" {
		targets = targets[:B]
		for i := range targets {
			targets[i] = int32(rng.IntN(c.NClasses))
		}
	} else {
		for i := range targets {
			targets[i] = int32(rng.IntN(V))
		}
	}
	step := func() error {
		_, err := tr.Step(tokens, targets, B, T)
		return err
	}
	if err := step(); err != nil {
		return TrainResult{}, err
	}
	ts := make([]float64, reps)
	for i := range ts {
		t0 := time.Now()
		if err := step(); err != nil {
			return TrainResult{}, err
		}
		ts[i] = time.Since(t0).Seconds()
	}
	sort.Float64s(ts)
	sec := ts[reps/2]
	plan := m.Plan(B, T)
	r := TrainResult{Precision: c.Precision, BF16Kernels: kernels.BF16Path(), TokensPerS: float64(B*T) / sec, StepMs: sec * 1e3, PlannedBytes: plan.Bytes(), ParamBytes: m.ParamBytes()}
	r.PeakRSSBytes, err = PeakRSS()
	return r, err
}

func randn(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}
