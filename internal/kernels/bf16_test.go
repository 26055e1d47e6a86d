package kernels

import (
	"fmt"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// refBF16 rounds x to bf16 to nearest even by comparing the two
// neighbouring bf16 values in float64.
func refBF16(x float32) BF16 {
	b := math.Float32bits(x)
	if x != x {
		return BF16(b>>16 | 0x40)
	}
	lo := b &^ 0xFFFF
	if lo == b {
		return BF16(b >> 16)
	}
	hi := lo + 0x10000 // the next bf16 away from zero (may be ±Inf)
	dl := math.Abs(float64(x) - float64(math.Float32frombits(lo)))
	dh := math.Abs(float64(math.Float32frombits(hi)) - float64(x))
	if hi&0x7FFFFFFF == 0x7F800000 { // Inf: its distance is the next step's
		dh = math.Abs(math.Ldexp(1, 128) - math.Abs(float64(x)))
	}
	switch {
	case dl < dh:
		return BF16(lo >> 16)
	case dh < dl:
		return BF16(hi >> 16)
	case lo>>16&1 == 0: // a tie: to the even one
		return BF16(lo >> 16)
	}
	return BF16(hi >> 16)
}

// bf16Patterns are float32 bit patterns of every class: zeros, subnormals,
// normals, ties (even and odd kept bit), neighbours of ties, the largest
// finite values (which round to Inf or not), infinities and NaNs
// (signalling, quiet, with payload only in the dropped bits).
func bf16Patterns() []uint32 {
	ps := []uint32{
		0, 0x80000000, // ±0
		1, 0x8000, 0x8001, 0x18000, 0x7FFF, 0x10000, 0x807FFFFF, 0x007FFFFF, 0x00408000, 0x00418000, // subnormals
		0x3F800000, 0x3F808000, 0x3F818000, 0x3F807FFF, 0x3F808001, 0xBF808000, 0xBF818000, // 1 and ties
		0x7F7F7FFF, 0x7F7F8000, 0x7F7FFFFF, 0x7F7EFFFF, 0xFF7F8000, // near the largest finite
		0x7F800000, 0xFF800000, // ±Inf
		0x7F800001, 0x7F80FFFF, 0x7FC00000, 0xFFC00001, 0x7FBF0000, 0xFF810000, // NaNs
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 4096 {
		ps = append(ps, rng.Uint32())
	}
	for i := uint64(0); i < 1<<32; i += 65537 * 13 { // a sweep over every exponent
		ps = append(ps, uint32(i))
	}
	return ps
}

// TestBF16Conversions: ToBF16 (and the conversions of packed A and B)
// rounds every class of float32 to nearest even (NaN stays NaN) on every
// path, and FromBF16 is exact: every bf16
// survives the round trip.
func TestBF16Conversions(t *testing.T) {
	ps := bf16Patterns()
	src := make([]float32, len(ps))
	for i, p := range ps {
		src[i] = math.Float32frombits(p)
	}
	for _, p := range Paths() {
		old := SetPath(p)
		got := make([]BF16, len(src))
		ToBF16(got, src)
		for i, x := range src {
			want := refBF16(x)
			isNaN := func(b BF16) bool { return b&0x7F80 == 0x7F80 && b&0x7F != 0 }
			if got[i] != want && !(isNaN(got[i]) && isNaN(want)) {
				t.Errorf("%v: ToBF16(%#08x) = %#04x, want %#04x", p, ps[i], got[i], want)
			}
			if bf16Of(x) != got[i] {
				t.Errorf("%v: the Go twin gives %#04x for %#08x, the path %#04x", p, bf16Of(x), ps[i], got[i])
			}
		}
		// The rows of packed A: every class, in rows of 48.
		if n := len(src) / 48 * 48; p == PathAVX512 {
			rows := make([]BF16, n)
			if k := toBF16RowsVec(rows, 48, src, 48, 0, n/48, 48); k != 48 {
				t.Fatalf("toBF16RowsVec covered %d of 48 values a row", k)
			}
			for j, x := range src[:n] {
				if rows[j] != bf16Of(x) {
					t.Fatalf("toBF16RowsVec(%#08x) = %#04x, want %#04x", ps[j], rows[j], bf16Of(x))
				}
			}
		}
		// The pair layout of packed B: every class in both halves.
		if n := len(src) &^ 15; p == PathAVX512 {
			rows := append(append([]float32(nil), src[:n]...), src[n/2:n]...) // row 1: the rows' halves swapped
			rows = append(rows, src[:n/2]...)
			r1 := rows[n:]
			pairs := make([]BF16, 2*n)
			if c0 := pairPanelVec(pairs, rows, n, 1, n); c0 != n {
				t.Fatalf("pairPanelVec covered %d of %d columns", c0, n)
			}
			for j := range n {
				if a, b := pairs[2*j], pairs[2*j+1]; a != bf16Of(src[j]) || b != bf16Of(r1[j]) {
					t.Fatalf("pairPanelVec(%#08x, %#08x) = %#04x, %#04x, want %#04x, %#04x",
						math.Float32bits(src[j]), math.Float32bits(r1[j]), a, b, bf16Of(src[j]), bf16Of(r1[j]))
				}
			}
		}
		all := make([]BF16, 1<<16)
		for i := range all {
			all[i] = BF16(i)
		}
		f := make([]float32, len(all))
		FromBF16(f, all)
		back := make([]BF16, len(all))
		ToBF16(back, f)
		for i, b := range all {
			if math.Float32bits(f[i]) != uint32(b)<<16 {
				t.Fatalf("%v: FromBF16(%#04x) = %#08x", p, b, math.Float32bits(f[i]))
			}
			if back[i] != b && !(f[i] != f[i] && back[i]&0x7F80 == 0x7F80) {
				t.Fatalf("%v: round trip of %#04x gives %#04x", p, b, back[i])
			}
		}
		SetPath(old)
	}
}

// TestGemmBF16: on every bf16 path, GemmBF16 of packed op(A) and op(B),
// and Gemm in PrecBF16 on the float32 operands (on several threads and on
// the calling goroutine), match a float64 product of the same bf16 values within float32
// accumulation error, for odd shapes, every transpose, and beta 0 (C not
// read), 1 and otherwise; C's padding is untouched.
func TestGemmBF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	shapes := []gemmCase{
		{1, 1, 1, 0}, {7, 13, 5, 0}, {65, 129, 33, 3}, {6, 64, 4, 0}, {13, 70, 700, 1},
		{50, 33, 64, 16}, {2, 300, 257, 3}, {100, 17, 3, 0}, {130, 200, 129, 2}, {3, 65, 2048, 0}, {0, 5, 3, 0}, {4, 9, 0, 0},
		{64, 96, 512, 0}, {200, 40, 256, 5}, {96, 64, 32, 0},
	}
	for _, bp := range BF16Paths() {
		old, _ := SetBF16Path(bp)
		for _, tc := range shapes {
			for _, tr := range []string{"NN", "NT", "TN", "TT"} {
				for _, sc := range gemmScalars {
					ta, tb := tr[0] == 'T', tr[1] == 'T'
					a, lda, b, ldb, c, ldc := gemmOperands(rng, tc, ta, tb, sc.beta == 0)
					var pa BF16A
					var pb BF16B
					PackBF16A(3, &pa, ta, tc.m, tc.k, a, lda)
					PackBF16B(3, &pb, tb, tc.k, tc.n, b, ldb)
					// The float64 reference reads the same bf16 values.
					round := func(x []float32) []float32 {
						r := make([]float32, len(x))
						for i, v := range x {
							r[i] = bf16Of(v).Float32()
						}
						return r
					}
					want, bound := gemmWant(tc, ta, tb, sc.alpha, sc.beta, round(a), lda, round(b), ldb, c, ldc)
					c1, c2 := append([]float32(nil), c...), append([]float32(nil), c...)
					GemmBF16(3, sc.alpha, PackedA(&pa), PackedB(&pb), sc.beta, c, ldc)
					name := fmt.Sprintf("%s %v %s alpha %v beta %v", bp, tc, tr, sc.alpha, sc.beta)
					checkC(t, name, tc, c, want, bound, ldc)
					// Gemm in PrecBF16 packs from float32 itself.
					Gemm(3, PrecBF16, ta, tb, tc.m, tc.n, tc.k, sc.alpha, a, lda, b, ldb, sc.beta, c1, ldc)
					checkC(t, "Gemm "+name, tc, c1, want, bound, ldc)
					Gemm(1, PrecBF16, ta, tb, tc.m, tc.n, tc.k, sc.alpha, a, lda, b, ldb, sc.beta, c2, ldc)
					checkC(t, "Gemm threads=1 "+name, tc, c2, want, bound, ldc)
					if !slices.Equal(c1, c2) {
						t.Fatalf("%s: Gemm differs with 3 threads and 1", name)
					}

				}
			}
		}
		SetBF16Path(old)
	}
}

func BenchmarkGemmBF16(b *testing.B) {
	for _, s := range [][3]int{{512, 512, 512}, {4096, 1024, 256}, {1024, 256, 4096}} {
		m, n, k := s[0], s[1], s[2]
		a := make([]float32, m*k)
		w := make([]float32, k*n)
		for i := range a {
			a[i] = float32(i%13) * 0.1
		}
		for i := range w {
			w[i] = float32(i%7) * 0.1
		}
		var pa BF16A
		var pb BF16B
		PackBF16A(parallel.Threads(), &pa, false, m, k, a, k)
		PackBF16B(parallel.Threads(), &pb, false, k, n, w, n)
		c := make([]float32, m*n)
		for _, bp := range BF16Paths() {
			b.Run(fmt.Sprintf("%s/%dx%dx%d", bp, m, n, k), func(b *testing.B) {
				old, _ := SetBF16Path(bp)
				defer SetBF16Path(old)
				for range b.N {
					GemmBF16(parallel.Threads(), 1, PackedA(&pa), PackedB(&pb), 0, c, n)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkGemmPrec: the training step's products (T=1024, B=4, d=256,
// d_ff=1024: fc1 forward, its input gradient and its weight gradient) in
// float32 and in bf16 packed per call.
func BenchmarkGemmPrec(b *testing.B) {
	for _, s := range []struct {
		name          string
		ta, tb        bool
		m, n, k       int
		lda, ldb, ldc int
	}{
		{"fwd", false, true, 4096, 1024, 256, 256, 256, 1024},
		{"dx", false, false, 4096, 256, 1024, 1024, 256, 256},
		{"dw", true, false, 1024, 256, 4096, 1024, 256, 256},
	} {
		a := make([]float32, s.m*s.k)
		w := make([]float32, s.k*s.n)
		for i := range a {
			a[i] = float32(i%13) * 0.1
		}
		for i := range w {
			w[i] = float32(i%7) * 0.1
		}
		c := make([]float32, s.m*s.n)
		for _, p := range []Prec{PrecFP32, PrecBF16} {
			b.Run(fmt.Sprintf("%s/%d", s.name, p), func(b *testing.B) {
				for range b.N {
					Gemm(parallel.Threads(), p, s.ta, s.tb, s.m, s.n, s.k, 1, a, s.lda, w, s.ldb, 0, c, s.ldc)
				}
				b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestBF16Views: a product of views (BF16A.Rows, BF16B.View, odd row
// counts included) equals the product of the same sub-matrices packed on
// their own, on every bf16 path, as does GemmBF16 of a Float32A
// (transposed or not) against the view.
func TestBF16Views(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	const M, K, N = 37, 70, 150
	a, b := make([]float32, M*K), make([]float32, K*N)
	for i := range a {
		a[i] = float32(rng.NormFloat64())
	}
	for i := range b {
		b[i] = float32(rng.NormFloat64())
	}
	var pa BF16A
	var pb BF16B
	PackBF16A(2, &pa, false, M, K, a, K)
	PackBF16B(2, &pb, false, K, N, b, N)
	for _, bp := range BF16Paths() {
		old, _ := SetBF16Path(bp)
		for _, v := range []struct{ i0, m, k0, k, j0, n int }{{0, M, 0, K, 0, N}, {5, 9, 4, 33, 64, 86}, {1, 30, 10, 60, 0, 64}, {36, 1, 68, 2, 128, 22}} {
			// The view's A rows must have the view's K columns: pack them.
			var sa BF16A
			PackBF16A(2, &sa, false, v.m, v.k, a[v.i0*K+v.k0:], K)
			var sb BF16B
			PackBF16B(2, &sb, false, v.k, v.n, b[v.k0*N+v.j0:], N)
			want := make([]float32, v.m*v.n)
			GemmBF16(2, 1, PackedA(&sa), PackedB(&sb), 0, want, v.n)
			vb := pb.View(v.k0, v.k, v.j0, v.n)
			got := make([]float32, v.m*v.n)
			GemmBF16(1, 1, PackedA(&sa), PackedB(&vb), 0, got, v.n)
			if !slices.Equal(got, want) {
				t.Errorf("%s: view %+v differs from its own packing", bp, v)
			}
			ra := pa.Rows(v.i0, v.m)
			if ra.M != v.m || ra.Data[0] != pa.Data[v.i0*pa.Stride] {
				t.Errorf("Rows(%d, %d) of packed A", v.i0, v.m)
			}
			for _, ta := range []bool{false, true} {
				x, lda := a[v.i0*K+v.k0:], K
				if ta { // A [k, m]: the transpose's rows
					x, lda = make([]float32, v.k*v.m), v.m
					for i := range v.m {
						for q := range v.k {
							x[q*v.m+i] = a[(v.i0+i)*K+v.k0+q]
						}
					}
				}
				got := make([]float32, v.m*v.n)
				GemmBF16(1, 1, Float32A(ta, v.m, v.k, x, lda), PackedB(&vb), 0, got, v.n)
				if !slices.Equal(got, want) {
					t.Errorf("%s: GemmBF16 of Float32A transA=%v on view %+v differs", bp, ta, v)
				}
			}
		}
		SetBF16Path(old)
	}
}

// TestBF16Rows: RowsA and PackBF16BRows of bf16 rows give PackBF16A's and
// PackBF16B's packing of the same values (odd row counts included), and
// GemmBF16 of a transposed Float32A and RowsB equals Gemm's transposed
// product in PrecBF16 on them.
func TestBF16Rows(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, s := range [][2]int{{7, 64}, {33, 130}, {64, 256}, {5, 16}} {
		k, n := s[0], s[1]
		x := make([]float32, k*n)
		for i := range x {
			x[i] = bf16Of(float32(rng.NormFloat64())).Float32() // exact in bf16
		}
		rows := make([]BF16, len(x))
		ToBF16(rows, x)
		var want, got BF16B
		PackBF16B(2, &want, false, k, n, x, n)
		PackBF16BRows(2, &got, k, n, rows, n)
		if !slices.Equal(got.Data, want.Data) || got.K != k || got.N != n {
			t.Errorf("PackBF16BRows %dx%d differs from PackBF16B", k, n)
		}
		if a, ok := RowsA(k, n, rows); ok {
			var pa BF16A
			PackBF16A(2, &pa, false, k, n, x, n)
			if !slices.Equal(a.Data, pa.Data) || a.Stride != pa.Stride {
				t.Errorf("RowsA %dx%d differs from PackBF16A", k, n)
			}
		} else if n%2 == 0 {
			t.Errorf("RowsA refused %dx%d", k, n)
		}
		m := 9
		a := make([]float32, k*m)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		c1, c2 := make([]float32, m*n), make([]float32, m*n)
		Gemm(2, PrecBF16, true, false, m, n, k, 1, a, m, x, n, 0, c1, n)
		GemmBF16(2, 1, Float32A(true, m, k, a, m), RowsB(k, n, rows, n), 0, c2, n)
		if !slices.Equal(c1, c2) {
			t.Errorf("GemmBF16 of RowsB %d×%d×%d differs from Gemm", m, n, k)
		}
	}
}

// TestGemmBF16RowInvariant: on every bf16 path, a row of C is bitwise the
// same whether it is computed with the other rows or alone, for every
// alpha and beta: a sequence's products do not depend on its batch. The
// shapes put rows in whole blocks of 32 and in a last partial one, K in
// whole steps of 32 and a remainder, and K in two blocks (1000: the
// avx512fma path's rows alone and in a batch take different kernels).
func TestGemmBF16RowInvariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, bp := range BF16Paths() {
		old, _ := SetBF16Path(bp)
		for _, tc := range []gemmCase{{70, 100, 40, 0}, {33, 64, 64, 0}, {100, 40, 300, 0}, {5, 70, 512, 0}, {40, 70, 1000, 0}} {
			for _, sc := range gemmScalars {
				a, lda, b, ldb, c, ldc := gemmOperands(rng, tc, false, false, false)
				var pa BF16A
				var pb BF16B
				PackBF16A(2, &pa, false, tc.m, tc.k, a, lda)
				PackBF16B(2, &pb, false, tc.k, tc.n, b, ldb)
				all := append([]float32(nil), c...)
				GemmBF16(2, sc.alpha, PackedA(&pa), PackedB(&pb), sc.beta, all, ldc)
				for i := range tc.m {
					row := pa.Rows(i, 1)
					one := append([]float32(nil), c[i*ldc:i*ldc+tc.n]...)
					GemmBF16(1, sc.alpha, PackedA(&row), PackedB(&pb), sc.beta, one, tc.n)
					if !slices.Equal(one, all[i*ldc:i*ldc+tc.n]) {
						t.Fatalf("%s %v alpha %v beta %v: row %d alone differs from the batch's", bp, tc, sc.alpha, sc.beta, i)
					}
				}
			}
		}
		SetBF16Path(old)
	}
}

// TestGemmBF16NoAlloc: on every bf16 path, a steady-state GemmBF16 on the
// calling goroutine allocates nothing, whether it packs float32 operands
// (transposed or not) or bf16 rows, or takes views of packed ones (as
// attention's tiles do, a view per call).
func TestGemmBF16NoAlloc(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops buffers under the race detector")
	}
	a, b, c := make([]float32, 64*70), make([]float32, 70*80), make([]float32, 64*80)
	rows := make([]BF16, 70*80)
	var pa BF16A
	var pb BF16B
	PackBF16A(1, &pa, false, 64, 70, a, 70)
	PackBF16B(1, &pb, false, 70, 80, b, 80)
	for _, bp := range BF16Paths() {
		old, _ := SetBF16Path(bp)
		allocs := testing.AllocsPerRun(20, func() {
			GemmBF16(1, 1, Float32A(false, 64, 70, a, 70), Float32B(false, 70, 80, b, 80), 0, c, 80)
			GemmBF16(1, 1, Float32A(true, 64, 70, a, 64), Float32B(true, 70, 80, b, 70), 1, c, 80)
			ar := pa.Rows(2, 30)
			av, bv := ar.Cols(2, 60), pb.View(2, 60, 0, 80)
			GemmBF16(1, 1, PackedA(&av), PackedB(&bv), 1, c, 80)
			GemmBF16(1, 1, Float32A(true, 64, 70, a, 64), RowsB(70, 80, rows, 80), 1, c, 80)
		})
		SetBF16Path(old)
		if allocs != 0 {
			t.Errorf("%s: %v allocations per one-thread GemmBF16 round", bp, allocs)
		}
	}
}

// TestBF16PackFromRows: PackBF16BTRows and PackBF16ATRows, from bf16 rows,
// give the data PackBF16B and PackBF16A give for the same values in
// float32 (transposed), bit for bit, padding included: odd and even k,
// partial panels, strides wider than the rows, and NaN and subnormal
// values, which a transpose moves unchanged.
func TestBF16PackFromRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, s := range []struct{ rows, cols, ld int }{{1, 1, 2}, {3, 5, 6}, {70, 64, 64}, {130, 33, 40}, {64, 1024, 1030}, {37, 17, 18}} {
		// src is [rows, cols] bf16 rows ld apart; f32 the same values.
		src := make([]BF16, (s.rows-1)*s.ld+s.cols)
		for i := range src {
			src[i] = bf16Of(float32(rng.NormFloat64()))
		}
		src[0], src[len(src)-1] = 0x7fc1, 0x0003 // a NaN with a payload, a subnormal
		f32 := make([]float32, len(src))
		for i, v := range src {
			f32[i] = v.Float32()
		}
		// op(B) = srcᵀ [cols, rows].
		var got, want BF16B
		PackBF16BTRows(3, &got, s.cols, s.rows, src, s.ld)
		PackBF16B(1, &want, true, s.cols, s.rows, f32, s.ld)
		if len(got.Data) != len(want.Data) {
			t.Fatalf("%+v: PackBF16BTRows %d values, PackBF16B %d", s, len(got.Data), len(want.Data))
		}
		for i := range want.Data {
			if got.Data[i] != want.Data[i] {
				t.Fatalf("%+v: PackBF16BTRows value %d = %#x, PackBF16B's %#x", s, i, got.Data[i], want.Data[i])
			}
		}
		// op(A) = srcᵀ [cols, rows].
		var ga, wa BF16A
		ga.Data = make([]BF16, 8) // garbage to overwrite, too small
		for i := range ga.Data {
			ga.Data[i] = 0x1234
		}
		PackBF16ATRows(&ga, s.cols, s.rows, src, s.ld)
		PackBF16A(1, &wa, true, s.cols, s.rows, f32, s.ld)
		if ga.Stride != wa.Stride || len(ga.Data) != len(wa.Data) {
			t.Fatalf("%+v: PackBF16ATRows stride %d, %d values; PackBF16A %d, %d", s, ga.Stride, len(ga.Data), wa.Stride, len(wa.Data))
		}
		for i := range wa.Data {
			if ga.Data[i] != wa.Data[i] {
				t.Fatalf("%+v: PackBF16ATRows value %d = %#x, PackBF16A's %#x", s, i, ga.Data[i], wa.Data[i])
			}
		}
	}
}

// TestBF16PackBlock: blocks of rows packed by PackBF16BBlock into a
// ShapeBF16B give PackBF16B's data bit for bit, with odd K and N short of
// a panel.
func TestBF16PackBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	for _, s := range []struct{ k, n, ld, blk int }{{64, 64, 64, 32}, {37, 70, 75, 8}, {130, 200, 200, 64}, {1, 3, 3, 2}} {
		b := make([]float32, (s.k-1)*s.ld+s.n)
		for i := range b {
			b[i] = float32(rng.NormFloat64())
		}
		var want, got BF16B
		PackBF16B(1, &want, false, s.k, s.n, b, s.ld)
		data := make([]BF16, PackedSizeB(s.k, s.n))
		for i := range data {
			data[i] = 0x4242 // garbage that padding must overwrite
		}
		ShapeBF16B(&got, s.k, s.n, data)
		for k0 := 0; k0 < s.k; k0 += s.blk {
			PackBF16BBlock(&got, k0, b[k0*s.ld:], s.ld, min(s.blk, s.k-k0))
		}
		for i := range want.Data {
			if got.Data[i] != want.Data[i] {
				t.Fatalf("%+v: value %d = %#x, PackBF16B's %#x", s, i, got.Data[i], want.Data[i])
			}
		}
	}
}

// TestExpSubMulPackBF16 checks ExpSubMulPackBF16's three packs against
// P (ExpSubRows' bits) and dS rounded value by value, on shapes its fused
// kernel takes and shapes it leaves to ExpSubRows, SubMulRows and the
// packers, with masked scores (−Inf), P down to subnormals and zero, and
// ties, subnormals and NaNs among dP's values.
func TestExpSubMulPackBF16(t *testing.T) { checkExpSubMulPack(t) }

func checkExpSubMulPack(t *testing.T) {
	t.Helper()
	ps := bf16Patterns()
	rng := rand.New(rand.NewPCG(7, 7))
	for _, c := range []struct{ rows, cols, ls, ds int }{
		{128, 128, 1, 1}, {2, 64, 1, 1}, {6, 192, 1, 1}, {128, 64, 1, 1}, // fused
		{5, 64, 1, 1}, {4, 48, 1, 1}, {4, 128, 1, 2}, {4, 128, 3, 1}, {3, 17, 1, 1}, // not
	} {
		n := c.rows * c.cols
		s, dp := make([]float32, n), make([]float32, n)
		lse, d := make([]float32, c.rows*c.ls), make([]float32, c.rows*c.ds)
		for i := range lse {
			lse[i] = float32(4 * rng.NormFloat64())
		}
		for i := range s {
			r := i / c.cols
			s[i] = lse[r*c.ls] - float32(rng.ExpFloat64()*3)
			dp[i] = float32(rng.NormFloat64())
			switch i % 7 {
			case 1:
				s[i] = lse[r*c.ls] - float32(80+30*rng.Float64()) // P subnormal or 0
			case 2:
				s[i] = float32(math.Inf(-1)) // masked
			case 3:
				dp[i] = math.Float32frombits(ps[(i/7)%len(ps)])
			}
		}
		for i := range d {
			d[i] = float32(rng.NormFloat64())
		}
		p := slices.Clone(s)
		ExpSubRows(p, c.rows, c.cols, lse, c.ls)
		want := make([]float32, n)
		for r := range c.rows {
			for j := range c.cols {
				want[r*c.cols+j] = p[r*c.cols+j] * (dp[r*c.cols+j] - d[r*c.ds])
			}
		}
		var dsa BF16A
		var dsb, pb BF16B
		ExpSubMulPackBF16(&dsa, &dsb, &pb, slices.Clone(s), slices.Clone(dp), c.rows, c.cols, lse, c.ls, d, c.ds)
		if dsa.M != c.rows || dsa.K != c.cols || dsb.K != c.rows || dsb.N != c.cols || pb.K != c.rows || pb.N != c.cols {
			t.Fatalf("%v: shapes A [%d,%d], B [%d,%d] and [%d,%d]", c, dsa.M, dsa.K, dsb.K, dsb.N, pb.K, pb.N)
		}
		ps := dsb.panelStride()
		for r := range c.rows {
			for j := range c.cols {
				i, at := r*c.cols+j, j/bf16Panel*ps+r/2*2*bf16Panel+2*(j%bf16Panel)+r%2
				if got := dsa.Data[r*dsa.Stride+j]; got != bf16Of(want[i]) {
					t.Fatalf("%v: dS A [%d,%d] = %#04x, want %#04x (%g)", c, r, j, got, bf16Of(want[i]), want[i])
				}
				if got := dsb.Data[at]; got != bf16Of(want[i]) {
					t.Fatalf("%v: dS B [%d,%d] = %#04x, want %#04x", c, r, j, got, bf16Of(want[i]))
				}
				if got := pb.Data[at]; got != bf16Of(p[i]) {
					t.Fatalf("%v: P B [%d,%d] = %#04x, want %#04x (%g)", c, r, j, got, bf16Of(p[i]), p[i])
				}
			}
		}
	}
}

// TestGeluBackPackBF16 checks GeluBackPackBF16 against GeluBackward,
// GeluForward and PackBF16BBlock run one after the other, bit for bit, on
// shapes its fused kernel takes and shapes it leaves to them, with h
// beyond the backward's clamps, at the exponent's bound, infinite, NaN,
// subnormal and zero.
func TestGeluBackPackBF16(t *testing.T) { checkGeluBackPack(t) }

func checkGeluBackPack(t *testing.T) {
	t.Helper()
	rng := rand.New(rand.NewPCG(9, 9))
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-40, -1e-40, -9, -9.5, -10, -11, -30, -1e4, 9, 10, 30, 1e4,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), geluXMin, geluXMax, -3.3, 3.3}
	for _, c := range []struct{ K, k0, k, n int }{
		{96, 32, 32, 1024}, {2, 0, 2, 64}, {8, 2, 4, 192}, // fused
		{7, 4, 3, 64}, {4, 0, 4, 48}, {6, 2, 2, 80}, // not
	} {
		h := make([]BF16, c.k*c.n)
		dg := make([]float32, c.k*c.n)
		for i := range h {
			x := float32(rng.NormFloat64() * 3)
			if i%5 == 0 {
				x = special[(i/5)%len(special)]
			}
			h[i] = bf16Of(x)
			dg[i] = float32(rng.NormFloat64())
		}
		want, got := BF16B{}, BF16B{}
		want.reset(c.K, c.n)
		got.reset(c.K, c.n)
		x := make([]float32, c.k*c.n)
		FromBF16(x, h)
		wdg := slices.Clone(dg)
		GeluBackward(1, wdg, x, wdg)
		GeluForward(1, x, x)
		PackBF16BBlock(&want, c.k0, x, c.n, c.k)
		GeluBackPackBF16(dg, &got, c.k0, h, c.n, c.k, make([]float32, c.k*c.n))
		for i := range dg {
			if math.Float32bits(dg[i]) != math.Float32bits(wdg[i]) {
				t.Fatalf("%v: dg[%d] (h %v) = %v, want %v", c, i, h[i].Float32(), dg[i], wdg[i])
			}
		}
		for i := range got.Data {
			if got.Data[i] != want.Data[i] {
				t.Fatalf("%v: packed GELU value %d = %#04x, want %#04x", c, i, got.Data[i], want.Data[i])
			}
		}
	}
}

// TestOnlineSoftmaxBF16 checks OnlineSoftmaxBF16 against OnlineSoftmax
// followed by PackBF16A, bit for bit (running maxima, sums, factors and
// the packed exps), over two tiles of a row block: rows with no finite
// score, masked scores, exps down to subnormals, and shapes its fused
// kernel takes and shapes it leaves to them.
func TestOnlineSoftmaxBF16(t *testing.T) { checkOnlineSoftmaxBF16(t) }

func checkOnlineSoftmaxBF16(t *testing.T) {
	t.Helper()
	rng := rand.New(rand.NewPCG(11, 11))
	ninf := float32(math.Inf(-1))
	for _, c := range []struct{ rows, cols int }{{128, 128}, {130, 64}, {3, 16}, {5, 48}, {4, 17}} {
		n := c.rows * c.cols
		m, l := make([]float32, c.rows), make([]float32, c.rows)
		for i := range m {
			m[i] = ninf
		}
		wm, wl := slices.Clone(m), slices.Clone(l)
		for tile := range 2 {
			x := make([]float32, n)
			for i := range x {
				r := i / c.cols
				x[i] = float32(rng.NormFloat64() * 4)
				switch {
				case r%9 == 4 && tile == 0, r%9 == 5: // no finite score in this tile
					x[i] = ninf
				case i%7 == 1:
					x[i] = ninf
				case i%11 == 2:
					x[i] -= 95 // exp subnormal
				}
			}
			wx := slices.Clone(x)
			wal, al := make([]float32, c.rows), make([]float32, c.rows)
			OnlineSoftmax(wx, c.rows, c.cols, wm, wl, 1, wal)
			var want, got BF16A
			PackBF16A(1, &want, false, c.rows, c.cols, wx, c.cols)
			OnlineSoftmaxBF16(x, c.rows, c.cols, m, l, 1, al, &got)
			for r := range c.rows {
				if math.Float32bits(m[r]) != math.Float32bits(wm[r]) || math.Float32bits(l[r]) != math.Float32bits(wl[r]) || math.Float32bits(al[r]) != math.Float32bits(wal[r]) {
					t.Fatalf("%v tile %d row %d: m, l, α = %v %v %v, want %v %v %v", c, tile, r, m[r], l[r], al[r], wm[r], wl[r], wal[r])
				}
			}
			if got.M != want.M || got.K != want.K || got.Stride != want.Stride || !slices.Equal(got.Data, want.Data) {
				t.Fatalf("%v tile %d: packed exps differ", c, tile)
			}
		}
	}
}
