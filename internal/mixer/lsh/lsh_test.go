package lsh

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/mixer/mixertest"
	"github.com/tokenmix/tokenmix/mixer"
)

func cfg(causal bool, bs, nh int) mixer.Config {
	return mixer.Config{D: 8, Heads: 2, MaxLen: 32, Causal: causal, NLayers: 2, Layer: 1,
		Opts: mixer.OptionsOf("lsh", map[string]any{"bucket_size": bs, "n_hashes": nh})}
}

// cases are the kind's declared conformance cases (the registry's suite
// runs them); the tests here reuse them.
func cases() []mixertest.Case { return mixertest.Cases(Kinds()[0]) }

func TestFloat32Agrees(t *testing.T) {
	for _, path := range kernels.Paths() {
		old := kernels.SetPath(path)
		for _, c := range cases() {
			mixertest.Float32Agrees(t, Kinds()[0], c, 5e-4)
		}
		kernels.SetPath(old)
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts map[string]any
		d, h int
		ok   bool
	}{
		{"defaults", nil, 8, 2, true},
		{"both", map[string]any{"bucket_size": 32, "n_hashes": 8}, 8, 2, true},
		{"bucket 1", map[string]any{"bucket_size": 1}, 8, 2, false},
		{"bucket float", map[string]any{"bucket_size": 2.5}, 8, 2, false},
		{"hashes 0", map[string]any{"n_hashes": 0}, 8, 2, false},
		{"hashes 65", map[string]any{"n_hashes": 65}, 8, 2, false},
		{"hashes string", map[string]any{"n_hashes": "4"}, 8, 2, false},
		{"unknown", map[string]any{"chunk": 4}, 8, 2, false},
		{"heads", nil, 8, 3, false},
	} {
		c := mixer.Config{D: tc.d, Heads: tc.h, MaxLen: 16, Opts: mixer.OptionsOf("lsh", tc.opts)}
		_, err := New[float32](c)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	m, _ := New[float64](mixer.Config{D: 8, Heads: 2, Opts: mixer.OptionsOf("lsh", nil)})
	for _, tc := range []struct{ t, nb int }{{8192, 128}, {1000, 14}, {128, 2}, {127, 2}, {1, 2}} {
		if got := m.NBuckets(tc.t); got != tc.nb {
			t.Errorf("NBuckets(%d) = %d, want %d (bucket_size 64)", tc.t, got, tc.nb)
		}
	}
}

// setup returns a float64 mixer with random parameters, its twin, and a
// random input and pass for case c.
func setup(t *testing.T, c mixertest.Case, seed uint64) (*LSH[float64], *twin, []float64, mixer.Pass) {
	t.Helper()
	m, err := New[float64](c.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 3))
	var w, g [][]float64
	for _, s := range m.Params() {
		v := make([]float64, s.Size())
		for i := range v {
			v[i] = rng.NormFloat64() * 0.4
		}
		w = append(w, v)
		g = append(g, make([]float64, s.Size()))
	}
	m.Bind(w, g)
	x := make([]float64, c.B*c.T*c.Cfg.D)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	p := mixer.Pass{B: c.B, T: c.T, Seed: seed}
	if c.Pad {
		p.Pad = make([]bool, c.B*c.T)
		for i := range p.Pad {
			p.Pad[i] = rng.IntN(4) == 0
		}
	}
	return m, &twin{m: m, w: w, causal: c.Cfg.Causal}, x, p
}

// maxRel is max|got−want| / max(max|want|, floor); the floor keeps
// gradients that are zero in exact arithmetic (qk when every query can only
// attend to itself) from comparing rounding noise with rounding noise.
func maxRel(got, want []float64, floor ...float64) float64 {
	num, den := 0.0, 1e-300
	if len(floor) > 0 {
		den = floor[0]
	}
	for i := range want {
		num = math.Max(num, math.Abs(got[i]-want[i]))
		den = math.Max(den, math.Abs(want[i]))
	}
	return num / den
}

// TestTwin compares the chunked kernel with the materialised per-round twin,
// forward and backward, over several seeds (so several bucket layouts).
func TestTwin(t *testing.T) {
	tiny := []mixertest.Case{
		{Name: "T=1", Cfg: cfg(true, 2, 2), B: 2, T: 1, Pad: true},
		{Name: "T=2", Cfg: cfg(false, 2, 3), B: 3, T: 2, Pad: true},
	}
	for _, c := range append(cases(), tiny...) {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", c.Name, seed), func(t *testing.T) {
				m, tw, x, p := setup(t, c, seed)
				out := make([]float64, len(x))
				act := make([]float64, m.ActSize(p.B, p.T))
				scr := make([]float64, m.ScratchSize(p.B, p.T, 0))
				m.Forward(out, act, scr, x, p)
				want, _, _ := tw.forward(x, p)
				if e := maxRel(out, want); e > 1e-12 {
					t.Errorf("forward: max rel err %.3g", e)
				}
				rng := rand.New(rand.NewPCG(seed, 9))
				dout := make([]float64, len(x))
				for i := range dout {
					dout[i] = rng.NormFloat64()
				}
				dx := make([]float64, len(x))
				m.Backward(dx, scr, dout, act, x, p)
				wdx, wg := tw.backward(x, dout, p)
				if e := maxRel(dx, wdx); e > 1e-10 {
					t.Errorf("dx: max rel err %.3g", e)
				}
				var scale float64
				for _, g := range append(wg, wdx) {
					for _, v := range g {
						scale = math.Max(scale, math.Abs(v))
					}
				}
				_, mg := m.proj.Bound()
				for i, s := range m.Params() {
					if e := maxRel(mg[i], wg[i], 1e-5*scale); e > 1e-10 {
						t.Errorf("grad %s: max rel err %.3g", s.Name, e)
					}
				}
			})
		}
	}
}

// TestSeedAndLayer checks that the rotations depend on Pass.Seed and on the
// layer index (and nothing else: see the determinism check of mixertest).
func TestSeedAndLayer(t *testing.T) {
	c := cases()[2]
	m, _, x, p := setup(t, c, 5)
	run := func(m *LSH[float64], seed uint64) []float64 {
		out := make([]float64, len(x))
		p.Seed = seed
		m.Forward(out, make([]float64, m.ActSize(p.B, p.T)), make([]float64, m.ScratchSize(p.B, p.T, 0)), x, p)
		return out
	}
	a, b := run(m, 1), run(m, 2)
	if maxRel(a, b) == 0 {
		t.Error("output does not depend on Pass.Seed")
	}
	c.Cfg.Layer = 0
	m2, err := New[float64](c.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	m2.Bind(m.proj.Bound())
	if maxRel(run(m2, 1), a) == 0 {
		t.Error("layers 0 and 1 draw the same rotations")
	}
}

// TestDominantKey is the accuracy check: with n_hashes=8 and
// bucket_size=32, on inputs where every query has one dominant key (tokens
// come in pairs sharing a direction; a token does not attend to itself), the
// LSH output matches dense shared-QK attention within 5% relative error
// (Frobenius norm of the difference over the norm of the dense output). One
// round must do clearly worse, or the inputs would not test the hashing.
func TestDominantKey(t *testing.T) {
	const B, T, D, H, alpha = 2, 256, 64, 2, 200.0
	// Partners differ by noise/√dh per channel (about 17°), so one hash
	// round often separates them: 1 round gives ~55% error, 8 rounds ~0.
	const noise = 0.3
	dh := D / H
	rng := rand.New(rand.NewPCG(11, 12))
	x := make([]float64, B*T*D)
	for b := range B {
		perm := rng.Perm(T)
		for a := 0; a < T; a += 2 {
			for h := range H {
				u := make([]float64, dh)
				var n float64
				for d := range u {
					u[d] = rng.NormFloat64()
					n += u[d] * u[d]
				}
				for _, t := range perm[a : a+2] {
					for d := range u {
						x[(b*T+t)*D+h*dh+d] = alpha * (u[d]/math.Sqrt(n) + noise*rng.NormFloat64()/math.Sqrt(float64(dh)))
					}
				}
			}
		}
	}
	eye := func() []float64 {
		w := make([]float64, D*D)
		for i := range D {
			w[i*D+i] = 1
		}
		return w
	}
	wv := make([]float64, D*D)
	for i := range wv {
		wv[i] = rng.NormFloat64() / math.Sqrt(D)
	}
	w := [][]float64{eye(), make([]float64, D), wv, make([]float64, D), eye(), make([]float64, D)}
	p := mixer.Pass{B: B, T: T, Seed: 99}
	for _, tc := range []struct {
		nh     int
		maxErr float64
	}{{8, 0.05}, {4, math.Inf(1)}, {1, math.Inf(1)}} {
		c := mixer.Config{D: D, Heads: H, MaxLen: T, Opts: mixer.OptionsOf("lsh", map[string]any{"bucket_size": 32, "n_hashes": tc.nh})}
		m, err := New[float64](c)
		if err != nil {
			t.Fatal(err)
		}
		g := make([][]float64, len(w))
		for i := range w {
			g[i] = make([]float64, len(w[i]))
		}
		m.Bind(w, g)
		out := make([]float64, len(x))
		m.Forward(out, make([]float64, m.ActSize(B, T)), make([]float64, m.ScratchSize(B, T, 0)), x, p)
		full := &twin{m: m, w: w, full: true}
		want, _, _ := full.forward(x, p)
		var num, den float64
		for i := range want {
			num += (out[i] - want[i]) * (out[i] - want[i])
			den += want[i] * want[i]
		}
		e := math.Sqrt(num / den)
		t.Logf("n_hashes=%d bucket_size=32 T=%d: relative error vs dense shared-QK attention %.3g", tc.nh, T, e)
		if e > tc.maxErr {
			t.Errorf("n_hashes=%d: relative error %.3g > %.3g", tc.nh, e, tc.maxErr)
		}
		if tc.nh == 1 && e < 0.2 {
			t.Errorf("n_hashes=1 already within %.3g: the inputs do not exercise the hashing", e)
		}
	}
}

// TestMemoryLinear checks the memory plan is O(T·(D + bucket_size·R)), not
// O(T²): doubling T at most (about) doubles activations and scratch.
func TestMemoryLinear(t *testing.T) {
	c := mixer.Config{D: 256, Heads: 4, MaxLen: 1 << 16, Opts: mixer.OptionsOf("lsh", nil)}
	m, err := New[float32](c)
	if err != nil {
		t.Fatal(err)
	}
	for _, T := range []int{2048, 8192, 32768} {
		a1, a2 := m.ActSize(1, T), m.ActSize(1, 2*T)
		s1, s2 := m.slotSize(T), m.slotSize(2*T)
		if a2 > 2*a1 || float64(s2) > 2.05*float64(s1) {
			t.Errorf("T=%d→%d: act %d→%d, slot %d→%d grows faster than linearly", T, 2*T, a1, a2, s1, s2)
		}
	}
}
