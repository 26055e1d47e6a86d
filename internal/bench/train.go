package bench

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"time"

	"github.com/tokenmix/tokenmix/internal/bench/stat"
	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/memstat"
	"github.com/tokenmix/tokenmix/internal/model"
)

// TrainResult is one `tokenmix bench train` measurement.
type TrainResult struct {
	Precision    string  `json:"precision"`
	BF16Kernels  string  `json:"bf16_kernels"` // the bf16 GEMM path (kernels.BF16Path)
	TokensPerS   float64 `json:"tokens_per_s"`
	StepMs       float64 `json:"step_ms"`
	PlannedBytes int64   `json:"planned_bytes"`
	ParamBytes   int64   `json:"param_bytes"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	// Profile is the timed steps' breakdown (Train's profile), or nil.
	Profile *StepProfile `json:"profile,omitempty"`
}

// Train times full float32 training steps (forward, backward, clipping and
// AdamW) of config c on random tokens at batch B and length T: one warm-up
// step, then the median of reps steps. The config's "train" object is used
// when present, else its defaults. planned_bytes is the model's memory plan
// (activations and activation gradients); param_bytes is parameters,
// gradients and AdamW moments. With profile, the timed steps run under a
// CPU profile, whose breakdown by phase and by kernel (the top
// profileKernels) is the result's Profile; with pprofOut as well, that
// profile is written to the file pprofOut (pprof's format, for go tool
// pprof), which is created before the first step and removed if the
// measurement fails.
func Train(c *model.Config, B, T, reps int, profile bool, pprofOut string) (res TrainResult, err error) {
	if T > c.MaxLen {
		return TrainResult{}, fmt.Errorf("bench: len %d exceeds max_len %d", T, c.MaxLen)
	}
	var out *os.File
	if pprofOut != "" {
		if !profile {
			return TrainResult{}, fmt.Errorf("bench: a CPU profile file needs profiling on")
		}
		if out, err = os.Create(pprofOut); err != nil {
			return TrainResult{}, fmt.Errorf("bench: --cpuprofile: %v", err)
		}
		defer func() {
			if cerr := out.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("bench: --cpuprofile: %v", cerr)
			}
			if err != nil {
				os.Remove(pprofOut)
			}
		}()
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
	var prof bytes.Buffer
	var timing model.StepTiming
	if profile {
		if err := pprof.StartCPUProfile(&prof); err != nil {
			return TrainResult{}, fmt.Errorf("bench: --profile: %v", err)
		}
		tr.Timing = &timing
	}
	ts := make([]float64, reps)
	for i := range ts {
		t0 := time.Now()
		if err := step(); err != nil {
			pprof.StopCPUProfile()
			return TrainResult{}, err
		}
		ts[i] = time.Since(t0).Seconds()
	}
	var sp *StepProfile
	if profile {
		pprof.StopCPUProfile()
		if out != nil {
			if _, err := out.Write(prof.Bytes()); err != nil {
				return TrainResult{}, fmt.Errorf("bench: --cpuprofile: %v", err)
			}
		}
		sp = &StepProfile{}
		total := timing.Forward + timing.Backward + timing.Update
		for _, ph := range []struct {
			name string
			d    time.Duration
		}{{"forward and loss", timing.Forward}, {"backward", timing.Backward}, {"clipping and optimizer", timing.Update}} {
			sp.Phases = append(sp.Phases, Share{Name: ph.name, Share: float64(ph.d) / float64(max(total, 1)),
				Ms: float64(ph.d) / float64(time.Millisecond) / float64(max(timing.Steps, 1))})
		}
		if sp.Kernels, sp.Samples, err = kernelShares(prof.Bytes(), profileKernels); err != nil {
			return TrainResult{}, err
		}
	}
	sec := stat.Median(ts)
	plan := m.Plan(B, T)
	r := TrainResult{Precision: c.Precision, BF16Kernels: kernels.BF16Path(), TokensPerS: float64(B*T) / sec, StepMs: sec * 1e3,
		PlannedBytes: plan.Bytes(), ParamBytes: m.ParamBytes(), Profile: sp}
	r.PeakRSSBytes, err = memstat.PeakRSS()
	return r, err
}

// profileKernels is how many kernels a StepProfile lists.
const profileKernels = 15

func randn(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}
