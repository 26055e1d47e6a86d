package sparse_test

import (
	"testing"

	"github.com/tokenmix/tokenmix/internal/bench"
	"github.com/tokenmix/tokenmix/internal/mixer/full"
	"github.com/tokenmix/tokenmix/internal/mixer/sparse"
	"github.com/tokenmix/tokenmix/mixer"
)

// benchCfg is the benchmarks' shape: d=256, 4 heads, B=1, causal; strided
// l=64, fixed l=64 c=8, combine=heads. Each iteration is one forward plus
// backward.
func benchCfg(kind string, opts map[string]any) mixer.Config {
	return mixer.Config{D: 256, Heads: 4, MaxLen: 1 << 16, Causal: true, NLayers: 1, Opts: mixer.OptionsOf(kind, opts)}
}

var (
	stridedOpts = map[string]any{"block": 64, "combine": "heads"}
	fixedOpts   = map[string]any{"block": 64, "summary": 8, "combine": "heads"}
)

func BenchmarkFull1024(b *testing.B) {
	bench.MixerBenchmark(b, full.Kinds()[0], benchCfg("full", nil), 1, 1024)
}

// BenchmarkFull1024B4 is one attention layer of the d256 training step
// (scripts/speed_d256.json at T=1024, B=4).
func BenchmarkFull1024B4(b *testing.B) {
	bench.MixerBenchmark(b, full.Kinds()[0], benchCfg("full", nil), 4, 1024)
}
func BenchmarkFull4096(b *testing.B) {
	bench.MixerBenchmark(b, full.Kinds()[0], benchCfg("full", nil), 1, 4096)
}
func BenchmarkStrided1024(b *testing.B) {
	bench.MixerBenchmark(b, sparse.Kinds()[0], benchCfg("strided", stridedOpts), 1, 1024)
}
func BenchmarkStrided4096(b *testing.B) {
	bench.MixerBenchmark(b, sparse.Kinds()[0], benchCfg("strided", stridedOpts), 1, 4096)
}
func BenchmarkFixed1024(b *testing.B) {
	bench.MixerBenchmark(b, sparse.Kinds()[1], benchCfg("fixed", fixedOpts), 1, 1024)
}
func BenchmarkFixed4096(b *testing.B) {
	bench.MixerBenchmark(b, sparse.Kinds()[1], benchCfg("fixed", fixedOpts), 1, 4096)
}

// The long-sequence entries take minutes for full attention; run them with
// -bench 16384 -benchtime 1x on an idle machine.
func BenchmarkFull16384(b *testing.B) {
	bench.MixerBenchmark(b, full.Kinds()[0], benchCfg("full", nil), 1, 16384)
}

// BenchmarkFull16384BF16 is BenchmarkFull16384 in precision bf16.
func BenchmarkFull16384BF16(b *testing.B) {
	c := benchCfg("full", nil)
	c.Precision = "bf16"
	bench.MixerBenchmark(b, full.Kinds()[0], c, 1, 16384)
}
func BenchmarkStrided16384(b *testing.B) {
	bench.MixerBenchmark(b, sparse.Kinds()[0], benchCfg("strided", stridedOpts), 1, 16384)
}
func BenchmarkFixed16384(b *testing.B) {
	bench.MixerBenchmark(b, sparse.Kinds()[1], benchCfg("fixed", fixedOpts), 1, 16384)
}
