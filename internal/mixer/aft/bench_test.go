package aft

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/tokenmix/tokenmix/internal/mixer/fnet"
	"github.com/tokenmix/tokenmix/internal/mixer/full"
	"github.com/tokenmix/tokenmix/mixer"
)

// cpuTime is the process's user+system CPU time: on a shared machine it is
// a steadier cost measure than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchMixer times one float32 forward+backward of kind k at d=256, B=1,
// reporting wall ns/op and cpu-ns/op.
func benchMixer(b *testing.B, k mixer.Kind, opts map[string]any, causal bool, T int) {
	const D = 256
	m, err := k.New32(mixer.Config{D: D, Heads: 4, MaxLen: T, Causal: causal, NLayers: 1, Opts: mixer.OptionsOf(k.Name, opts)})
	if err != nil {
		b.Fatal(err)
	}
	var w, g [][]float32
	for _, s := range m.Params() {
		v := make([]float32, s.Size())
		for i := range v {
			v[i] = float32((i*7919)%201-100) * 1e-3
		}
		w, g = append(w, v), append(g, make([]float32, s.Size()))
	}
	m.Bind(w, g)
	x := make([]float32, T*D)
	for i := range x {
		x[i] = float32((i*31)%17-8) * 0.1
	}
	out, dx := make([]float32, T*D), make([]float32, T*D)
	act := make([]float32, m.ActSize(1, T))
	scr := make([]float32, m.ScratchSize(1, T))
	p := mixer.Pass{B: 1, T: T}
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		m.Forward(out, act, scr, x, p)
		m.Backward(dx, scr, out, act, x, p)
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkMixers compares the attention-free kinds with full attention
// (fwd+bwd, d=256, B=1, bidirectional). Run with
// go test -run X -bench Mixers -benchtime 3x ./internal/mixer/aft/
func BenchmarkMixers(b *testing.B) {
	for _, T := range []int{1024, 4096, 16384} {
		for _, c := range []struct {
			k    mixer.Kind
			opts map[string]any
		}{
			{full.Kinds()[0], nil},
			{Kinds()[1], nil},
			{Kinds()[2], map[string]any{"window": 32}},
			{Kinds()[3], map[string]any{"window": 31}},
			{fnet.Kinds()[0], nil},
			{Kinds()[0], nil},
		} {
			if T > 4096 && (c.k.Name == "full" || c.k.Name == "aft_full") {
				continue // quadratic: extrapolate from T=4096
			}
			b.Run(fmt.Sprintf("%s/T=%d", c.k.Name, T), func(b *testing.B) { benchMixer(b, c.k, c.opts, false, T) })
		}
	}
}
