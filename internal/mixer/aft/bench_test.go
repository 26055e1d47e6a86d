package aft_test

import (
	"fmt"
	"testing"

	"github.com/tokenmix/tokenmix/internal/bench"
	"github.com/tokenmix/tokenmix/internal/mixer/aft"
	"github.com/tokenmix/tokenmix/internal/mixer/fnet"
	"github.com/tokenmix/tokenmix/internal/mixer/full"
	"github.com/tokenmix/tokenmix/mixer"
)

// BenchmarkMixers compares the attention-free kinds with full attention
// (fwd+bwd, d=256, 4 heads, B=1, bidirectional). Run with
// go test -run X -bench Mixers -benchtime 3x ./internal/mixer/aft/
func BenchmarkMixers(b *testing.B) {
	for _, T := range []int{1024, 4096, 16384} {
		for _, c := range []struct {
			k    mixer.Kind
			opts map[string]any
		}{
			{full.Kinds()[0], nil},
			{aft.Kinds()[1], nil},
			{aft.Kinds()[2], map[string]any{"window": 32}},
			{aft.Kinds()[3], map[string]any{"window": 31}},
			{fnet.Kinds()[0], nil},
			{aft.Kinds()[0], nil},
		} {
			if T > 4096 && (c.k.Name == "full" || c.k.Name == "aft_full") {
				continue // quadratic: extrapolate from T=4096
			}
			cfg := mixer.Config{D: 256, Heads: 4, MaxLen: T, NLayers: 1, Opts: mixer.OptionsOf(c.k.Name, c.opts)}
			b.Run(fmt.Sprintf("%s/T=%d", c.k.Name, T), func(b *testing.B) { bench.MixerBenchmark(b, c.k, cfg, 1, T) })
		}
	}
}
