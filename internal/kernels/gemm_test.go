package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tokenmix/tokenmix/internal/parallel"
)

// gemmCase is one GEMM shape; pad is added to every leading dimension.
type gemmCase struct {
	m, n, k, pad int
}

var gemmCases = []gemmCase{
	{1, 1, 1, 0},
	{7, 13, 5, 0},
	{65, 129, 33, 3},
	{6, 64, 4, 0},     // exactly one AVX-512 tile
	{12, 128, 17, 1},  // whole tiles, odd k
	{100, 17, 0, 2},   // k = 0: C = beta·C
	{0, 5, 3, 0},      // empty C
	{7, 300, 20, 5},   // short and wide: split over columns
	{13, 70, 700, 1},  // several k blocks
	{7, 600, 256, 0},  // several column blocks of packed B
	{50, 33, 64, 16},  // m, n not multiples of the tiles
	{3, 1000, 2, 0},   // tiny k
	{1, 1000, 256, 0}, // one row: the unpacked dot-product path (NT)
	{2, 300, 257, 3},
	{4, 65, 600, 0},
	{16, 36, 256, 0}, // NT without packing: four whole 4×4 dot-tile row blocks
	{5, 19, 31, 2},   // a 1-row block, a 15-float k tail, 3 columns past the tiles
	{15, 9, 16, 1},   // k one whole vector, a 3-row block
	{11, 40, 7, 0},   // k below one vector: only the masked tail
	{40, 16, 300, 0}, // B already in panel layout (ldb = n = 16): read in place
	{9, 64, 900, 0},  // in place, several k blocks
	{20, 16, 50, 5},  // 16 columns with ldb 21: packed
}

var gemmScalars = []struct{ alpha, beta float32 }{
	{1, 0}, // C is NaN-filled and must not be read
	{1, 1},
	{-0.75, 0.5},
}

// gemmOperands returns random op(A), op(B), C for tc with the given
// transposes, their leading dimensions, and C with NaN in its m×n part when
// nanC and a sentinel in the padding.
func gemmOperands(rng *rand.Rand, tc gemmCase, transA, transB, nanC bool) (a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	ar, ac := tc.m, tc.k
	if transA {
		ar, ac = ac, ar
	}
	br, bc := tc.k, tc.n
	if transB {
		br, bc = bc, br
	}
	lda, ldb, ldc = ac+tc.pad, bc+tc.pad, tc.n+tc.pad
	fill := func(x []float32) {
		for i := range x {
			x[i] = 2*rng.Float32() - 1
		}
	}
	a = make([]float32, ar*lda)
	b = make([]float32, br*ldb)
	c = make([]float32, tc.m*ldc)
	fill(a)
	fill(b)
	for i := range c {
		switch {
		case i%ldc >= tc.n:
			c[i] = 12345 // padding: must stay untouched
		case nanC:
			c[i] = float32(math.NaN())
		default:
			c[i] = 2*rng.Float32() - 1
		}
	}
	return
}

// gemmWant returns RefGemm's float64 result on the same operands and an
// elementwise error bound for float32 accumulation.
func gemmWant(tc gemmCase, transA, transB bool, alpha, beta float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) (want, bound []float64) {
	f64 := func(x []float32, abs bool) []float64 {
		y := make([]float64, len(x))
		for i, v := range x {
			y[i] = float64(v)
			if abs {
				y[i] = math.Abs(y[i])
			}
		}
		return y
	}
	want = f64(c, false)
	RefGemm(transA, transB, tc.m, tc.n, tc.k, float64(alpha), f64(a, false), lda, f64(b, false), ldb, float64(beta), want, ldc)
	bound = f64(c, true)
	for i := range bound {
		if math.IsNaN(bound[i]) {
			bound[i] = 0
		}
	}
	RefGemm(transA, transB, tc.m, tc.n, tc.k, math.Abs(float64(alpha)), f64(a, true), lda, f64(b, true), ldb, math.Abs(float64(beta)), bound, ldc)
	for i := range bound {
		bound[i] = 1e-7 * float64(tc.k+4) * (bound[i] + 1e-3)
	}
	return want, bound
}

// checkC compares got against want within bound and checks the padding.
func checkC(t *testing.T, name string, tc gemmCase, got []float32, want, bound []float64, ldc int) {
	t.Helper()
	for i, g := range got {
		if i%ldc >= tc.n {
			if g != 12345 {
				t.Fatalf("%s: padding C[%d] written: %v", name, i, g)
			}
			continue
		}
		if d := math.Abs(float64(g) - want[i]); !(d <= bound[i]) {
			t.Fatalf("%s: C[%d,%d] = %v, want %v (|diff| %.3g > %.3g)", name, i/ldc, i%ldc, g, want[i], d, bound[i])
		}
	}
}

func TestGemm(t *testing.T) {
	defer SetPath(SetPath(Best))
	for _, p := range Paths() {
		SetPath(p)
		for _, threads := range []int{1, 2, 3} {
			for ci, tc := range gemmCases {
				for tr := 0; tr < 4; tr++ {
					transA, transB := tr&2 != 0, tr&1 != 0
					for si, s := range gemmScalars {
						rng := rand.New(rand.NewPCG(uint64(ci), uint64(4*tr+si)))
						a, lda, b, ldb, c, ldc := gemmOperands(rng, tc, transA, transB, s.beta == 0)
						want, bound := gemmWant(tc, transA, transB, s.alpha, s.beta, a, lda, b, ldb, c, ldc)
						a0, b0 := append([]float32(nil), a...), append([]float32(nil), b...)
						name := fmt.Sprintf("%v/threads=%d/%dx%dx%d/pad=%d/%s/alpha=%v/beta=%v", p, threads, tc.m, tc.n, tc.k, tc.pad, transName(transA, transB), s.alpha, s.beta)
						Gemm(threads, PrecFP32, transA, transB, tc.m, tc.n, tc.k, s.alpha, a, lda, b, ldb, s.beta, c, ldc)
						checkC(t, name, tc, c, want, bound, ldc)
						if !equal32(a, a0) || !equal32(b, b0) {
							t.Fatalf("%s: inputs mutated", name)
						}
					}
				}
			}
		}
	}
}

// TestGemmThreadsBitwise: Gemm's result does not depend on threads, bit
// for bit, on every path and transpose; the shapes are those where a
// thread's block of rows falls below gemvRows (a prompt of 20 or 33 rows)
// and where columns split, or rows for want of columns (1100×200).
func TestGemmThreadsBitwise(t *testing.T) {
	defer SetPath(SetPath(Best))
	shapes := []gemmCase{{20, 96, 64, 0}, {33, 64, 64, 1}, {64, 64, 32, 0}, {17, 256, 16, 0}, {7, 300, 20, 5}, {48, 48, 48, 0}, {1100, 200, 40, 0}}
	for _, p := range Paths() {
		SetPath(p)
		for ci, tc := range shapes {
			for tr := 0; tr < 4; tr++ {
				transA, transB := tr&2 != 0, tr&1 != 0
				rng := rand.New(rand.NewPCG(uint64(ci), uint64(tr)))
				a, lda, b, ldb, c, ldc := gemmOperands(rng, tc, transA, transB, false)
				want := append([]float32(nil), c...)
				Gemm(1, PrecFP32, transA, transB, tc.m, tc.n, tc.k, 1, a, lda, b, ldb, 0.5, want, ldc)
				for threads := 2; threads <= 5; threads++ {
					got := append([]float32(nil), c...)
					Gemm(threads, PrecFP32, transA, transB, tc.m, tc.n, tc.k, 1, a, lda, b, ldb, 0.5, got, ldc)
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%v %dx%dx%d %s, %d threads: C[%d] = %v, one thread %v", p, tc.m, tc.n, tc.k, transName(transA, transB), threads, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestGemmStridedB: on AVX-512, the weight-gradient products (A
// transposed) read a B whose rows are less than 4 KiB apart in place; their
// result is bit for bit that of packing it, which the same B stored 4 KiB
// or more apart gets. The shapes have several column and k blocks, partial
// row tiles and panels of 1–4 vectors.
func TestGemmStridedB(t *testing.T) {
	if !slices.Contains(Paths(), PathAVX512) {
		t.Skip("no AVX-512")
	}
	defer SetPath(SetPath(PathAVX512))
	for ci, tc := range []struct{ m, n, k, ldb int }{
		{30, 208, 1300, 240}, {13, 64, 700, 80}, {100, 384, 513, 400}, {7, 16, 9, 16}, {64, 1008, 40, 1008},
	} {
		if !gemmStridedB(PathAVX512, true, false, tc.n, tc.ldb) {
			t.Fatalf("%+v: not read in place", tc)
		}
		rng := rand.New(rand.NewPCG(uint64(ci), 7))
		a := make([]float32, tc.k*tc.m)
		b := make([]float32, tc.k*tc.ldb)
		c := make([]float32, tc.m*tc.n)
		for _, x := range [][]float32{a, b, c} {
			for i := range x {
				x[i] = 2*rng.Float32() - 1
			}
		}
		const ldp = 1040 // rows 4160 bytes apart: packed
		bp := make([]float32, tc.k*ldp)
		for q := 0; q < tc.k; q++ {
			copy(bp[q*ldp:q*ldp+tc.n], b[q*tc.ldb:q*tc.ldb+tc.n])
		}
		for _, threads := range []int{1, 2} {
			want, got := slices.Clone(c), slices.Clone(c)
			Gemm(threads, PrecFP32, true, false, tc.m, tc.n, tc.k, 0.5, a, tc.m, bp, ldp, 1, want, tc.n)
			Gemm(threads, PrecFP32, true, false, tc.m, tc.n, tc.k, 0.5, a, tc.m, b, tc.ldb, 1, got, tc.n)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%+v, %d threads: C[%d] = %v in place, %v packed", tc, threads, i, got[i], want[i])
				}
			}
		}
	}
}

func TestGemmPanics(t *testing.T) {
	x := make([]float32, 12)
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"negative m", func() { Gemm(2, PrecFP32, false, false, -1, 2, 2, 1, x, 2, x, 2, 0, x, 2) }},
		{"short A", func() { Gemm(2, PrecFP32, false, false, 4, 2, 4, 1, x, 4, x, 2, 0, x, 2) }},
		{"small ldb", func() { Gemm(2, PrecFP32, false, true, 2, 3, 2, 1, x, 2, x, 1, 0, x, 3) }},
		{"short A bf16", func() { Gemm(2, PrecBF16, false, false, 4, 2, 4, 1, x, 4, x, 2, 0, x, 2) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tc.name)
				}
			}()
			tc.f()
		}()
	}
}

// TestGemmNoAlloc checks that steady-state single-threaded calls reuse their
// pack buffers.
func TestGemmNoAlloc(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops buffers under the race detector")
	}
	a, b, c := make([]float32, 64*70), make([]float32, 70*80), make([]float32, 64*80)
	for _, p := range Paths() {
		old := SetPath(p)
		allocs := testing.AllocsPerRun(20, func() {
			Gemm(1, PrecFP32, true, false, 64, 80, 70, 1, a, 64, b, 80, 0, c, 80)
		})
		SetPath(old)
		if allocs != 0 {
			t.Errorf("%v: %v allocations per one-thread Gemm call", p, allocs)
		}
	}
}

func transName(transA, transB bool) string {
	s := [2]string{"N", "T"}
	return s[b2i(transA)] + s[b2i(transB)]
}

func equal32(x, y []float32) bool {
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
			return false
		}
	}
	return len(x) == len(y)
}

// Benchmarks: the shapes of `tokenmix bench gemm`, on the current path and
// thread count (set TOKENMIX_THREADS).
func BenchmarkGemm512x512x512(b *testing.B)   { benchGemm(b, false, false, 512, 512, 512) }
func BenchmarkGemm1024x256x256(b *testing.B)  { benchGemm(b, false, false, 1024, 256, 256) }
func BenchmarkGemm2048x2048x64(b *testing.B)  { benchGemm(b, false, false, 2048, 2048, 64) }
func BenchmarkGemm2048x64x2048(b *testing.B)  { benchGemm(b, false, false, 2048, 64, 2048) }
func BenchmarkGemm4096x1024x256(b *testing.B) { benchGemm(b, false, false, 4096, 1024, 256) }
func BenchmarkGemmNT512(b *testing.B)         { benchGemm(b, false, true, 512, 512, 512) }

// BenchmarkGemmNT128x1024x256 is an inference-shaped linear layer, y = x·Wᵀ
// for 128 rows and W [1024, 256]: packing Wᵀ is a large share of it.
func BenchmarkGemmNT128x1024x256(b *testing.B) { benchGemm(b, false, true, 128, 1024, 256) }
func BenchmarkGemmTN512(b *testing.B)          { benchGemm(b, true, false, 512, 512, 512) }

// The weight gradients of scripts/speed_d256.json's feed-forward, dW = dYᵀ·X
// over 4096 tokens: fc1's (W [1024, 256]) and fc2's (W [256, 1024]).
func BenchmarkGemmTN1024x256x4096(b *testing.B) { benchGemm(b, true, false, 1024, 256, 4096) }
func BenchmarkGemmTN256x1024x4096(b *testing.B) { benchGemm(b, true, false, 256, 1024, 4096) }

// A projection of the same step: its forward (y = x·Wᵀ) and its input
// gradient (dx = dy·W), over 4096 tokens with W [256, 256].
func BenchmarkGemmNT4096x256x256(b *testing.B) { benchGemm(b, false, true, 4096, 256, 256) }
func BenchmarkGemm4096x256x256(b *testing.B)   { benchGemm(b, false, false, 4096, 256, 256) }

// BenchmarkGemmTN256x256x4096 is a projection's weight gradient in the same
// step (W [256, 256]).
func BenchmarkGemmTN256x256x4096(b *testing.B) { benchGemm(b, true, false, 256, 256, 4096) }

func benchGemm(bb *testing.B, transA, transB bool, m, n, k int) {
	a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	for i := range b {
		b[i] = float32(i%5) - 2
	}
	lda, ldb := k, n
	if transA {
		lda = m
	}
	if transB {
		ldb = k
	}
	bb.SetBytes(0)
	bb.ResetTimer()
	for bb.Loop() {
		Gemm(parallel.Threads(), PrecFP32, transA, transB, m, n, k, 1, a, lda, b, ldb, 0, c, n)
	}
	bb.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(bb.N)/bb.Elapsed().Seconds()/1e9, "GFLOP/s")
}
