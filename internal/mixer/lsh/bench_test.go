package lsh_test

import (
	"testing"

	"github.com/tokenmix/tokenmix/internal/bench"
	"github.com/tokenmix/tokenmix/internal/mixer/full"
	"github.com/tokenmix/tokenmix/internal/mixer/lsh"
	"github.com/tokenmix/tokenmix/mixer"
)

// benchFwdBwd times one float32 forward+backward of kind k at D=256, 4
// heads, B=1, causal.
func benchFwdBwd(b *testing.B, k mixer.Kind, T int) {
	c := mixer.Config{D: 256, Heads: 4, MaxLen: T, Causal: true, NLayers: 1, Opts: mixer.OptionsOf(k.Name, nil)}
	bench.MixerBenchmark(b, k, c, 1, T)
}

func BenchmarkLSH2048(b *testing.B)  { benchFwdBwd(b, lsh.Kinds()[0], 2048) }
func BenchmarkLSH8192(b *testing.B)  { benchFwdBwd(b, lsh.Kinds()[0], 8192) }
func BenchmarkFull2048(b *testing.B) { benchFwdBwd(b, full.Kinds()[0], 2048) }
func BenchmarkFull8192(b *testing.B) { benchFwdBwd(b, full.Kinds()[0], 8192) }
