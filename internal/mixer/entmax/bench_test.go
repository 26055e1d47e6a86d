package entmax

import (
	"math/rand/v2"
	"testing"

	"github.com/tokenmix/tokenmix/mixer"
)

// benchLayer times forward+backward of one float32 mixer layer at d=256,
// 4 heads, B=1, causal, with GPT-2-sized random weights.
func benchLayer(b *testing.B, m mixer.Mixer[float32], T int) {
	const B, D = 1, 256
	rng := rand.New(rand.NewPCG(1, 2))
	var w, g [][]float32
	for _, s := range m.Params() {
		v := make([]float32, s.Size())
		for i := range v {
			v[i] = float32(rng.NormFloat64() * 0.02)
			if s.Init == mixer.InitConst {
				v[i] = float32(s.Value)
			}
		}
		w = append(w, v)
		g = append(g, make([]float32, s.Size()))
	}
	m.Bind(w, g)
	x := make([]float32, B*T*D)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	out := make([]float32, len(x))
	dx := make([]float32, len(x))
	act := make([]float32, m.ActSize(B, T))
	scr := make([]float32, m.ScratchSize(B, T))
	p := mixer.Pass{B: B, T: T}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Forward(out, act, scr, x, p)
		m.Backward(dx, scr, out, act, x, p)
	}
}

func benchEntmax(b *testing.B, opts map[string]any, T int) {
	m, err := New[float32](mixer.Config{D: 256, Heads: 4, MaxLen: T, Causal: true, NLayers: 1, Opts: mixer.OptionsOf("entmax", opts)})
	if err != nil {
		b.Fatal(err)
	}
	benchLayer(b, m, T)
}

func BenchmarkEntmax15T2048(b *testing.B)  { benchEntmax(b, map[string]any{"alpha": 1.5}, 2048) }
func BenchmarkSparsemaxT2048(b *testing.B) { benchEntmax(b, map[string]any{"alpha": 2.0}, 2048) }
func BenchmarkEntmaxLearnedT512(b *testing.B) {
	benchEntmax(b, map[string]any{"alpha": 1.5, "learn_alpha": true}, 512)
}
