package bench

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tokenmix/tokenmix/internal/bench/stat"
	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/memstat"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/mixer"
)

// Layer is one float32 mixer layer with its weights, inputs and buffers,
// ready to time: the subject of Mixer and MixerBenchmark.
type Layer struct {
	m                mixer.Mixer[float32]
	x, dout, out, dx []float32 // [B·T·D]
	act, scr         []float32
	p                mixer.Pass
	B, T, D          int
}

// NewLayer builds kind k's float32 mixer of config c for batch B and
// length T, with the weights model.Init gives block c.Layer (seed 1, so
// GPT-2 initialisation), inputs x and output gradients dout drawn from
// N(0,1) by a fixed seed, and the pass seed of step 0, on the default
// thread budget at the time of the call. It returns an error if T exceeds
// c.MaxLen or the mixer cannot be built.
func NewLayer(k mixer.Kind, c mixer.Config, B, T int) (*Layer, error) {
	if T > c.MaxLen {
		return nil, fmt.Errorf("bench: len %d exceeds max_len %d", T, c.MaxLen)
	}
	mx, err := k.New32(c)
	if err != nil {
		return nil, err
	}
	var w, g [][]float32
	for _, s := range mx.Params() {
		wi := make([]float32, s.Size())
		model.InitTensor(wi, s, 1, c.NLayers)
		w, g = append(w, wi), append(g, make([]float32, s.Size()))
	}
	mx.Bind(w, g)
	D, th := c.D, mixer.Budget(0)
	rng := rand.New(rand.NewPCG(1, 1))
	return &Layer{m: mx, B: B, T: T, D: D,
		x: randn(rng, B*T*D), dout: randn(rng, B*T*D), out: make([]float32, B*T*D), dx: make([]float32, B*T*D),
		act: make([]float32, mx.ActSize(B, T)), scr: make([]float32, mx.ScratchSize(B, T, th)),
		p: mixer.Pass{B: B, T: T, Seed: model.PassSeed(0, 0, c.Layer), Threads: th}}, nil
}

// Forward runs the layer's forward pass.
func (l *Layer) Forward() { l.m.Forward(l.out, l.act, l.scr, l.x, l.p) }

// Backward runs the layer's backward pass on the activations of the last
// Forward; it accumulates into the weight gradients.
func (l *Layer) Backward() { l.m.Backward(l.dx, l.scr, l.dout, l.act, l.x, l.p) }

// Bytes is the layer's planned memory (model.MixerBytes).
func (l *Layer) Bytes() int64 { return model.MixerBytes(l.m, l.B, l.T, l.D, l.p.Threads) }

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
// (a Layer) at batch B and length T: forward and backward alternate for
// MixerWarmup, then each is the median of reps samples (see median).
// Only that one layer is built, so peak_rss_bytes is the layer's own
// memory plus the process base. planned_bytes is model.MixerBytes;
// peak_rss_bytes is this process's VmHWM afterwards (run it in a fresh
// process). Mixer returns an error if T exceeds c.MaxLen or the mixer
// cannot be built.
func Mixer(c *model.Config, B, T, reps int) (MixerResult, error) {
	l, err := NewLayer(c.Kind(), c.MixerConfig(0), B, T)
	if err != nil {
		return MixerResult{}, err
	}
	// A fresh process on the 2-vCPU machine runs sub-millisecond parallel
	// calls up to 2-3x slower for its first second or so (FNet at T=1024,
	// 2 threads: forward 0.65-0.95 ms against 0.27 ms later), so the
	// samples start only after MixerWarmup of forward and backward calls.
	for t0 := time.Now(); time.Since(t0) < MixerWarmup; {
		l.Forward()
		l.Backward()
	}
	fwd := median(l.Forward, reps)
	bwd := median(l.Backward, reps)
	r := MixerResult{Mixer: c.Kind().Name, Len: T, Batch: B, Precision: c.Precision, BF16Kernels: kernels.BF16Path(), FwdMs: fwd * 1e3, BwdMs: bwd * 1e3,
		PlannedBytes: l.Bytes()}
	r.PeakRSSBytes, err = memstat.PeakRSS()
	return r, err
}

// MixerBenchmark is the `go test -bench` form of Mixer: each iteration is
// one Forward and one Backward of a Layer of kind k (config c, batch B,
// length T), after one untimed Forward. Besides ns/op it reports tokens
// per second (tok/s) and the process's CPU time per iteration
// (cpu-ns/op), which a busy machine disturbs less than wall time.
// Each package's mixer benchmarks are one call of it:
//
//	func BenchmarkTopK8T2048(b *testing.B) { bench.MixerBenchmark(b, topk.Kinds()[0], cfg, 1, 2048) }
func MixerBenchmark(b *testing.B, k mixer.Kind, c mixer.Config, B, T int) {
	b.Helper()
	l, err := NewLayer(k, c, B, T)
	if err != nil {
		b.Fatal(err)
	}
	l.Forward() // builds and caches layouts
	b.ResetTimer()
	c0 := stat.ProcessCPU()
	for i := 0; i < b.N; i++ {
		l.Forward()
		l.Backward()
	}
	cpu := stat.ProcessCPU() - c0
	b.ReportMetric(float64(b.N*B*T)/b.Elapsed().Seconds(), "tok/s")
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}
