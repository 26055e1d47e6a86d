package full

import (
	"math"
	"testing"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/mixer/attn"
	"github.com/tokenmix/tokenmix/internal/mixer/attn/attntest"
	"github.com/tokenmix/tokenmix/internal/mixer/mixertest"
	"github.com/tokenmix/tokenmix/mixer"
)

// smallTile is the kind with (tile+1)×tile blocks, so short test sequences span
// several tiles and T = 7, 9 are not multiples of the tile.
func smallTile(tile int) mixer.Kind {
	k := Kinds()[0]
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

// cases are the kind's declared conformance cases (the registry's suite
// runs them with the default tiles).
func cases() []mixertest.Case { return mixertest.Cases(Kinds()[0]) }

// TestConformance runs the declared cases with 4×4 score tiles, so the
// short sequences span several tiles.
func TestConformance(t *testing.T) {
	mixertest.Run(t, smallTile(4), cases())
}

func TestFloat32Agrees(t *testing.T) {
	for _, path := range kernels.Paths() {
		old := kernels.SetPath(path)
		for _, c := range cases() {
			mixertest.Float32Agrees(t, smallTile(4), c, 5e-4)
		}
		mixertest.Float32Agrees(t, Kinds()[0], cases()[1], 5e-4)
		mixertest.Float32Agrees(t, Kinds()[0], cases()[5], 5e-4)
		kernels.SetPath(old)
	}
}

func TestNaiveConformance(t *testing.T) {
	k := Kinds()[0]
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
// bidirectional rows that only see position 0), with ALiBi and with RoPE
// (the twin rotates by the definition, attn.RopeRef, not the table).
func TestTwin(t *testing.T) {
	for _, pos := range []map[string]any{{}, {"alibi": true}, {"rope": true, "rope_base": 10}} {
		alibi := pos["alibi"] == true
		for _, causal := range []bool{true, false} {
			for _, T := range []int{1, 5, 8, 13} {
				for _, tile := range []attn.Tiles{{Q: 1, K: 1}, {Q: 3, K: 3}, {Q: 4, K: 2}, {Q: 2, K: 5}, {Q: 64, K: 64}, Tiles} {
					for _, pad := range []bool{false, true} {
						c := mixer.Config{D: 8, Heads: 2, MaxLen: T, Causal: causal,
							Opts: mixer.OptionsOf("full", pos)}
						f, _ := New[float64](c)
						f.Tiles = tile
						n, _ := NewNaive[float64](c)
						if (f.Slopes != nil) != alibi || (n.Slopes != nil) != alibi || (f.Rope != nil) != (pos["rope"] == true) || (n.Rope != nil) != (f.Rope != nil) {
							t.Fatalf("%v: slopes %v, naive %v; rope %v, naive %v", pos, f.Slopes, n.Slopes, f.Rope, n.Rope)
						}
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
}

// TestALiBiWeights checks the bias itself, which the twin check cannot
// (both twins read the same slopes): with q = k = 0 every score is the bias
// alone, so with v and o the identity, output i of head h is
// Σ_j softmax_j(−m_h·|i−j|)·x_j, the slopes being 2^(−8(h+1)/H). The
// mixer runs a longer sequence first, so the bias comes from a table built
// for another length.
func TestALiBiWeights(t *testing.T) {
	const T, D, H = 6, 4, 2
	for _, causal := range []bool{false, true} {
		c := mixer.Config{D: D, Heads: H, MaxLen: T, Causal: causal, Opts: mixer.OptionsOf("full", map[string]any{"alibi": true})}
		a, err := New[float64](c)
		if err != nil {
			t.Fatal(err)
		}
		a.Tiles = attn.Tiles{Q: 4, K: 3} // blocks and diagonals both
		var w, g [][]float64
		for i, s := range a.Params() {
			v := make([]float64, s.Size())
			if i == 4 || i == 6 { // v.weight, o.weight: identity
				for d := 0; d < D; d++ {
					v[d*D+d] = 1
				}
			}
			w, g = append(w, v), append(g, make([]float64, s.Size()))
		}
		a.Bind(w, g)
		// A longer pass first: its bias table must serve the shorter one.
		const L = 11
		a.Forward(make([]float64, L*D), make([]float64, a.ActSize(1, L)), make([]float64, a.ScratchSize(1, L, 0)),
			make([]float64, L*D), mixer.Pass{B: 1, T: L})
		x := make([]float64, T*D)
		for i := range x {
			x[i] = float64(i%7) - 2.5
		}
		out := make([]float64, T*D)
		a.Forward(out, make([]float64, a.ActSize(1, T)), make([]float64, a.ScratchSize(1, T, 0)), x, mixer.Pass{B: 1, T: T})
		for h, m := range []float64{1.0 / 16, 1.0 / 256} {
			for i := 0; i < T; i++ {
				var z float64
				want := make([]float64, D/H)
				for j := 0; j < T; j++ {
					if causal && j > i {
						continue
					}
					e := math.Exp(-m * math.Abs(float64(i-j)))
					z += e
					for cc := range want {
						want[cc] += e * x[j*D+h*D/H+cc]
					}
				}
				for cc := range want {
					if got := out[i*D+h*D/H+cc]; math.Abs(got-want[cc]/z) > 1e-12 {
						t.Errorf("causal %v head %d row %d: %g, want %g", causal, h, i, got, want[cc]/z)
					}
				}
			}
		}
	}
}
