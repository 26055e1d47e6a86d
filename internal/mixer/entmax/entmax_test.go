package entmax

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/mixer/attn"
	"github.com/tokenmix/tokenmix/internal/mixer/mixertest"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer"
)

// kindCap is Kind with the support capacity forced to c (c = 1 sends
// almost every row block to dense mode, so both modes are exercised) and
// row blocks of 8 queries, so that short sequences span several blocks.
func kindCap(c int) mixer.Kind {
	k := Kinds()[0]
	k.New32 = func(cfg mixer.Config) (mixer.Mixer[float32], error) {
		m, err := New[float32](cfg)
		if err == nil && c > 0 {
			m.Cap = c
		}
		if err == nil {
			m.Rows = 8
		}
		return m, err
	}
	k.New64 = func(cfg mixer.Config) (mixer.Mixer[float64], error) {
		m, err := New[float64](cfg)
		if err == nil && c > 0 {
			m.Cap = c
		}
		if err == nil {
			m.Rows = 8
		}
		return m, err
	}
	return k
}

func cfg(d, h int, causal bool, opts map[string]any) mixer.Config {
	return mixer.Config{D: d, Heads: h, MaxLen: 64, Causal: causal, NLayers: 1, Opts: mixer.OptionsOf("entmax", opts)}
}

// suitePad is the padding mask mixertest builds for B, T (its tail of b+1
// positions and position T/2 of every sequence b), so Setup can measure
// margins on the rows the suite runs.
func suitePad(B, T int) []bool {
	pad := make([]bool, B*T)
	for b := 0; b < B; b++ {
		for j := T - 1 - b; j < T; j++ {
			if j > 0 {
				pad[b*T+j] = true
			}
		}
		if T > 3 {
			pad[b*T+T/2] = true
		}
	}
	return pad
}

// margin returns the smallest |β·z_j − τ| over the allowed scores of every
// row of the naive twin: how far the support is from changing.
func margin(w [][]float64, x []float64, c mixer.Config, B, T int, pad []bool, alpha float64) float64 {
	out := make([]float64, B*T*c.D)
	m := math.Inf(1)
	attn.NaiveRuleForward(out, x, w, c.D, c.Heads, c.Causal, attn.RopeBase(attn.RopeOption(&c.Opts, c.D, c.Heads, false)), mixer.Pass{B: B, T: T, Pad: pad}, func(z []float64, h int) {
		s := append([]float64(nil), z...)
		tau, _, _ := Row(z, make([]float64, len(z)), alpha, MethodFor(alpha, false))
		for _, v := range s {
			if !math.IsInf(v, -1) {
				m = min(m, math.Abs((alpha-1)*v-tau))
			}
		}
	})
	return m
}

// withMargin returns a Setup that redraws x until every support boundary
// of the suite's rows (with and without its padding) is at least 1e-3 away,
// so finite differences do not cross the kink of sparsemax.
func withMargin(c mixer.Config, B, T int, alpha float64) func(w [][]float64, x []float64) {
	return func(w [][]float64, x []float64) {
		rng := rand.New(rand.NewPCG(11, 13))
		for try := 0; try < 200; try++ {
			if min(margin(w, x, c, B, T, nil, alpha), margin(w, x, c, B, T, suitePad(B, T), alpha)) > 1e-3 {
				return
			}
			for i := range x {
				x[i] = rng.NormFloat64()
			}
		}
		panic("entmax test: no input with margins found")
	}
}

func TestConformance(t *testing.T) {
	type tc struct {
		name       string
		cap        int
		causal     bool
		pad        bool
		B, T, D, H int
		opts       map[string]any
		margin     bool
	}
	var cases []tc
	for _, causal := range []bool{true, false} {
		for _, cp := range []int{0, 1} {
			cases = append(cases,
				tc{"a1.5", cp, causal, true, 2, 37, 12, 3, map[string]any{"alpha": 1.5}, false},
				tc{"a2", cp, causal, true, 2, 37, 12, 3, map[string]any{"alpha": 2.0}, true},
				tc{"a1.3", cp, causal, true, 1, 37, 12, 3, map[string]any{"alpha": 1.3}, false},
				tc{"a1", cp, causal, true, 2, 9, 8, 2, map[string]any{"alpha": 1.0}, false},
				tc{"learned", cp, causal, true, 1, 37, 12, 3, map[string]any{"alpha": 1.5, "learn_alpha": true}, false},
			)
		}
	}
	cases = append(cases, tc{"nopad", 0, true, false, 2, 20, 8, 2, nil, false})
	for _, c := range cases {
		name := fmt.Sprintf("%s/causal=%v/cap=%d", c.name, c.causal, c.cap)
		cf := cfg(c.D, c.H, c.causal, c.opts)
		mc := mixertest.Case{Name: name, Cfg: cf, B: c.B, T: c.T, Pad: c.pad}
		if c.margin {
			mc.Setup = withMargin(cf, c.B, c.T, c.opts["alpha"].(float64))
		}
		mixertest.Run(t, kindCap(c.cap), []mixertest.Case{mc})
		cf.Opts = mixer.OptionsOf("entmax", c.opts)
		mc.Cfg = cf
		t.Run(name+"/float32", func(t *testing.T) {
			for _, path := range kernels.Paths() {
				old := kernels.SetPath(path)
				mixertest.Float32Agrees(t, kindCap(c.cap), mc, 5e-4)
				kernels.SetPath(old)
			}
		})
	}
}

// TestNaiveTwin compares Forward with the dense float64 twin using the
// sort-based oracles, in both modes and with 1 to 3 threads.
func TestNaiveTwin(t *testing.T) {
	defer parallel.SetThreads(parallel.SetThreads(1))
	rng := rand.New(rand.NewPCG(21, 22))
	for _, tc := range []struct {
		alpha  float64
		oracle func([]float64)
	}{{2, sortSparsemax}, {1.5, sortEntmax15}, {1, softmaxRow}} {
		for _, causal := range []bool{true, false} {
			for _, cp := range []int{0, 1, 3} {
				for threads := 1; threads <= 3; threads++ {
					parallel.SetThreads(threads)
					B, T, D, H := 2, 70, 12, 3
					c := cfg(D, H, causal, map[string]any{"alpha": tc.alpha})
					m, err := New[float64](c)
					if err != nil {
						t.Fatal(err)
					}
					if cp > 0 {
						m.Cap = cp
					}
					m.Rows = []int{attn.RowBlock, 8, 13}[threads-1]
					w, g := randParams(rng, m.Params())
					m.Bind(w, g)
					x := randVec(rng, B*T*D, 1)
					p := mixer.Pass{B: B, T: T, Pad: suitePad(B, T)}
					out := make([]float64, B*T*D)
					m.Forward(out, make([]float64, m.ActSize(B, T)), make([]float64, m.ScratchSize(B, T, 0)), x, p)
					want := make([]float64, B*T*D)
					P := attn.NaiveRuleForward(want, x, w, D, H, causal, 0, p, func(z []float64, h int) { tc.oracle(z) })
					if d := maxAbsDiff(out, want); d > 1e-9 {
						t.Errorf("α=%v causal=%v cap=%d threads=%d: max |out − naive| = %.3g", tc.alpha, causal, cp, threads, d)
					}
					// Stats: mean fraction of exact zeros among allowed keys.
					for h := 0; h < H; h++ {
						var s, n float64
						for b := 0; b < B; b++ {
							for i := 0; i < T; i++ {
								var allowed, zeros float64
								for j := 0; j < T; j++ {
									if (causal && j > i) || !p.Allowed(b, j) {
										continue
									}
									allowed++
									if P[((b*H+h)*T+i)*T+j] == 0 {
										zeros++
									}
								}
								if allowed > 0 {
									s += zeros / allowed
									n++
								}
							}
						}
						if got := m.Stats()[fmt.Sprintf("zeros/h%d", h)]; math.Abs(got-s/n) > 1e-12 {
							t.Errorf("α=%v: zeros/h%d = %v, naive %v", tc.alpha, h, got, s/n)
						}
					}
				}
			}
		}
	}
}

// TestSupportStored checks that in sparse mode act holds O(T·C) entries per
// head and that sparse and dense modes give the same gradients.
func TestSparseDenseAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	B, T, D, H := 1, 100, 16, 2
	c := cfg(D, H, true, map[string]any{"alpha": 2})
	var outs, dxs [][]float64
	var gs [][][]float64
	for _, cp := range []int{T, 1} {
		m, _ := New[float64](c)
		m.Cap = cp
		rng = rand.New(rand.NewPCG(31, 32))
		w, g := randParams(rng, m.Params())
		for i := range w[0] { // sharpen the scores so supports are small
			w[0][i] *= 20
		}
		m.Bind(w, g)
		x := randVec(rng, B*T*D, 1)
		p := mixer.Pass{B: B, T: T}
		out := make([]float64, B*T*D)
		act := make([]float64, m.ActSize(B, T))
		scr := make([]float64, m.ScratchSize(B, T, 0))
		m.Forward(out, act, scr, x, p)
		dx := make([]float64, B*T*D)
		m.Backward(dx, scr, randVec(rand.New(rand.NewPCG(1, 1)), B*T*D, 1), act, x, p)
		outs, dxs, gs = append(outs, out), append(dxs, dx), append(gs, g)
		if z := m.ZeroFrac()[0]; z < 0.5 {
			t.Fatalf("test needs sparse rows; zero fraction %v", z)
		}
	}
	if d := maxAbsDiff(outs[0], outs[1]); d > 1e-12 {
		t.Errorf("sparse vs dense forward differ by %.3g", d)
	}
	if d := maxAbsDiff(dxs[0], dxs[1]); d > 1e-12 {
		t.Errorf("sparse vs dense dx differ by %.3g", d)
	}
	for i := range gs[0] {
		if d := maxAbsDiff(gs[0][i], gs[1][i]); d > 1e-12 {
			t.Errorf("sparse vs dense grad %d differ by %.3g", i, d)
		}
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]any
		ok   bool
	}{
		{nil, true},
		{map[string]any{"alpha": 1}, true},
		{map[string]any{"alpha": 3.0}, true},
		{map[string]any{"alpha": 1.2, "learn_alpha": true}, true},
		{map[string]any{"alpha": 0.9}, false},
		{map[string]any{"alpha": 2, "learn_alpha": true}, false},
		{map[string]any{"alpha": 1, "learn_alpha": true}, false},
		{map[string]any{"alpha": "x"}, false},
		{map[string]any{"k": 8}, false},
		{map[string]any{"learn_alpha": 1}, false},
	} {
		_, err := New[float32](cfg(8, 2, true, tc.opts))
		if (err == nil) != tc.ok {
			t.Errorf("options %v: err = %v, want ok=%v", tc.opts, err, tc.ok)
		}
	}
	if _, err := New[float32](cfg(10, 3, true, nil)); err == nil {
		t.Error("d_model not divisible by n_heads accepted")
	}
}

// TestLearnedAlphaInit: alpha_raw starts at logit(α−1) and Stats reports α.
func TestLearnedAlphaInit(t *testing.T) {
	m, err := New[float64](cfg(8, 2, true, map[string]any{"alpha": 1.3, "learn_alpha": true}))
	if err != nil {
		t.Fatal(err)
	}
	ps := m.Params()
	last := ps[len(ps)-1]
	if last.Name != "alpha_raw" || last.Init != mixer.InitConst || !last.NoDecay || last.Size() != 2 {
		t.Fatalf("alpha_raw spec = %+v", last)
	}
	w, g := randParams(rand.New(rand.NewPCG(1, 1)), ps)
	for i := range w[8] {
		w[8][i] = last.Value
	}
	m.Bind(w, g)
	for _, a := range m.Alpha() {
		if math.Abs(a-1.3) > 1e-12 {
			t.Fatalf("initial α = %v, want 1.3", a)
		}
	}
}

func randParams(rng *rand.Rand, ps []mixer.ParamSpec) (w, g [][]float64) {
	for _, s := range ps {
		w = append(w, randVec(rng, s.Size(), 0.3))
		g = append(g, make([]float64, s.Size()))
	}
	return w, g
}

func randVec(rng *rand.Rand, n int, sc float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64() * sc
	}
	return v
}

// TestAttentionWeights compares the heat-map weights with the naive twin's
// P, for fixed and learned α.
func TestAttentionWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, opts := range []map[string]any{{"alpha": 1.5}, {"alpha": 2.0}, {"alpha": 1.2, "learn_alpha": true}} {
		for _, causal := range []bool{true, false} {
			T, D, H := 21, 8, 2
			m, err := New[float64](cfg(D, H, causal, opts))
			if err != nil {
				t.Fatal(err)
			}
			m.Rows = 8
			w, g := randParams(rng, m.Params())
			m.Bind(w, g)
			x := randVec(rng, T*D, 1)
			got := m.AttentionWeights(x, T)
			al := m.Alpha()
			P := attn.NaiveRuleForward(make([]float64, T*D), x, w, D, H, causal, 0, mixer.Pass{B: 1, T: T}, func(z []float64, h int) {
				Row(z, make([]float64, len(z)), al[h], MethodFor(al[h], opts["learn_alpha"] != nil))
			})
			for h := 0; h < H; h++ {
				if d := maxAbsDiff(got[h], P[h*T*T:(h+1)*T*T]); d > 1e-12 {
					t.Errorf("opts %v causal=%v head %d: weights differ from the twin by %.3g", opts, causal, h, d)
				}
			}
		}
	}
}
