package topk

import (
	"math/rand/v2"
	"testing"

	"github.com/tokenmix/tokenmix/mixer"
)

// BenchmarkTopK8T2048 times forward+backward of one float32 top-k layer at
// d=256, 4 heads, B=1, T=2048, causal, with GPT-2-sized random weights.
func BenchmarkTopK8T2048(b *testing.B) {
	const B, T, D = 1, 2048, 256
	m, err := New[float32](mixer.Config{D: D, Heads: 4, MaxLen: T, Causal: true, NLayers: 1, Opts: mixer.OptionsOf("topk", map[string]any{"k": 8})})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var w, g [][]float32
	for _, s := range m.Params() {
		v := make([]float32, s.Size())
		for i := range v {
			v[i] = float32(rng.NormFloat64() * 0.02)
		}
		w = append(w, v)
		g = append(g, make([]float32, s.Size()))
	}
	m.Bind(w, g)
	x := make([]float32, B*T*D)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	out, dx := make([]float32, len(x)), make([]float32, len(x))
	act := make([]float32, m.ActSize(B, T))
	scr := make([]float32, m.ScratchSize(B, T))
	p := mixer.Pass{B: B, T: T}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Forward(out, act, scr, x, p)
		m.Backward(dx, scr, out, act, x, p)
	}
}
