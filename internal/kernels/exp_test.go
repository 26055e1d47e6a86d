package kernels

import (
	"math"
	"math/rand"
	"os"
	"testing"
)

// forPaths runs fn as a subtest on every path this CPU supports.
func forPaths(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	for _, p := range Paths() {
		t.Run(p.String(), func(t *testing.T) {
			old := SetPath(p)
			defer SetPath(old)
			fn(t)
		})
	}
}

// expRelErr returns the largest relative error of Exp over xs against
// float64 math.Exp, and the input where it occurs. Only inputs whose exp is
// a normal float32 count.
func expRelErr(xs, ys []float32) (worst float64, at float32) {
	Exp(ys, xs)
	for i, x := range xs {
		want := math.Exp(float64(x))
		if want < 0x1p-126 || want > math.MaxFloat32 {
			continue
		}
		if e := math.Abs(float64(ys[i])-want) / want; e > worst || math.IsNaN(e) {
			worst, at = e, x
		}
	}
	return worst, at
}

func TestExp32Accuracy(t *testing.T) {
	// Dense grid over the documented range plus random bit patterns in it.
	const lo, hi = -87.33, 88.72
	n := 1 << 22
	if testing.Short() {
		n = 1 << 18
	}
	xs := make([]float32, 0, n+n/4)
	for i := 0; i < n; i++ {
		xs = append(xs, float32(lo+(hi-lo)*float64(i)/float64(n-1)))
	}
	rng := rand.New(rand.NewSource(1))
	for len(xs) < cap(xs) {
		x := math.Float32frombits(rng.Uint32())
		if x >= lo && x <= hi {
			xs = append(xs, x)
		}
	}
	ys := make([]float32, len(xs))
	forPaths(t, func(t *testing.T) {
		worst, at := expRelErr(xs, ys)
		t.Logf("max relative error %.3g at x=%v over %d points", worst, at, len(xs))
		if !(worst <= ExpMaxRelErr) {
			t.Errorf("max relative error %.3g at x=%v exceeds %g", worst, at, ExpMaxRelErr)
		}
	})
}

// TestExp32Exhaustive checks every float32 in [-87.33, 88.72] (2.1e9
// inputs); it takes minutes per path, so it runs only with
// TOKENMIX_EXP_EXHAUSTIVE=1.
func TestExp32Exhaustive(t *testing.T) {
	if os.Getenv("TOKENMIX_EXP_EXHAUSTIVE") == "" {
		t.Skip("set TOKENMIX_EXP_EXHAUSTIVE=1 to check every float32")
	}
	forPaths(t, func(t *testing.T) {
		xs := make([]float32, 1<<16)
		ys := make([]float32, len(xs))
		var worst float64
		var at float32
		for _, r := range [][2]float32{{0, 88.72}, {-87.33, 0}} {
			b, e := math.Float32bits(r[0]), math.Float32bits(r[1])
			if b > e {
				b, e = e, b
			}
			for u := uint64(b); u <= uint64(e); {
				xs = xs[:0]
				for ; u <= uint64(e) && len(xs) < cap(xs); u++ {
					xs = append(xs, math.Float32frombits(uint32(u)))
				}
				if w, a := expRelErr(xs, ys[:len(xs)]); w > worst {
					worst, at = w, a
				}
			}
		}
		t.Logf("exhaustive: max relative error %.3g at x=%v", worst, at)
		if !(worst <= ExpMaxRelErr) {
			t.Errorf("max relative error %.3g at x=%v exceeds %g", worst, at, ExpMaxRelErr)
		}
	})
}

func TestExp32Special(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, tc := range []struct {
		x, want float32
		atol    float32 // absolute tolerance
	}{
		{0, 1, 0},
		{float32(math.Copysign(0, -1)), 1, 0},
		{1, float32(math.E), 3e-7},
		{-inf, 0, 0},
		{inf, inf, 0},
		{math.MaxFloat32, inf, 0},
		{-math.MaxFloat32, 0, 0},
		{88.73, inf, 0}, // exp(88.73) > MaxFloat32
		{89, inf, 0},    // the upper clamp
		{-1000, 0, 0},
		// The smallest input with a normal result, and below it the
		// inputs whose exp would be subnormal, which give 0.
		{expLo, float32(math.Exp(expLo)), 0},
		{math.Nextafter32(expLo, -200), 0, 0},
		{-88, 0, 0},
		{-95, 0, 0},
		{-103.2, 0, 0},
		{-104, 0, 0},
		{1e-30, 1, 0},
		{-1e-30, 1, 0},
	} {
		forPaths(t, func(t *testing.T) {
			// Each value sits in a full vector and in the tail.
			src := make([]float32, 19)
			for i := range src {
				src[i] = tc.x
			}
			dst := make([]float32, len(src))
			Exp(dst, src)
			for i, y := range dst {
				d := y - tc.want
				if y == tc.want || (d <= tc.atol && -d <= tc.atol) {
					continue
				}
				if tc.want != 0 && !math.IsInf(float64(tc.want), 0) && math.Abs(float64(d/tc.want)) <= ExpMaxRelErr {
					continue
				}
				t.Errorf("Exp(%v)[%d] = %v, want %v", tc.x, i, y, tc.want)
				break
			}
		})
	}
	forPaths(t, func(t *testing.T) {
		nan := float32(math.NaN())
		src := []float32{nan, 1, nan, nan, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, nan}
		dst := make([]float32, len(src))
		Exp(dst, src)
		for i, x := range src {
			if math.IsNaN(float64(x)) != math.IsNaN(float64(dst[i])) {
				t.Errorf("Exp(%v) = %v", x, dst[i])
			}
		}
	})
}

// TestExp32Tails checks that every length gives, element by element, the
// same bits as a one-element call: the vector tails use the full algorithm.
func TestExp32Tails(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	src := make([]float32, 70)
	for i := range src {
		src[i] = float32(rng.NormFloat64() * 10)
	}
	forPaths(t, func(t *testing.T) {
		one := make([]float32, 1)
		for n := 0; n <= len(src); n++ {
			dst := make([]float32, n+1)
			dst[n] = 42
			Exp(dst[:n], src[:n])
			for i := 0; i < n; i++ {
				Exp(one, src[i:i+1])
				if dst[i] != one[0] {
					t.Fatalf("n=%d: Exp[%d] = %v, one-element call gives %v", n, i, dst[i], one[0])
				}
			}
			if dst[n] != 42 {
				t.Fatalf("n=%d: Exp wrote past len(src)", n)
			}
		}
	})
}

func BenchmarkExp32(b *testing.B) {
	benchPaths(b, func(b *testing.B) { benchVec(b, 4096, 2, func(x [][]float32) { Exp(x[1], x[0]) }) })
}

func BenchmarkMathExp(b *testing.B) {
	benchVec(b, 4096, 2, func(x [][]float32) { RefExp32(x[1], x[0]) })
}

// TestExpPathsAgree: the AVX2 and AVX-512 kernels compute the same
// float32 exp, bit for bit, over the clamped range, in the gradual
// underflow below it, beyond it, and at ±Inf and NaN, through Exp and
// ExpSub's outputs (its sum adds lanes in a width's own order). The pure-Go
// twin is not compared: without FMA its x·log2(e) + shift rounds twice.
func TestExpPathsAgree(t *testing.T) {
	var asm []Path
	for _, p := range Paths() {
		if p != PathGo {
			asm = append(asm, p)
		}
	}
	if len(asm) < 2 {
		t.Skipf("paths %v: fewer than two assembly widths to compare", Paths())
	}
	rng := rand.New(rand.NewSource(2))
	xs := []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		-87.33, -87.34, -100, -104, -105, -1e30, 88.72, 88.73, 100, 1e30, 0x1p-149}
	for len(xs) < 1<<16 {
		xs = append(xs, float32(-110+210*rng.Float64()))
	}
	for len(xs) < 1<<16+1000 {
		xs = append(xs, math.Float32frombits(rng.Uint32()))
	}
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }
	var want, wantSub []float32
	for _, p := range asm {
		old := SetPath(p)
		got := make([]float32, len(xs))
		Exp(got, xs)
		sub := make([]float32, len(xs))
		ExpSub(sub, xs, 3.5)
		SetPath(old)
		if want == nil {
			want, wantSub = got, sub
			continue
		}
		for i := range got {
			if !same(got[i], want[i]) {
				t.Fatalf("%s: exp(%v) = %v, %s gives %v", p, xs[i], got[i], asm[0], want[i])
			}
			if !same(sub[i], wantSub[i]) {
				t.Fatalf("%s: exp(%v − 3.5) = %v, %s gives %v", p, xs[i], sub[i], asm[0], wantSub[i])
			}
		}
	}
}

// TestExpLo pins expLo to the smallest float32 whose exp is normal, in
// float64: exp(expLo) ≥ 2⁻¹²⁶ > exp(the next float32 below it).
func TestExpLo(t *testing.T) {
	lo := float32(expLo)
	below := math.Nextafter32(lo, -200)
	if !(math.Exp(float64(lo)) >= 0x1p-126 && math.Exp(float64(below)) < 0x1p-126) {
		t.Errorf("expLo = %v (%#x): exp = %g, exp of %v = %g; want the first ≥ 2⁻¹²⁶ and the second below",
			lo, math.Float32bits(lo), math.Exp(float64(lo)), below, math.Exp(float64(below)))
	}
}
