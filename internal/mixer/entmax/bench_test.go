package entmax_test

import (
	"testing"

	"github.com/tokenmix/tokenmix/internal/bench"
	"github.com/tokenmix/tokenmix/internal/mixer/entmax"
	"github.com/tokenmix/tokenmix/mixer"
)

// benchEntmax times forward+backward of one float32 entmax layer with opts
// at d=256, 4 heads, B=1, length T, causal.
func benchEntmax(b *testing.B, opts map[string]any, T int) {
	c := mixer.Config{D: 256, Heads: 4, MaxLen: T, Causal: true, NLayers: 1, Opts: mixer.OptionsOf("entmax", opts)}
	bench.MixerBenchmark(b, entmax.Kinds()[0], c, 1, T)
}

func BenchmarkEntmax15T2048(b *testing.B)  { benchEntmax(b, map[string]any{"alpha": 1.5}, 2048) }
func BenchmarkSparsemaxT2048(b *testing.B) { benchEntmax(b, map[string]any{"alpha": 2.0}, 2048) }
func BenchmarkEntmaxLearnedT512(b *testing.B) {
	benchEntmax(b, map[string]any{"alpha": 1.5, "learn_alpha": true}, 512)
}
