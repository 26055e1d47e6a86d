package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/tokenmix/tokenmix/internal/parallel"
)

var testSizes = []int{0, 1, 7, 13, 17, 31, 33, 1000}

// randInputs returns k slices of n values uniform in [lo,hi) drawn from
// seed, as float32 and as the same values in float64.
func randInputs(seed int64, k, n int, lo, hi float64) ([][]float32, [][]float64) {
	rng := rand.New(rand.NewSource(seed))
	x32, x64 := make([][]float32, k), make([][]float64, k)
	for i := range x32 {
		x32[i], x64[i] = make([]float32, n), make([]float64, n)
		for j := range x32[i] {
			v := float32(lo + (hi-lo)*rng.Float64())
			x32[i][j], x64[i][j] = v, float64(v)
		}
	}
	return x32, x64
}

func clone2[F Float](x [][]F) [][]F {
	c := make([][]F, len(x))
	for i := range x {
		c[i] = slices.Clone(x[i])
	}
	return c
}

// checkClose fails t unless |got−want| ≤ atol + rtol·|want| elementwise
// (equal values, infinities included, always pass).
func checkClose(t *testing.T, what string, got []float32, want []float64, atol, rtol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len %d, want %d", what, len(got), len(want))
	}
	worst, at := 0.0, -1
	for i, g := range got {
		if float64(g) == want[i] || g == float32(want[i]) || (math.IsNaN(float64(g)) && math.IsNaN(want[i])) {
			continue
		}
		r := math.Abs(float64(g)-want[i]) / (atol + rtol*math.Abs(want[i]))
		if r > worst || math.IsNaN(r) {
			worst, at = r, i
		}
	}
	if worst > 1 || math.IsNaN(worst) {
		t.Errorf("%s: element %d = %v, want %v (%.3g× the tolerance)", what, at, got[at], want[at], worst)
	}
}

// checkUnchanged fails t if the inputs differ from their saved copy.
func checkUnchanged(t *testing.T, what string, in, saved [][]float32) {
	t.Helper()
	for i := range in {
		for j := range in[i] {
			if math.Float32bits(in[i][j]) != math.Float32bits(saved[i][j]) {
				t.Fatalf("%s mutated input %d at %d", what, i, j)
			}
		}
	}
}

// The row cases: each runs one kernel on copies of its inputs and returns
// the outputs (and scalar results appended).
func runExp[F Float](in [][]F) []F        { o := make([]F, len(in[0])); Exp(o, in[0]); return o }
func runExpInPlace[F Float](in [][]F) []F { o := slices.Clone(in[0]); Exp(o, o); return o }
func runExpSub[F Float](in [][]F) []F {
	o := make([]F, len(in[0]))
	s := ExpSub(o, in[0], Max(in[0]))
	return append(o, s)
}
func runMax[F Float](in [][]F) []F { return []F{Max(in[0])} }
func runSum[F Float](in [][]F) []F { return []F{Sum(in[0])} }
func runDot[F Float](in [][]F) []F { return []F{Dot(in[0], in[1])} }
func runAxpy[F Float](in [][]F) []F {
	o := slices.Clone(in[0])
	Axpy(o, F(0.7), in[1])
	return o
}
func runScale[F Float](in [][]F) []F  { o := slices.Clone(in[0]); Scale(o, F(-1.3)); return o }
func runSubMul[F Float](in [][]F) []F { o := slices.Clone(in[0]); SubMul(o, in[1], F(0.3)); return o }
func runAdd[F Float](in [][]F) []F {
	o := make([]F, len(in[0]))
	Add(parallel.Threads(), o, in[0], in[1])
	return o
}
func runAddAlias[F Float](in [][]F) []F {
	o := slices.Clone(in[1])
	Add(parallel.Threads(), o, in[0], o)
	return o
}
func runAddTo[F Float](in [][]F) []F {
	o := slices.Clone(in[0])
	AddTo(parallel.Threads(), o, in[1])
	return o
}
func runSoftmax[F Float](in [][]F) []F {
	o := slices.Clone(in[0])
	SoftmaxRows(o, 1, len(o))
	return o
}
func runGelu[F Float](in [][]F) []F {
	o := make([]F, len(in[0]))
	GeluForward(parallel.Threads(), o, in[0])
	return o
}

// runGeluBack starts dinp from in[2], which GeluBackward overwrites, and
// checks that dinp = dout in place gives the same result.
func runGeluBack[F Float](in [][]F) []F {
	o := slices.Clone(in[2])
	GeluBackward(parallel.Threads(), o, in[0], in[1])
	d := slices.Clone(in[1])
	GeluBackward(parallel.Threads(), d, in[0], d)
	for i := range d {
		if d[i] != o[i] {
			panic(fmt.Sprintf("GeluBackward in place: element %d = %v, want %v", i, d[i], o[i]))
		}
	}
	return o
}
func runAdamW[F Float](in [][]F) []F {
	p, m, v := slices.Clone(in[0]), slices.Clone(in[2]), slices.Clone(in[3])
	for i := range v {
		v[i] *= v[i]
	}
	AdamW(parallel.Threads(), p, in[1], m, v, 1e-3, 0.9, 0.95, 1e-8, 0.1, 7)
	return slices.Concat(p, m, v)
}

func TestRowKernels(t *testing.T) {
	for _, tc := range []struct {
		name       string
		k          int     // input slices
		lo, hi     float64 // input range
		atol, rtol float64
		sumErr     bool // atol grows with √n (summation order differs)
		f32        func([][]float32) []float32
		f64        func([][]float64) []float64
	}{
		{"Exp", 1, -20, 5, 0, 4e-7, false, runExp[float32], runExp[float64]},
		// Results below 2⁻¹²⁶ are 0 (no subnormals): atol 2⁻¹²⁶.
		{"ExpInPlace", 1, -90, 89, 0x1p-126, 4e-7, false, runExpInPlace[float32], runExpInPlace[float64]},
		// float32 x−m rounds: up to 25·2⁻²⁴ relative on top of exp's error.
		{"ExpSub", 1, -20, 5, 0, 2e-6, false, runExpSub[float32], runExpSub[float64]},
		{"Max", 1, -3, 3, 0, 0, false, runMax[float32], runMax[float64]},
		{"Sum", 1, -1, 1, 1e-6, 1e-6, true, runSum[float32], runSum[float64]},
		{"Dot", 2, -1, 1, 1e-6, 1e-6, true, runDot[float32], runDot[float64]},
		{"Axpy", 2, -1, 1, 1.2e-7, 2.4e-7, false, runAxpy[float32], runAxpy[float64]},
		{"Scale", 1, -1, 1, 0, 1.2e-7, false, runScale[float32], runScale[float64]},
		{"SubMul", 2, -1, 1, 1.2e-7, 2.4e-7, false, runSubMul[float32], runSubMul[float64]},
		{"Add", 2, -1, 1, 6e-8, 6e-8, false, runAdd[float32], runAdd[float64]},
		{"AddAlias", 2, -1, 1, 6e-8, 6e-8, false, runAddAlias[float32], runAddAlias[float64]},
		{"AddTo", 2, -1, 1, 6e-8, 6e-8, false, runAddTo[float32], runAddTo[float64]},
		{"Softmax", 1, -20, 5, 1e-12, 3e-6, false, runSoftmax[float32], runSoftmax[float64]},
		{"GeluForward", 1, -12, 12, 1e-12, 2e-6, false, runGelu[float32], runGelu[float64]},
		{"GeluBackward", 3, -6, 6, 2e-6, 1e-6, false, runGeluBack[float32], runGeluBack[float64]},
		{"AdamW", 4, -1, 1, 1e-7, 2e-6, false, runAdamW[float32], runAdamW[float64]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forPaths(t, func(t *testing.T) {
				for _, n := range testSizes {
					in32, in64 := randInputs(int64(n)+3, tc.k, n, tc.lo, tc.hi)
					saved := clone2(in32)
					got := tc.f32(in32)
					checkUnchanged(t, tc.name, in32, saved)
					atol := tc.atol
					if tc.sumErr {
						atol *= math.Sqrt(float64(n + 1))
					}
					checkClose(t, fmt.Sprintf("%s n=%d", tc.name, n), got, tc.f64(in64), atol, tc.rtol)
				}
			})
		})
	}
}

func TestMaxNaN(t *testing.T) {
	nan := float32(math.NaN())
	forPaths(t, func(t *testing.T) {
		for _, tc := range []struct {
			x    []float32
			want float32
		}{
			{nil, float32(math.Inf(-1))},
			{[]float32{nan}, float32(math.Inf(-1))},
			{[]float32{nan, 2, nan, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, nan, 0}, 2},
			{[]float32{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, nan}, 5},
		} {
			if got := Max(tc.x); got != tc.want {
				t.Errorf("Max(%v) = %v, want %v", tc.x, got, tc.want)
			}
		}
	})
}

func TestSoftmaxRows(t *testing.T) {
	inf := math.Inf(-1)
	for _, sh := range [][2]int{{1, 1}, {3, 7}, {2, 13}, {5, 17}, {4, 33}, {3, 1000}} {
		rows, cols := sh[0], sh[1]
		in32, in64 := randInputs(int64(rows*cols), 1, rows*cols, -30, 10)
		// Row 0 fully masked (becomes zeros), row 1 masked in every third
		// position (a causal or padding mask).
		for j := 0; j < cols; j++ {
			if rows > 1 {
				in32[0][j], in64[0][j] = float32(inf), inf
			}
			if rows > 2 && j%3 == 0 {
				in32[0][cols+j], in64[0][cols+j] = float32(inf), inf
			}
		}
		SoftmaxRows(in64[0], rows, cols)
		forPaths(t, func(t *testing.T) {
			x := slices.Clone(in32[0])
			SoftmaxRows(x, rows, cols)
			checkClose(t, fmt.Sprintf("SoftmaxRows %dx%d", rows, cols), x, in64[0], 1e-12, 3e-6)
		})
	}
}

// TestExpSubMaskedTail: appending −Inf entries (masked keys) to a row
// leaves ExpSub's sum and outputs bitwise unchanged on every path, for rows
// that end inside a vector, on a vector boundary, or in its second
// accumulator.
func TestExpSubMaskedTail(t *testing.T) {
	in, _ := randInputs(9, 1, 80, -8, 2)
	ninf := float32(math.Inf(-1))
	forPaths(t, func(t *testing.T) {
		for n := 0; n <= 40; n++ {
			x := in[0][:n]
			want := make([]float32, n)
			ws := ExpSub(want, x, 2)
			for k := 1; k <= 40; k++ {
				xp := append(slices.Clone(x), slices.Repeat([]float32{ninf}, k)...)
				got := make([]float32, n+k)
				gs := ExpSub(got, xp, 2)
				if math.Float32bits(gs) != math.Float32bits(ws) || !slices.Equal(got[:n], want) || slices.ContainsFunc(got[n:], func(v float32) bool { return v != 0 }) {
					t.Fatalf("length %d with %d masked entries appended: sum %v, alone %v", n, k, gs, ws)
				}
			}
		}
	})
}

func TestLayerNorm(t *testing.T) {
	for _, tc := range []struct{ N, C, threads int }{
		{1, 1, 1}, {7, 13, 1}, {3, 17, 2}, {5, 31, 1}, {2, 33, 3}, {4, 1000, 2},
		{64, 1024, 1}, {64, 1024, 2}, {67, 999, 3}, // large enough to split
	} {
		N, C := tc.N, tc.C
		name := fmt.Sprintf("N=%d C=%d threads=%d", N, C, tc.threads)
		// Inputs: inp, weight, bias, dout; the gradients start non-zero to
		// check that backward accumulates.
		in32, in64 := randInputs(int64(N*C), 4, N*C, -2, 3)
		g32, g64 := randInputs(int64(N*C)+1, 3, N*C, -1, 1)
		out64, mean64, rstd64 := make([]float64, N*C), make([]float64, N), make([]float64, N)
		LayerNormForward(1, out64, mean64, rstd64, in64[0], in64[1][:C], in64[2][:C], N, C)
		LayerNormBackward(1, g64[0], g64[1][:C], g64[2][:C], in64[3], in64[0], in64[1][:C], mean64, rstd64, N, C)
		forPaths(t, func(t *testing.T) {
			in, saved := clone2(in32), clone2(in32)
			g := clone2(g32)
			out, mean, rstd := make([]float32, N*C), make([]float32, N), make([]float32, N)
			LayerNormForward(tc.threads, out, mean, rstd, in[0], in[1][:C], in[2][:C], N, C)
			checkClose(t, name+" out", out, out64, 2e-6, 2e-6)
			checkClose(t, name+" mean", mean, mean64, 1e-6, 1e-6)
			checkClose(t, name+" rstd", rstd, rstd64, 0, 2e-6)
			LayerNormBackward(tc.threads, g[0], g[1][:C], g[2][:C], in[3], in[0], in[1][:C], mean, rstd, N, C)
			checkUnchanged(t, name, in, saved)
			checkClose(t, name+" dinp", g[0], g64[0], 1e-5, 1e-5)
			sq := math.Sqrt(float64(N))
			checkClose(t, name+" dweight", g[1][:C], g64[1][:C], 1e-6*sq, 1e-5)
			checkClose(t, name+" dbias", g[2][:C], g64[2][:C], 1e-6*sq, 1e-5)
		})
	}
}

// TestThreadsBitwise checks that the kernels that split work across
// goroutines give bit-identical results for 1, 2 and 3 threads, on inputs
// large enough to split (an odd length, so chunks end mid-vector).
func TestThreadsBitwise(t *testing.T) {
	const n, C = 70001, 7
	run := func(in [][]float32) []float32 {
		var out []float32
		for _, f := range []func([][]float32) []float32{
			runGelu[float32], runGeluBack[float32], runAdd[float32], runAddTo[float32], runAdamW[float32],
		} {
			out = append(out, f(in)...)
		}
		// LayerNorm over n/C rows: inp in[0], weight and bias from in[1],
		// dout in[2], gradients starting from in[3].
		N := n/C - 2
		o, mean, rstd := make([]float32, N*C), make([]float32, N), make([]float32, N)
		LayerNormForward(parallel.Threads(), o, mean, rstd, in[0][:N*C], in[1][:C], in[1][C:2*C], N, C)
		g := slices.Clone(in[3][:N*C+2*C])
		LayerNormBackward(parallel.Threads(), g[:N*C], g[N*C:N*C+C], g[N*C+C:], in[2][:N*C], in[0][:N*C], in[1][:C], mean, rstd, N, C)
		return slices.Concat(out, o, mean, rstd, g)
	}
	forPaths(t, func(t *testing.T) {
		in, _ := randInputs(5, 4, n, -3, 3)
		var want []float32
		for _, th := range []int{1, 2, 3} {
			old := parallel.SetThreads(th)
			got := run(in)
			parallel.SetThreads(old)
			if want == nil {
				want = got
				continue
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("threads=%d: output %d = %v, with 1 thread %v", th, i, got[i], want[i])
				}
			}
		}
	})
}

// TestLayerNormBackwardFD checks the float64 LayerNorm gradients against
// central finite differences of L = Σ out·R.
func TestLayerNormBackwardFD(t *testing.T) {
	const N, C, h = 3, 7, 1e-6
	_, in := randInputs(11, 4, N*C, -2, 2)
	x, w, b, r := in[0], in[1][:C], in[2][:C], in[3]
	loss := func() float64 {
		out, mean, rstd := make([]float64, N*C), make([]float64, N), make([]float64, N)
		LayerNormForward(parallel.Threads(), out, mean, rstd, x, w, b, N, C)
		return Dot(out, r)
	}
	out, mean, rstd := make([]float64, N*C), make([]float64, N), make([]float64, N)
	LayerNormForward(parallel.Threads(), out, mean, rstd, x, w, b, N, C)
	dx, dw, db := make([]float64, N*C), make([]float64, C), make([]float64, C)
	LayerNormBackward(parallel.Threads(), dx, dw, db, r, x, w, mean, rstd, N, C)
	for _, p := range []struct {
		name      string
		val, grad []float64
	}{{"inp", x, dx}, {"weight", w, dw}, {"bias", b, db}} {
		for i := range p.val {
			v := p.val[i]
			p.val[i] = v + h
			lp := loss()
			p.val[i] = v - h
			lm := loss()
			p.val[i] = v
			fd := (lp - lm) / (2 * h)
			if math.Abs(fd-p.grad[i]) > 1e-6*(1+math.Abs(fd)) {
				t.Errorf("d%s[%d] = %v, finite difference %v", p.name, i, p.grad[i], fd)
			}
		}
	}
}

// TestGeluBackwardFD checks the float64 GELU derivative against central
// finite differences, including the saturated tails.
func TestGeluBackwardFD(t *testing.T) {
	const h = 1e-6
	xs := []float64{-30, -9, -5, -2.5, -0.75, -0.1, 0, 1e-3, 0.3, 1, 2.2, 6, 30}
	d := make([]float64, len(xs))
	GeluBackward(parallel.Threads(), d, xs, slices.Repeat([]float64{1}, len(xs)))
	y := make([]float64, 2)
	for i, x := range xs {
		GeluForward(parallel.Threads(), y, []float64{x + h, x - h})
		fd := (y[0] - y[1]) / (2 * h)
		if math.Abs(fd-d[i]) > 1e-7*(1+math.Abs(fd)) {
			t.Errorf("GELU'(%v) = %v, finite difference %v", x, d[i], fd)
		}
	}
}

// TestGeluExtremes checks the float32 GELU and its derivative far out in the
// tails, where x² overflows float32, against the float64 kernels.
func TestGeluExtremes(t *testing.T) {
	xs := []float64{-1e30, -1e20, -1e10, -1e5, -30, -12, 12, 30, 1e5, 1e10, 1e20, 1e30}
	y64, d64 := make([]float64, len(xs)), make([]float64, len(xs))
	GeluForward(parallel.Threads(), y64, xs)
	GeluBackward(parallel.Threads(), d64, xs, slices.Repeat([]float64{1}, len(xs)))
	forPaths(t, func(t *testing.T) {
		x := make([]float32, len(xs))
		for i, v := range xs {
			x[i] = float32(v)
		}
		y, d := make([]float32, len(x)), make([]float32, len(x))
		GeluForward(parallel.Threads(), y, x)
		GeluBackward(parallel.Threads(), d, x, slices.Repeat([]float32{1}, len(x)))
		for i := range x {
			if e := math.Abs(float64(y[i]) - y64[i]); !(e <= 1e-6*math.Max(1, math.Abs(y64[i]))) {
				t.Errorf("GELU(%g) = %g, want %g", xs[i], y[i], y64[i])
			}
			if e := math.Abs(float64(d[i]) - d64[i]); !(e <= 1e-6) {
				t.Errorf("GELU'(%g) = %g, want %g", xs[i], d[i], d64[i])
			}
		}
	})
}

// benchPaths runs fn as a sub-benchmark on every path.
func benchPaths(b *testing.B, fn func(b *testing.B)) {
	for _, p := range Paths() {
		b.Run(p.String(), func(b *testing.B) {
			old := SetPath(p)
			defer SetPath(old)
			fn(b)
		})
	}
}

// benchVec times fn on k random slices of n float32 in [-10, 2) and reports
// the time per element.
func benchVec(b *testing.B, n, k int, fn func(x [][]float32)) { benchVecIn(b, n, k, -10, 2, fn) }

// benchVecIn is benchVec with inputs in [lo, hi).
func benchVecIn(b *testing.B, n, k int, lo, hi float64, fn func(x [][]float32)) {
	x, _ := randInputs(1, k, n, lo, hi)
	b.SetBytes(int64(4 * n * k))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fn(x)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/elem")
}

// LayerNorm benchmarks: 64 rows of 768 channels; x[0] inp/out, x[1] dout,
// x[2] dinp; weight, bias, mean and rstd are row slices of x[3].
func benchLN(b *testing.B, backward bool) {
	const N, C = 64, 768
	benchVec(b, N*C, 4, func(x [][]float32) {
		w, bias, mean, rstd := x[3][:C], x[3][C:2*C], x[3][2*C:2*C+N], x[3][3*C:3*C+N]
		if backward {
			LayerNormBackward(parallel.Threads(), x[2], x[3][4*C:5*C], x[3][5*C:6*C], x[1], x[0], w, mean, rstd, N, C)
		} else {
			LayerNormForward(parallel.Threads(), x[1], mean, rstd, x[0], w, bias, N, C)
		}
	})
}

func BenchmarkExpSub(b *testing.B) {
	benchPaths(b, func(b *testing.B) { benchVec(b, 1024, 2, func(x [][]float32) { ExpSub(x[1], x[0], 2) }) })
}
func BenchmarkSoftmaxRows(b *testing.B) {
	benchPaths(b, func(b *testing.B) { benchVec(b, 64*256, 1, func(x [][]float32) { SoftmaxRows(x[0], 64, 256) }) })
}
func BenchmarkMax(b *testing.B) {
	benchPaths(b, func(b *testing.B) { benchVec(b, 1024, 1, func(x [][]float32) { Max(x[0]) }) })
}
func BenchmarkDot(b *testing.B) {
	benchPaths(b, func(b *testing.B) { benchVec(b, 1024, 2, func(x [][]float32) { Dot(x[0], x[1]) }) })
}
func BenchmarkAxpy(b *testing.B) {
	benchPaths(b, func(b *testing.B) { benchVec(b, 1024, 2, func(x [][]float32) { Axpy(x[0], 1e-3, x[1]) }) })
}
func BenchmarkGeluForward(b *testing.B) {
	benchPaths(b, func(b *testing.B) {
		benchVec(b, 1<<16, 2, func(x [][]float32) { GeluForward(parallel.Threads(), x[1], x[0]) })
	})
}
func BenchmarkGeluBackward(b *testing.B) {
	benchPaths(b, func(b *testing.B) {
		benchVec(b, 1<<16, 3, func(x [][]float32) { GeluBackward(parallel.Threads(), x[2], x[0], x[1]) })
	})
}
func BenchmarkLayerNormForward(b *testing.B)  { benchPaths(b, func(b *testing.B) { benchLN(b, false) }) }
func BenchmarkLayerNormBackward(b *testing.B) { benchPaths(b, func(b *testing.B) { benchLN(b, true) }) }
func BenchmarkAdd(b *testing.B) {
	benchPaths(b, func(b *testing.B) {
		benchVec(b, 1<<16, 3, func(x [][]float32) { Add(parallel.Threads(), x[2], x[0], x[1]) })
	})
}
func BenchmarkAdamW(b *testing.B) {
	benchPaths(b, func(b *testing.B) {
		benchVecIn(b, 1<<16, 4, 0, 1, func(x [][]float32) { AdamW(parallel.Threads(), x[0], x[1], x[2], x[3], 1e-3, 0.9, 0.95, 1e-8, 0.1, 3) })
	})
}

// TestSmallAddsDoNotAllocate guards the per-row calls that mixers make in hot
// loops: with a heap allocation per call they would produce tens of MB of
// garbage per training step (and raise peak RSS through GC headroom).
func TestSmallAddsDoNotAllocate(t *testing.T) {
	a := make([]float32, 256)
	b := make([]float32, 256)
	d := make([]float32, 256)
	for name, f := range map[string]func(){
		"Add":          func() { Add(parallel.Threads(), d, a, b) },
		"AddTo":        func() { AddTo(parallel.Threads(), d, a) },
		"GeluForward":  func() { GeluForward(parallel.Threads(), d, a) },
		"GeluBackward": func() { GeluBackward(parallel.Threads(), d, a, b) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s on 256 elements: %v allocations per call, want 0", name, n)
		}
	}
}

// Tile-row benchmarks: one 128×64 score tile, as attention's kernels see it.
func BenchmarkExpSubRows(b *testing.B) {
	benchPaths(b, func(b *testing.B) {
		m := make([]float32, 128)
		benchVec(b, 128*64, 1, func(x [][]float32) { ExpSubRows(x[0], 128, 64, m, 1) })
	})
}
func BenchmarkOnlineSoftmax(b *testing.B) {
	benchPaths(b, func(b *testing.B) {
		m, l, al := make([]float32, 128), make([]float32, 128), make([]float32, 128)
		benchVec(b, 128*64, 1, func(x [][]float32) { OnlineSoftmax(x[0], 128, 64, m, l, 1, al) })
	})
}

// BenchmarkExpSubRowsMasked is BenchmarkExpSubRows on a causal diagonal
// tile, rows r of 64 keys with the keys past r masked to −Inf as attention
// masks them (refilled each iteration, which the time includes): the
// masked entries must cost what the others do, with no subnormal result.
func BenchmarkExpSubRowsMasked(b *testing.B) {
	benchPaths(b, func(b *testing.B) {
		m := make([]float32, 128)
		src, _ := randInputs(1, 1, 128*64, -10, 2)
		for r := range 128 {
			for j := r%64 + 1; j < 64; j++ {
				src[0][r*64+j] = float32(math.Inf(-1))
			}
		}
		x := make([]float32, 128*64)
		benchVec(b, 128*64, 1, func([][]float32) {
			copy(x, src[0])
			ExpSubRows(x, 128, 64, m, 1)
		})
	})
}
