package bench_test

import (
	"testing"

	"github.com/tokenmix/tokenmix/internal/bench"
	"github.com/tokenmix/tokenmix/internal/mixer/full"
	"github.com/tokenmix/tokenmix/mixer"
)

func BenchmarkFull16K(b *testing.B) {
	bench.MixerBenchmark(b, full.Kinds()[0], mixer.Config{D: 256, Heads: 4, MaxLen: 16384, Causal: true}, 1, 16384)
}
