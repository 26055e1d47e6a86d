package proj

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/mixer"
)

// set returns projections q, v, o of d channels bound to random float64
// weights, and the weights and zeroed gradients.
func set(d int, rng *rand.Rand) (Set[float64], [][]float64, [][]float64) {
	s := New[float64](d, kernels.PrecFP32, "q", "v", "o")
	var w, g [][]float64
	for _, p := range s.Params() {
		n := 1
		for _, k := range p.Shape {
			n *= k
		}
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		w, g = append(w, v), append(g, make([]float64, n))
	}
	rw, rg := s.Bind(append(w, []float64{7}), append(g, []float64{0}))
	if len(rw) != 1 || rw[0][0] != 7 || len(rg) != 1 {
		panic("Bind did not return the rest")
	}
	return s, w, g
}

func randVec(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

// TestParams: weight and bias per name, in order, o a residual projection.
func TestParams(t *testing.T) {
	s := New[float32](6, kernels.PrecFP32, "qk", "v", "o")
	var got []string
	for _, p := range s.Params() {
		got = append(got, p.Name)
		if p.Name == "o.weight" && p.Init != mixer.InitResidual {
			t.Errorf("o.weight init %v, want InitResidual", p.Init)
		}
	}
	want := []string{"qk.weight", "qk.bias", "v.weight", "v.bias", "o.weight", "o.bias"}
	if len(got) != len(want) {
		t.Fatalf("params %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("params %v, want %v", got, want)
		}
	}
}

// TestForward: y = x·Wᵀ + b, against a plain loop.
func TestForward(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	const d, n = 5, 3
	s, w, _ := set(d, rng)
	x := randVec(rng, n*d)
	y := make([]float64, n*d)
	s.Forward(2, 1, y, x, n)
	for r := range n {
		for o := range d {
			want := w[3][o]
			for i := range d {
				want += x[r*d+i] * w[2][o*d+i]
			}
			if math.Abs(y[r*d+o]-want) > 1e-12 {
				t.Fatalf("y[%d,%d] = %v, want %v", r, o, y[r*d+o], want)
			}
		}
	}
}

// TestBackward: the gradients of L = Σ dy ⊙ Forward(x) with respect to x,
// the weight and the bias, against central finite differences; set
// overwrites dx and !set adds to it.
func TestBackward(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	const d, n, i = 4, 3, 2 // projection i: o
	s, w, g := set(d, rng)
	x, dy := randVec(rng, n*d), randVec(rng, n*d)
	loss := func() float64 {
		y := make([]float64, n*d)
		s.Forward(2, i, y, x, n)
		var l float64
		for k := range y {
			l += y[k] * dy[k]
		}
		return l
	}
	dx := randVec(rng, n*d)
	before := append([]float64(nil), dx...)
	s.Backward(2, i, dx, dy, x, n, false)
	set := make([]float64, n*d)
	s.Backward(2, i, set, dy, x, n, true)
	for k := range dx {
		if math.Abs(dx[k]-before[k]-set[k]) > 1e-12 {
			t.Fatalf("dx[%d]: added %v, set %v", k, dx[k]-before[k], set[k])
		}
	}
	// The two calls accumulated the weight gradients twice.
	const h = 1e-6
	for _, c := range []struct {
		name string
		v    []float64
		grad []float64
		div  float64
	}{{"x", x, set, 1}, {"o.weight", w[2*i], g[2*i], 2}, {"o.bias", w[2*i+1], g[2*i+1], 2}} {
		for k := range c.v {
			old := c.v[k]
			c.v[k] = old + h
			lp := loss()
			c.v[k] = old - h
			lm := loss()
			c.v[k] = old
			fd := (lp - lm) / (2 * h)
			if got := c.grad[k] / c.div; math.Abs(got-fd) > 1e-6*(1+math.Abs(fd)) {
				t.Errorf("%s[%d]: gradient %v, finite difference %v", c.name, k, got, fd)
			}
		}
	}
}

// TestPacked: ForwardPacked and BackwardPacked, on inputs packed once,
// give Forward's and Backward's results bit for bit, in bf16 training and
// after UseBF16, on every bf16 path; PacksInput is false in F = float64,
// in fp32 and for a projection kept in F.
func TestPacked(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	const d, n = 48, 37
	r := func(k int) []float32 {
		v := make([]float32, k)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	for _, bp := range kernels.BF16Paths() {
		old, _ := kernels.SetBF16Path(bp)
		for _, infer := range []bool{false, true} {
			s := New[float32](d, kernels.PrecBF16, "q", "o")
			var w, g, w2, g2 [][]float32
			for _, p := range s.Params() {
				k := 1
				for _, x := range p.Shape {
					k *= x
				}
				v := r(k)
				w, g = append(w, v), append(g, r(k))
				g2 = append(g2, append([]float32(nil), g[len(g)-1]...))
			}
			w2 = w
			s.Bind(w, g)
			s2 := New[float32](d, kernels.PrecBF16, "q", "o")
			s2.Bind(w2, g2)
			if infer {
				if err := s.UseBF16(1); err != nil {
					t.Fatal(err)
				}
				s2.UseBF16(1)
			}
			if !s.PacksInput(0) {
				t.Fatalf("%s infer=%v: PacksInput false", bp, infer)
			}
			x, dy := r(n*d), r(n*d)
			var xa kernels.BF16A
			var xb kernels.BF16B
			kernels.PackBF16A(2, &xa, false, n, d, x, d)
			kernels.PackBF16B(2, &xb, false, n, d, x, d)
			y, y2 := r(n*d), r(n*d)
			s.Forward(2, 0, y, x, n)
			s2.ForwardPacked(2, 0, y2, &xa, n)
			for i := range y {
				if y[i] != y2[i] {
					t.Fatalf("%s infer=%v: ForwardPacked y[%d] = %v, Forward's %v", bp, infer, i, y2[i], y[i])
				}
			}
			if infer {
				continue
			}
			for _, set := range []bool{false, true} {
				dx0 := r(n * d)
				dx, dx2 := append([]float32(nil), dx0...), append([]float32(nil), dx0...)
				s.Backward(2, 0, dx, dy, x, n, set)
				s2.BackwardPacked(2, 0, dx2, dy, &xb, n, set)
				for j, pair := range [][2][]float32{{dx, dx2}, {g[0], g2[0]}, {g[1], g2[1]}} {
					for i := range pair[0] {
						if pair[0][i] != pair[1][i] {
							t.Fatalf("%s set=%v: BackwardPacked result %d [%d] = %v, Backward's %v", bp, set, j, i, pair[1][i], pair[0][i])
						}
					}
				}
			}
		}
		kernels.SetBF16Path(old)
	}
	s32 := New[float32](8, kernels.PrecFP32, "q", "o")
	s64 := New[float64](8, kernels.PrecBF16, "q", "o")
	k := New[float32](8, kernels.PrecBF16, "q", "o")
	k.KeepFP32(0)
	if s32.PacksInput(0) || s64.PacksInput(0) || k.PacksInput(0) || !k.PacksInput(1) {
		t.Error("PacksInput wrong for fp32, float64 or a projection kept in F")
	}
}
