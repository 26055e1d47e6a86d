package sparse

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/mixer/attn"
	"github.com/tokenmix/tokenmix/internal/mixer/attn/attntest"
	"github.com/tokenmix/tokenmix/internal/mixer/full"
	"github.com/tokenmix/tokenmix/internal/mixer/mixertest"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer"
)

func cfg(name string, causal bool, opts map[string]any, heads, layer int) mixer.Config {
	return mixer.Config{D: 4 * heads, Heads: heads, MaxLen: 64, Causal: causal, Layer: layer, NLayers: 2,
		Opts: mixer.OptionsOf(name, opts)}
}

// kindName is the sparse kind with the fixed pattern or the strided one.
func kindName(fixed bool) string {
	if fixed {
		return "fixed"
	}
	return "strided"
}

func opts(fixed bool, l, c int, combine string) map[string]any {
	o := map[string]any{"block": l, "combine": combine}
	if fixed {
		o["summary"] = c
	}
	return o
}

// withTile is kind k with score tiles of side tile, so that short test
// sequences span several tiles.
func withTile(k mixer.Kind, tile int) mixer.Kind {
	k.New32 = func(c mixer.Config) (mixer.Mixer[float32], error) {
		a, err := New[float32](c)
		if err == nil {
			a.Tiles = attn.Tiles{Q: tile, K: tile}
		}
		return a, err
	}
	k.New64 = func(c mixer.Config) (mixer.Mixer[float64], error) {
		a, err := New[float64](c)
		if err == nil {
			a.Tiles = attn.Tiles{Q: tile, K: tile}
		}
		return a, err
	}
	return k
}

func TestConformance(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		k := Kinds()[0]
		if fixed {
			k = Kinds()[1]
		}
		var cases []mixertest.Case
		for _, causal := range []bool{true, false} {
			for _, comb := range []string{Heads, Merge, Interleave} {
				layers := []int{0}
				if comb == Interleave {
					layers = []int{0, 1}
				}
				for _, layer := range layers {
					name := fmt.Sprintf("%s/causal=%v/layer%d", comb, causal, layer)
					c := cfg(k.Name, causal, opts(fixed, 3, 1, comb), 2, layer)
					cases = append(cases,
						mixertest.Case{Name: name, Cfg: c, B: 2, T: 11},
						mixertest.Case{Name: name + "/pad", Cfg: c, B: 2, T: 11, Pad: true})
				}
			}
		}
		mixertest.Run(t, withTile(k, 4), cases)
		for _, c := range cases {
			mixertest.Float32Agrees(t, withTile(k, 4), c, 5e-4)
		}
	}
}

// TestLayoutExact checks that every layout visits each allowed pair exactly
// once and nothing else, against the naive definition Allow.
func TestLayoutExact(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		for _, causal := range []bool{true, false} {
			for _, comb := range []string{Heads, Merge, Interleave} {
				for _, lc := range [][2]int{{1, 1}, {3, 1}, {4, 2}, {4, 4}, {8, 2}, {20, 3}} {
					for _, T := range []int{1, 7, 16, 33} {
						for _, tile := range []attn.Tiles{{Q: 1, K: 1}, {Q: 3, K: 3}, {Q: 4, K: 2}, {Q: 2, K: 5}, {Q: 64, K: 64}} {
							for layer := 0; layer < 2; layer++ {
								p, err := Options(cfg(kindName(fixed), causal, opts(fixed, lc[0], lc[1], comb), 2, layer))
								if err != nil {
									t.Fatal(err)
								}
								for h := 0; h < 2; h++ {
									checkLayout(t, p, h, T, tile)
								}
							}
						}
					}
				}
			}
		}
	}
}

func checkLayout(t *testing.T, p *Pattern, h, T int, tile attn.Tiles) {
	t.Helper()
	seen := make([]int, T*T)
	ly := p.Layout(h, T, tile)
	ly.Each(func(i, j int) { seen[i*T+j]++ })
	for i := 0; i < T; i++ {
		for j := 0; j < T; j++ {
			want := 0
			if p.Allow(h, T, i, j) {
				want = 1
			}
			if seen[i*T+j] != want {
				t.Fatalf("%v head %d T=%d tiles=%v: pair (%d,%d) visited %d times, want %d", p, h, T, tile, i, j, seen[i*T+j], want)
			}
		}
	}
	if ly.MaxNQ > tile.Q || ly.MaxNK > tile.K {
		t.Fatalf("%v: block %dx%d exceeds tiles %v", p, ly.MaxNQ, ly.MaxNK, tile)
	}
}

// TestTwin compares the block-sparse kernels with the masked-dense twin,
// forward and backward, with T a multiple of l and not.
func TestTwin(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		for _, causal := range []bool{true, false} {
			for _, comb := range []string{Heads, Merge, Interleave} {
				for _, lc := range [][2]int{{3, 1}, {4, 2}} {
					for _, T := range []int{12, 13} {
						for _, tile := range []attn.Tiles{{Q: 2, K: 2}, {Q: 4, K: 3}, {Q: 64, K: 64}} {
							for _, pad := range []bool{false, true} {
								c := cfg(kindName(fixed), causal, opts(fixed, lc[0], lc[1], comb), 2, T%2)
								f, err := New[float64](c)
								if err != nil {
									t.Fatal(err)
								}
								f.Tiles = tile
								n, _ := NewNaive[float64](c)
								var pm []bool
								if pad {
									pm = attntest.Pad(2, T, true)
								}
								attntest.Twins(t, f, n, 2, T, 8, pm, 1e-7, uint64(T*10+tile.Q))
							}
						}
					}
				}
			}
		}
	}
}

// TestTwinLonger repeats the twin check on a longer sequence with
// default-size tiles and several tiles per residue class.
func TestTwinLonger(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		for _, causal := range []bool{true, false} {
			for _, comb := range []string{Heads, Merge} {
				for _, alibi := range []bool{false, true} {
					o := opts(fixed, 5, 2, comb)
					o["alibi"] = alibi
					c := cfg(kindName(fixed), causal, o, 2, 0)
					for _, tile := range []attn.Tiles{{Q: 8, K: 8}, {Q: 64, K: 64}, {Q: 128, K: 64}} {
						f, err := New[float64](c)
						if err != nil {
							t.Fatal(err)
						}
						if (f.Slopes != nil) != alibi {
							t.Fatalf("alibi %v: slopes %v", alibi, f.Slopes)
						}
						f.Tiles = tile
						n, _ := NewNaive[float64](c)
						attntest.Twins(t, f, n, 1, 150, 8, attntest.Pad(1, 150, false), 1e-7, 5)
					}
				}
			}
		}
	}
}

// TestCoverAllIsFull checks that a pattern whose layout covers every pair
// (l ≥ T) reproduces full attention exactly (bit for bit, in float32).
func TestCoverAllIsFull(t *testing.T) {
	for _, causal := range []bool{true, false} {
		for _, fixed := range []bool{false, true} {
			for _, T := range []int{5, 70} {
				c := cfg(kindName(fixed), causal, opts(fixed, 2*T, 1, Merge), 2, 0)
				sp, err := New[float32](c)
				if err != nil {
					t.Fatal(err)
				}
				sp.Tiles = attn.DefaultTiles // square tiles: the same blocks as full's below
				fc := c
				fc.Opts = mixer.OptionsOf("full", nil)
				fu, _ := full.New[float32](fc)
				fu.Tiles = attn.DefaultTiles
				same(t, fmt.Sprintf("causal=%v fixed=%v T=%d", causal, fixed, T), sp, fu, 2, T, c.D)
			}
		}
	}
}

// same runs a and b on the same random parameters and input and requires
// bit-identical outputs and gradients.
func same(t *testing.T, name string, a, b mixer.Mixer[float32], B, T, D int) {
	t.Helper()
	var w, ga, gb [][]float32
	seed := uint32(1)
	rnd := func() float32 { seed = seed*1664525 + 1013904223; return float32(int32(seed>>8)-1<<23) / (1 << 23) }
	for _, s := range a.Params() {
		v := make([]float32, s.Size())
		for i := range v {
			v[i] = rnd() * 0.5
		}
		w = append(w, v)
		ga = append(ga, make([]float32, s.Size()))
		gb = append(gb, make([]float32, s.Size()))
	}
	a.Bind(w, ga)
	b.Bind(w, gb)
	x := make([]float32, B*T*D)
	for i := range x {
		x[i] = rnd()
	}
	p := mixer.Pass{B: B, T: T, Pad: attntest.Pad(B, T, false)}
	run := func(m mixer.Mixer[float32]) ([]float32, []float32) {
		act := make([]float32, m.ActSize(B, T))
		scr := make([]float32, m.ScratchSize(B, T, 0))
		out := make([]float32, len(x))
		dx := make([]float32, len(x))
		m.Forward(out, act, scr, x, p)
		m.Backward(dx, scr, x, act, x, p)
		return out, dx
	}
	oa, da := run(a)
	ob, db := run(b)
	eq := func(what string, u, v []float32) {
		for i := range u {
			if u[i] != v[i] {
				t.Fatalf("%s: %s differs at %d: %v vs %v", name, what, i, u[i], v[i])
			}
		}
	}
	eq("out", oa, ob)
	eq("dx", da, db)
	for i := range ga {
		eq("grad", ga[i], gb[i])
	}
}

func TestOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		fixed bool
		heads int
		opts  map[string]any
		key   string
	}{
		{false, 2, map[string]any{}, "mixer.block"},
		{false, 2, map[string]any{"block": 0}, "mixer.block"},
		{false, 2, map[string]any{"block": -3}, "mixer.block"},
		{false, 2, map[string]any{"block": 4, "summary": 2}, "mixer.summary"},
		{true, 2, map[string]any{"block": 4}, "mixer.summary"},
		{true, 2, map[string]any{"block": 4, "summary": 0}, "mixer.summary"},
		{true, 2, map[string]any{"block": 4, "summary": 5}, "mixer.summary"},
		{false, 3, map[string]any{"block": 4, "combine": "heads"}, "mixer.combine"},
		{false, 2, map[string]any{"block": 4, "combine": "sum"}, "mixer.combine"},
		{false, 2, map[string]any{"block": "4"}, "mixer.block"},
		{true, 2, map[string]any{"block": 4, "summary": 1, "stride": 2}, "stride"},
	} {
		c := cfg(kindName(tc.fixed), true, tc.opts, tc.heads, 0)
		_, err := New[float32](c)
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("fixed=%v %v: error %v, want one naming %s", tc.fixed, tc.opts, err, tc.key)
		}
	}
	if _, err := New[float32](cfg("fixed", true, map[string]any{"block": 4, "summary": 4, "combine": "heads"}, 4, 0)); err != nil {
		t.Errorf("valid options rejected: %v", err)
	}
}

// TestFloat32Paths runs the float32 comparison on every kernel path.
func TestFloat32Paths(t *testing.T) {
	for _, path := range kernels.Paths() {
		old := kernels.SetPath(path)
		for _, fixed := range []bool{false, true} {
			k := Kinds()[0]
			if fixed {
				k = Kinds()[1]
			}
			c := mixertest.Case{Name: "p", Cfg: cfg(k.Name, true, opts(fixed, 4, 2, Heads), 2, 0), B: 2, T: 13, Pad: true}
			mixertest.Float32Agrees(t, withTile(k, 4), c, 5e-4)
			mixertest.Float32Agrees(t, k, c, 5e-4)
		}
		kernels.SetPath(old)
	}
}

var _ attn.Pattern = (*Pattern)(nil)

// TestCostFollowsPairs checks that the kernels' work (scores computed,
// Layout.Cost) stays within a small factor of the allowed pairs, i.e. no
// near-empty tiles are visited, at l=64, c=8 and T=1000, 4096.
func TestCostFollowsPairs(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		for _, causal := range []bool{true, false} {
			for _, comb := range []string{Heads, Merge} {
				for _, T := range []int{1000, 4096} {
					p, err := Options(cfg(kindName(fixed), causal, opts(fixed, 64, 8, comb), 2, 0))
					if err != nil {
						t.Fatal(err)
					}
					for h := 0; h < 2; h++ {
						ly := p.Layout(h, T, Tiles)
						pairs := ly.Pairs()
						if bound := 2*pairs + 2*T*64; ly.Cost > bound {
							t.Errorf("%v head %d T=%d: %d scores for %d allowed pairs (bound %d)", p, h, T, ly.Cost, pairs, bound)
						}
						if T == 4096 && ly.Cost > T*T/4 {
							t.Errorf("%v head %d T=%d: %d scores, not sparse", p, h, T, ly.Cost)
						}
					}
				}
			}
		}
	}
}

// TestFloat32ThreadInvariant checks that float32 results are bit-identical
// for 1 and 3 threads (each row's arithmetic does not depend on which worker
// runs it), so training runs replay exactly.
func TestFloat32ThreadInvariant(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		c := cfg(kindName(fixed), true, opts(fixed, 4, 2, Merge), 2, 0)
		run := func(threads int) mixer.Mixer[float32] {
			old := parallel.SetThreads(threads)
			defer parallel.SetThreads(old)
			m, err := New[float32](c)
			if err != nil {
				t.Fatal(err)
			}
			m.Tiles = attn.Tiles{Q: 8, K: 4}
			return m
		}
		a, b := run(1), run(3)
		old := parallel.SetThreads(3)
		sameThreads(t, a, b)
		parallel.SetThreads(old)
	}
}

// sameThreads runs a on 1 thread and b on the current thread count.
func sameThreads(t *testing.T, a, b mixer.Mixer[float32]) {
	t.Helper()
	same(t, "threads", &oneThread{a}, b, 2, 37, 8)
}

// oneThread runs its mixer's Forward and Backward on one thread.
type oneThread struct{ mixer.Mixer[float32] }

func (o *oneThread) Forward(out, act, scr, x []float32, p mixer.Pass) {
	old := parallel.SetThreads(1)
	defer parallel.SetThreads(old)
	o.Mixer.Forward(out, act, scr, x, p)
}

func (o *oneThread) Backward(dx, scr, dout, act, x []float32, p mixer.Pass) {
	old := parallel.SetThreads(1)
	defer parallel.SetThreads(old)
	o.Mixer.Backward(dx, scr, dout, act, x, p)
}

// TestCausalKeys: the listed keys are exactly the allowed ones, for every
// set, stride, summary size and query.
func TestCausalKeys(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		for _, comb := range []string{Heads, Merge, Interleave} {
			for _, l := range []int{1, 2, 3, 5, 8} {
				for c := 1; c <= l; c++ {
					if !fixed && c > 1 {
						break
					}
					for layer := range 2 {
						p := &Pattern{Fixed: fixed, L: l, C: c, Causal: true, Combine: comb, Heads: 4, Layer: layer}
						for h := range 4 {
							for i := range 40 {
								var want []int
								for j := 0; j <= i; j++ {
									if p.Allow(h, 64, i, j) {
										want = append(want, j)
									}
								}
								if got := p.CausalKeys(h, i, nil); !slices.Equal(got, want) {
									t.Fatalf("%+v head %d query %d: keys %v, want %v", p, h, i, got, want)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestGatherLen: the counted summary positions are the listed ones.
func TestGatherLen(t *testing.T) {
	for _, lc := range [][2]int{{1, 1}, {4, 1}, {4, 4}, {5, 2}, {64, 8}} {
		p, err := Options(cfg("fixed", true, opts(true, lc[0], lc[1], Interleave), 2, 1))
		if err != nil {
			t.Fatal(err)
		}
		for T := 0; T < 200; T++ {
			if got, want := p.GatherLen(T), len(p.summary(T)); got != want {
				t.Fatalf("l=%d c=%d T=%d: GatherLen %d, want %d", lc[0], lc[1], T, got, want)
			}
		}
	}
}

// TestPadAppendBitwise: a sequence's outputs are bitwise the same alone and
// with positions appended (pad keys, or later positions under causal
// masking), on every kernel path, for the sparse kinds and full attention
// (mixer.Kind.PadInvariant), so sequences of different lengths share a
// padded batch exactly. The appended keys extend some tiles with masked
// scores (a strided residue class of 7 keys at T = 27 has 25 at T = 100;
// full's second key tile grows from 6 to 36), which must leave the softmax
// sums unchanged. Sequences are longer than 16 tokens: a projection of at
// most 16 rows runs as dot products in kernels.Gemm, which round
// differently from the packed kernel a longer one takes.
func TestPadAppendBitwise(t *testing.T) {
	const D, long = 8, 100
	seed := uint32(3)
	rnd := func() float32 { seed = seed*1664525 + 1013904223; return float32(int32(seed>>8)-1<<23) / (1 << 23) }
	x := make([]float32, long*D)
	for i := range x {
		x[i] = rnd()
	}
	for _, path := range kernels.Paths() {
		old := kernels.SetPath(path)
		for _, causal := range []bool{false, true} {
			for _, name := range []string{"strided", "fixed", "full"} {
				c := cfg(name, causal, opts(name == "fixed", 4, 2, Merge), 2, 0)
				c.MaxLen = long
				var m *attn.Attention[float32]
				var err error
				if name == "full" {
					c.Opts = mixer.OptionsOf(name, nil)
					m, err = full.New[float32](c)
				} else {
					m, err = New[float32](c)
				}
				if err != nil {
					t.Fatal(err)
				}
				var w, g [][]float32
				for _, s := range m.Params() {
					v := make([]float32, s.Size())
					for i := range v {
						v[i] = rnd() * 0.5
					}
					w, g = append(w, v), append(g, make([]float32, s.Size()))
				}
				m.Bind(w, g)
				run := func(T int, pad []bool) []float32 {
					out := make([]float32, T*D)
					m.Forward(out, make([]float32, m.ActSize(1, T)), make([]float32, m.ScratchSize(1, T, 0)), x[:T*D], mixer.Pass{B: 1, T: T, Pad: pad})
					return out
				}
				for _, T := range []int{17, 27, 33, 70} {
					var pad []bool
					if !causal {
						pad = make([]bool, long)
						for j := T; j < long; j++ {
							pad[j] = true
						}
					}
					alone, padded := run(T, nil), run(long, pad)
					for i := range alone {
						if math.Float32bits(alone[i]) != math.Float32bits(padded[i]) {
							t.Errorf("%v %s causal=%v T=%d: output %d is %v alone, %v padded to %d", path, name, causal, T, i, alone[i], padded[i], long)
							break
						}
					}
				}
			}
		}
		kernels.SetPath(old)
	}
}
