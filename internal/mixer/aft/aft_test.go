package aft

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/mixer/mixertest"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer"
)

func cfg(name string, d, heads, maxLen int, causal bool, opts map[string]any) mixer.Config {
	return mixer.Config{D: d, Heads: heads, MaxLen: maxLen, Causal: causal, Opts: mixer.OptionsOf(name, opts)}
}

type kindCase struct {
	kind mixer.Kind
	opts map[string]any
}

func kinds(causal bool) []kindCase {
	conv := map[string]any{"window": 3}
	if causal {
		conv = map[string]any{"window": 2, "heads": 3}
	}
	return []kindCase{
		{Kinds()[1], nil},
		{Kinds()[0], nil},
		{Kinds()[2], map[string]any{"window": 2}},
		{Kinds()[3], conv},
	}
}

func TestFloat32Agrees(t *testing.T) {
	for _, causal := range []bool{false, true} {
		for _, kc := range kinds(causal) {
			c := cfg(kc.kind.Name, 12, 3, 80, causal, kc.opts)
			mixertest.Float32Agrees(t, kc.kind, mixertest.Case{Name: fmt.Sprint(causal), Cfg: c, B: 2, T: 70, Pad: true}, 5e-4)
		}
	}
}

// build returns a float64 layer with random parameters (biases included)
// and a second layer sharing the parameters but not the gradients.
func build(t *testing.T, name string, c mixer.Config, biasScale float64, seed uint64) (*AFT[float64], *AFT[float64], [][]float64, [][]float64) {
	t.Helper()
	a, err := New[float64](c)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New[float64](c)
	rng := rand.New(rand.NewPCG(seed, 11))
	var w, g1, g2 [][]float64
	for i, s := range a.Params() {
		v := make([]float64, s.Size())
		sc := 0.3
		if i == 8 {
			sc = biasScale
		}
		for j := range v {
			v[j] = rng.NormFloat64() * sc
		}
		w = append(w, v)
		g1 = append(g1, make([]float64, s.Size()))
		g2 = append(g2, make([]float64, s.Size()))
	}
	a.Bind(w, g1)
	b.Bind(w, g2)
	return a, b, g1, g2
}

// maxRel is max|got−want| / max(1e-3, max|want|). The floor matters for the
// k.bias gradient, which is zero in exact arithmetic: the AFT ratio is
// invariant to a per-channel shift of K.
func maxRel(got, want []float64) float64 {
	var num, den float64
	for i := range want {
		num = math.Max(num, math.Abs(got[i]-want[i]))
		den = math.Max(den, math.Abs(want[i]))
	}
	return num / math.Max(den, 1e-3)
}

// TestMatchesNaive compares forward, dx and every parameter gradient with
// the direct O(T²·D) formula, with padding, windows shorter and longer than
// T, and (biasScale 8) biases large enough to exercise the shifts.
func TestMatchesNaive(t *testing.T) {
	type tc struct {
		name      string
		opts      map[string]any
		causal    bool
		T, B      int
		biasScale float64
	}
	var cases []tc
	for _, causal := range []bool{false, true} {
		for _, bs := range []float64{0.5, 8} {
			cases = append(cases,
				tc{"aft_simple", nil, causal, 9, 2, bs},
				tc{"aft_simple", nil, causal, 200, 2, bs},
				tc{"aft_conv", map[string]any{"window": 3}, causal, 200, 2, bs},
				tc{"aft_full", nil, causal, 9, 2, bs},
				tc{"aft_full", nil, causal, 70, 1, bs},
				tc{"aft_local", map[string]any{"window": 3}, causal, 11, 2, bs},
				tc{"aft_local", map[string]any{"window": 20}, causal, 9, 1, bs},
				tc{"aft_local", map[string]any{"window": 5}, causal, 150, 1, bs},
				tc{"aft_conv", map[string]any{"window": 5, "heads": 2}, causal, 11, 2, bs},
				tc{"aft_conv", map[string]any{"window": 31}, causal, 9, 1, bs},
				tc{"aft_conv", map[string]any{"window": 7}, causal, 140, 1, bs},
				tc{"aft_conv", map[string]any{"window": 5, "distant": false}, causal, 150, 2, bs},
				tc{"aft_local", map[string]any{"window": 4, "distant": false}, causal, 140, 2, bs},
			)
		}
	}
	for i, c := range cases {
		if !c.causal && c.name == "aft_conv" && c.opts["window"].(int)%2 == 0 {
			continue
		}
		D := 6
		conf := cfg(c.name, D, 3, 160, c.causal, c.opts)
		fast, slow, g1, g2 := build(t, c.name, conf, c.biasScale, uint64(i))
		rng := rand.New(rand.NewPCG(uint64(i), 5))
		N := c.B * c.T * D
		x, dout := make([]float64, N), make([]float64, N)
		for j := range x {
			x[j], dout[j] = rng.NormFloat64(), rng.NormFloat64()
		}
		p := mixer.Pass{B: c.B, T: c.T, Pad: make([]bool, c.B*c.T)}
		for b := 0; b < c.B; b++ {
			// Pad the start of sequence 1 (rows with nothing allowed when
			// causal) and its second 64-row block (a block with no allowed
			// row), and a stretch in the middle of sequence 0.
			for t := 0; t < c.T; t++ {
				p.Pad[b*c.T+t] = b == 1 && (t < 3 || t >= 64 && t < 128) || b == 0 && t > c.T/3 && t < c.T/2
			}
		}
		out := make([]float64, N)
		act := make([]float64, fast.ActSize(c.B, c.T))
		scr := make([]float64, fast.ScratchSize(c.B, c.T, 0))
		fast.Forward(out, act, scr, x, p)
		dx1, dx2 := make([]float64, N), make([]float64, N)
		fast.Backward(dx1, scr, dout, act, x, p)
		want := naive{slow}.run(x, p, dout, dx2)
		name := fmt.Sprintf("%s %v causal=%v T=%d bias×%g", c.name, c.opts, c.causal, c.T, c.biasScale)
		tol := 1e-10
		if e := maxRel(out, want); e > tol {
			t.Errorf("%s: forward rel err %.3g", name, e)
		}
		if e := maxRel(dx1, dx2); e > tol {
			t.Errorf("%s: dx rel err %.3g", name, e)
		}
		for j, s := range fast.Params() {
			if e := maxRel(g1[j], g2[j]); e > tol {
				t.Errorf("%s: grad %s rel err %.3g", name, s.Name, e)
			}
		}
	}
}

// TestThreadsAgree checks that the result does not depend on the thread
// count beyond rounding (aft_conv sums rel_bias partials per thread).
func TestThreadsAgree(t *testing.T) {
	for _, kc := range kinds(false) {
		conf := cfg(kc.kind.Name, 8, 2, 200, false, kc.opts)
		var outs [][]float64
		for _, th := range []int{1, 3} {
			old := parallel.SetThreads(th)
			a, _, g, _ := build(t, kc.kind.Name, conf, 1, 1)
			B, T := 2, 150
			x := make([]float64, B*T*8)
			for i := range x {
				x[i] = math.Sin(float64(i))
			}
			p := mixer.Pass{B: B, T: T}
			out := make([]float64, len(x))
			act := make([]float64, a.ActSize(B, T))
			scr := make([]float64, a.ScratchSize(B, T, 0))
			a.Forward(out, act, scr, x, p)
			dx := make([]float64, len(x))
			a.Backward(dx, scr, x, act, x, p)
			outs = append(outs, append(append(out, dx...), g[len(g)-1]...))
			parallel.SetThreads(old)
		}
		if e := maxRel(outs[0], outs[1]); e > 1e-12 {
			t.Errorf("%s: 1 vs 3 threads differ by %.3g", kc.kind.Name, e)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		causal bool
		opts   map[string]any
		want   string
	}{
		{"aft_simple", false, map[string]any{"window": 3}, "window"},
		{"aft_full", false, map[string]any{"heads": 2}, "heads"},
		{"aft_local", false, map[string]any{"window": 0}, "mixer.window"},
		{"aft_local", false, map[string]any{"window": "big"}, "mixer.window"},
		{"aft_local", false, map[string]any{"heads": 2}, "heads"},
		{"aft_conv", false, map[string]any{"window": 4}, "mixer.window"},
		{"aft_conv", false, map[string]any{"heads": 5}, "mixer.heads"},
		{"aft_conv", false, map[string]any{"heads": 0}, "mixer.heads"},
		{"aft_conv", true, map[string]any{"window": 3, "stride": 1}, "stride"},
	} {
		_, err := New[float32](cfg(tc.name, 8, 2, 16, tc.causal, tc.opts))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: error %v, want one naming %q", tc.name, tc.opts, err, tc.want)
		}
	}
	if _, err := New[float32](cfg("aft_conv", 8, 2, 16, true, map[string]any{"window": 4})); err != nil {
		t.Errorf("causal aft_conv with an even window: %v", err)
	}
	if _, err := New[float32](cfg("aft_nope", 8, 2, 16, false, nil)); err == nil {
		t.Error("unknown AFT kind accepted")
	}
}

// TestFloat32ExtremeFinite feeds float32 layers biases of ±80 and keys
// spanning ±40 (exp would overflow float32 without the shifts) and checks
// that outputs and gradients stay finite, with and without padding.
func TestFloat32ExtremeFinite(t *testing.T) {
	for _, causal := range []bool{false, true} {
		for _, kc := range kinds(causal) {
			a, err := New[float32](cfg(kc.kind.Name, 6, 2, 100, causal, kc.opts))
			if err != nil {
				t.Fatal(err)
			}
			var w, g [][]float32
			for i, s := range a.Params() {
				v := make([]float32, s.Size())
				for j := range v {
					switch {
					case i == 8 && j%3 == 0:
						v[j] = 80
					case i == 8:
						v[j] = -80
					case i == 2: // k.weight: large keys
						v[j] = float32(10 * math.Sin(float64(j)))
					default:
						v[j] = float32(0.3 * math.Cos(float64(j)))
					}
				}
				w, g = append(w, v), append(g, make([]float32, s.Size()))
			}
			a.Bind(w, g)
			B, T := 2, 90
			x := make([]float32, B*T*6)
			for i := range x {
				x[i] = float32(math.Sin(float64(i) * 0.7))
			}
			pad := make([]bool, B*T)
			for i := 0; i < 20; i++ {
				pad[T+i] = true
			}
			p := mixer.Pass{B: B, T: T, Pad: pad}
			out, dx := make([]float32, len(x)), make([]float32, len(x))
			act := make([]float32, a.ActSize(B, T))
			scr := make([]float32, a.ScratchSize(B, T, 0))
			a.Forward(out, act, scr, x, p)
			a.Backward(dx, scr, out, act, x, p)
			for _, v := range [][]float32{out, dx, g[2], g[len(g)-1]} {
				for i, f := range v {
					if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
						t.Fatalf("%s causal=%v: non-finite value %v at %d", kc.kind.Name, causal, f, i)
					}
				}
			}
		}
	}
}
