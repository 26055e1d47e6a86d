package topk_test

import (
	"testing"

	"github.com/tokenmix/tokenmix/internal/bench"
	"github.com/tokenmix/tokenmix/internal/mixer/topk"
	"github.com/tokenmix/tokenmix/mixer"
)

// BenchmarkTopK8T2048 times forward+backward of one float32 top-k layer
// (k=8) at d=256, 4 heads, B=1, T=2048, causal.
func BenchmarkTopK8T2048(b *testing.B) {
	c := mixer.Config{D: 256, Heads: 4, MaxLen: 2048, Causal: true, NLayers: 1, Opts: mixer.OptionsOf("topk", map[string]any{"k": 8})}
	bench.MixerBenchmark(b, topk.Kinds()[0], c, 1, 2048)
}
