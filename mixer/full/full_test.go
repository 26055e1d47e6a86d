package full

import (
	"testing"

	"tokenmix/kernels"
	"tokenmix/mixer"
	"tokenmix/mixer/attn"
	"tokenmix/mixer/attn/attntest"
	"tokenmix/mixer/mixertest"
)

// smallTile is the kind with (tile+1)×tile blocks, so short test sequences span
// several tiles and T = 7, 9 are not multiples of the tile.
func smallTile(tile int) mixer.Kind {
	k := Kind()
	k.New32 = func(c mixer.Config) (mixer.Mixer[float32], error) {
		a, err := New[float32](c)
		if err == nil {
			a.Tiles = attn.Tiles{Q: tile + 1, K: tile}
		}
		return a, err
	}
	k.New64 = func(c mixer.Config) (mixer.Mixer[float64], error) {
		a, err := New[float64](c)
		if err == nil {
			a.Tiles = attn.Tiles{Q: tile + 1, K: tile}
		}
		return a, err
	}
	return k
}

func cases() []mixertest.Case {
	cfg := func(causal bool) mixer.Config {
		return mixer.Config{D: 8, Heads: 2, MaxLen: 16, Causal: causal, NLayers: 1, Opts: mixer.OptionsOf("full", nil)}
	}
	return []mixertest.Case{
		{Name: "causal", Cfg: cfg(true), B: 2, T: 9},
		{Name: "causal-pad", Cfg: cfg(true), B: 2, T: 9, Pad: true},
		{Name: "bidir", Cfg: cfg(false), B: 2, T: 7},
		{Name: "bidir-pad", Cfg: cfg(false), B: 2, T: 7, Pad: true},
	}
}

func TestConformance(t *testing.T) {
	mixertest.Run(t, smallTile(4), cases())
	mixertest.Run(t, Kind(), cases()[:2])
}

func TestFloat32Agrees(t *testing.T) {
	for _, path := range kernels.Paths() {
		old := kernels.SetPath(path)
		for _, c := range cases() {
			mixertest.Float32Agrees(t, smallTile(4), c, 5e-4)
		}
		mixertest.Float32Agrees(t, Kind(), cases()[1], 5e-4)
		kernels.SetPath(old)
	}
}

func TestNaiveConformance(t *testing.T) {
	k := Kind()
	k.Name = "full-naive"
	k.New64 = func(c mixer.Config) (mixer.Mixer[float64], error) { return NewNaive[float64](c) }
	mixertest.Run(t, k, cases())
}

func TestOptionsRejected(t *testing.T) {
	c := mixer.Config{D: 8, Heads: 2, MaxLen: 8, Opts: mixer.OptionsOf("full", map[string]any{"block": 4})}
	if _, err := New[float32](c); err == nil {
		t.Fatal("unknown option accepted")
	}
	c = mixer.Config{D: 8, Heads: 3, MaxLen: 8, Opts: mixer.OptionsOf("full", nil)}
	if _, err := New[float32](c); err == nil {
		t.Fatal("heads not dividing d accepted")
	}
}

// TestTwin compares the tiled kernel with the materialised twin for tiles
// that divide T, do not, and exceed it, with and without padding (including
// a sequence whose padded queries see no key at all in causal mode... and
// bidirectional rows that only see position 0).
func TestTwin(t *testing.T) {
	for _, causal := range []bool{true, false} {
		for _, T := range []int{1, 5, 8, 13} {
			for _, tile := range []attn.Tiles{{Q: 1, K: 1}, {Q: 3, K: 3}, {Q: 4, K: 2}, {Q: 2, K: 5}, {Q: 64, K: 64}, Tiles} {
				for _, pad := range []bool{false, true} {
					c := mixer.Config{D: 8, Heads: 2, MaxLen: T, Causal: causal, Opts: mixer.OptionsOf("full", nil)}
					f, _ := New[float64](c)
					f.Tiles = tile
					n, _ := NewNaive[float64](c)
					var pm []bool
					if pad {
						pm = attntest.Pad(2, T, true)
					}
					attntest.Twins(t, f, n, 2, T, 8, pm, 1e-7, uint64(T*100+tile.Q*10+tile.K))
				}
			}
		}
	}
}
