//go:build !purego

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// TestDPBF16Encoding: each encoding of VDPBF16PS that the generator emits
// (registers from every bank in each operand) computes
// acc + a[2i]·b[2i] + a[2i+1]·b[2i+1] per lane.
func TestDPBF16Encoding(t *testing.T) {
	if !cpu.X86.HasAVX512BF16 || Best != PathAVX512 {
		t.Skip("no AVX512-BF16 on this CPU")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var acc, a, b, want [3][16]float32
	pair := func() (float32, BF16, BF16) {
		x, y := bf16Of(float32(rng.NormFloat64())), bf16Of(float32(rng.NormFloat64()))
		return math.Float32frombits(uint32(y)<<16 | uint32(x)), x, y
	}
	for i := range 3 {
		for l := range 16 {
			acc[i][l] = float32(rng.NormFloat64())
			var a0, a1, b0, b1 BF16
			a[i][l], a0, a1 = pair()
			b[i][l], b0, b1 = pair()
			want[i][l] = float32(float64(acc[i][l]) + float64(a0.Float32())*float64(b0.Float32()) + float64(a1.Float32())*float64(b1.Float32()))
		}
	}
	dpbf16Check(&acc, &a, &b)
	for i := range 3 {
		for l := range 16 {
			if d := math.Abs(float64(acc[i][l] - want[i][l])); d > 1e-6*(1+math.Abs(float64(want[i][l]))) {
				t.Errorf("registers %v, lane %d: %v, want %v", dpCheckRegs[i], l, acc[i][l], want[i][l])
			}
		}
	}
}

// TestPairT16: the transposed-A tile kernel puts source row 2p, 2p+1 and
// column i at output row i, pair p, rounded as ToBF16 does.
func TestPairT16(t *testing.T) {
	if path != PathAVX512 {
		t.Skip("no AVX-512")
	}
	const lda, st = 21, 40
	src := make([]float32, 32*lda)
	for i := range src {
		src[i] = float32(i%997) * 1.0009765625 // not all exact in bf16: rounding shows
	}
	dst := make([]BF16, 16*st)
	pairT16AVX512(&dst[0], st, &src[0], lda)
	for i := range 16 {
		for q := range 32 {
			if got, want := dst[i*st+q], bf16Of(src[q*lda+i]); got != want {
				t.Fatalf("row %d element %d: %#04x, want %#04x", i, q, got, want)
			}
		}
	}
}

// TestPairTB16: the transposed-B tile kernel puts pair p (values 2p, 2p+1)
// of source row c at tile row p, column c (rows 64 pairs apart), rounded
// as ToBF16 does.
func TestPairTB16(t *testing.T) {
	if path != PathAVX512 {
		t.Skip("no AVX-512")
	}
	const ldb = 37
	src := make([]float32, 16*ldb)
	for i := range src {
		src[i] = float32(i%991) * 1.0009765625
	}
	dst := make([]BF16, 16*2*bf16Panel)
	pairTB16AVX512(&dst[0], &src[0], ldb)
	for p := range 16 {
		for c := range 16 {
			for h := range 2 {
				if got, want := dst[p*2*bf16Panel+2*c+h], bf16Of(src[c*ldb+2*p+h]); got != want {
					t.Fatalf("pair %d column %d half %d: %#04x, want %#04x", p, c, h, got, want)
				}
			}
		}
	}
}

// TestGemmBF16Wide: the avx512fma and avx2fma paths' product is bit for
// bit the float32 GEMM's of the same bf16 values on that float32 path (the
// same kernels, K split into the same blocks: 1000 splits in two), for
// every alpha and beta, K odd and even, rows in whole tiles of 6 and a
// rest, partial panels, and a view of A's columns and B's rows; on 1 and
// 3 threads.
func TestGemmBF16Wide(t *testing.T) {
	for _, pp := range []struct {
		bf16 string
		f32  Path
	}{{"avx2fma", PathAVX2}, {"avx512fma", PathAVX512}} {
		if !slices.Contains(BF16Paths(), pp.bf16) {
			continue
		}
		t.Run(pp.bf16, func(t *testing.T) { testGemmBF16Wide(t, pp.bf16, pp.f32) })
	}
}

func testGemmBF16Wide(t *testing.T, bf16Path string, f32 Path) {
	old, err := SetBF16Path(bf16Path)
	if err != nil {
		t.Fatal(err)
	}
	defer SetBF16Path(old)
	defer SetPath(SetPath(f32))
	rng := rand.New(rand.NewPCG(11, 12))
	round := func(x []float32) []float32 {
		r := make([]float32, len(x))
		for i, v := range x {
			r[i] = bf16Of(v).Float32()
		}
		return r
	}
	for _, tc := range []gemmCase{{17, 64, 2, 0}, {40, 130, 33, 3}, {300, 70, 256, 0}, {23, 200, 640, 1}, {6, 16, 100, 0}, {20, 150, 1000, 0}} {
		for _, sc := range gemmScalars {
			for _, threads := range []int{1, 3} {
				a, lda, b, ldb, c, ldc := gemmOperands(rng, tc, false, false, sc.beta == 0)
				name := fmt.Sprintf("%v alpha %v beta %v, %d threads", tc, sc.alpha, sc.beta, threads)
				want := slices.Clone(c)
				Gemm(1, PrecFP32, false, false, tc.m, tc.n, tc.k, sc.alpha, round(a), lda, round(b), ldb, sc.beta, want, ldc)
				var pa BF16A
				var pb BF16B
				PackBF16A(threads, &pa, false, tc.m, tc.k, a, lda)
				PackBF16B(threads, &pb, false, tc.k, tc.n, b, ldb)
				got := slices.Clone(c)
				GemmBF16(threads, sc.alpha, PackedA(&pa), PackedB(&pb), sc.beta, got, ldc)
				if i := firstDiff(got, want); i >= 0 {
					t.Fatalf("%s: C[%d] = %v, the float32 GEMM's %v", name, i, got[i], want[i])
				}
				// Columns 4…k of A against rows 4…k of B.
				if tc.k < 6 {
					continue
				}
				av, bv := pa.Cols(4, tc.k-4), pb.View(4, tc.k-4, 0, tc.n)
				Gemm(1, PrecFP32, false, false, tc.m, tc.n, tc.k-4, sc.alpha, round(a[4:]), lda, round(b[4*ldb:]), ldb, sc.beta, want, ldc)
				GemmBF16(threads, sc.alpha, PackedA(&av), PackedB(&bv), sc.beta, got, ldc)
				if i := firstDiff(got, want); i >= 0 {
					t.Fatalf("%s, view: C[%d] = %v, the float32 GEMM's %v", name, i, got[i], want[i])
				}
			}
		}
	}
}

// firstDiff returns the first index where x and y differ bitwise, or -1.
func firstDiff(x, y []float32) int {
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
			return i
		}
	}
	return -1
}

// TestAMXRowsFMA: amxRowsFMA gives amxBF16's bits for every row of a
// block: operands of ordinary size, operands whose products fall below
// float32's normal range, operands whose sums cancel below it (both
// flushed on the tiles), and bf16 subnormals of A against large values of
// B (read as zero on the tiles); every alpha and beta, a partial last
// panel, and K in one and in several steps.
func TestAMXRowsFMA(t *testing.T) {
	if !slices.Contains(BF16Paths(), "amx") {
		t.Skip("no AMX")
	}
	old, _ := SetBF16Path("amx")
	defer SetBF16Path(old)
	rng := rand.New(rand.NewPCG(9, 10))
	for _, scale := range [][2]float64{{1, 1}, {1e-20, 1e-20}, {1.5e-19, 1.5e-19}, {1e-39, 1e6}} {
		for _, tc := range []gemmCase{{32, 64, 32, 0}, {32, 100, 256, 0}, {64, 70, 96, 0}} {
			for _, sc := range gemmScalars {
				a, lda, b, ldb, c, ldc := gemmOperands(rng, tc, false, false, sc.beta == 0)
				for i := range a {
					a[i] *= float32(scale[0])
				}
				for i := range b {
					b[i] *= float32(scale[1])
				}
				var pa BF16A
				var pb BF16B
				PackBF16A(1, &pa, false, tc.m, tc.k, a, lda)
				PackBF16B(1, &pb, false, tc.k, tc.n, b, ldb)
				want := slices.Clone(c)
				GemmBF16(1, sc.alpha, PackedA(&pa), PackedB(&pb), sc.beta, want, ldc)
				got := slices.Clone(c)
				steps, ps := pb.pairs/16, pb.panelStride()
				for pn := 0; pn*bf16Panel < tc.n; pn++ {
					j0 := pn * bf16Panel
					for i := range tc.m {
						amxRowsFMA(steps, &pa.Data[i*pa.Stride], 2*pa.Stride, &pb.Data[pn*ps], &got[i*ldc+j0], ldc, sc.alpha, sc.beta, panelMask(tc.n-j0), 1)
					}
				}
				for i := range tc.m {
					for j := range tc.n {
						if g, w := got[i*ldc+j], want[i*ldc+j]; math.Float32bits(g) != math.Float32bits(w) {
							t.Fatalf("scales %g, %v alpha %v beta %v: C[%d,%d] = %g, amxBF16 %g", scale, tc, sc.alpha, sc.beta, i, j, g, w)
						}
					}
				}
				if !slices.Equal(got[tc.m*ldc:], c[tc.m*ldc:]) {
					t.Fatalf("scales %g, %v: wrote past C's rows", scale, tc)
				}
			}
		}
	}
}

// TestKeepBF16NT: StoreBF16.KeepST on more than keepNTMin values gives
// every value's bf16 and its rounded float32 whether dst is 32-byte
// aligned (non-temporal stores) or not.
func TestKeepBF16NT(t *testing.T) {
	ps := bf16Patterns()
	n := keepNTMin + 1000
	src := make([]float32, n)
	for i := range src {
		src[i] = math.Float32frombits(ps[i%len(ps)])
	}
	buf := make([]uint16, n+16)
	for _, off := range []int{0, 1, 16} {
		if off == 0 && uintptr(unsafe.Pointer(&buf[0]))%32 != 0 {
			t.Fatal("a large allocation is not 32-byte aligned")
		}
		dst, x := buf[off:off+n], slices.Clone(src)
		StoreBF16.KeepST(dst, x)
		for i, v := range src {
			if want := bf16Of(v); BF16(dst[i]) != want || math.Float32bits(x[i]) != uint32(want)<<16 {
				t.Fatalf("offset %d: %#08x kept as %#04x and %#08x, want %#04x", off, math.Float32bits(v), dst[i], math.Float32bits(x[i]), want)
			}
		}
	}
}

// TestBF16ConvBodies: both bodies of every rounding kernel (integer
// arithmetic, and where the CPU has AVX512-BF16, VCVTNEPS2BF16 and
// VCVTNE2PS2BF16 with the side path for subnormals) give the Go twin's
// bits for every class of float32 (bf16Patterns: vectors with subnormals
// and vectors without), in each kernel's layout.
func TestBF16ConvBodies(t *testing.T) {
	if path != PathAVX512 {
		t.Skip("no AVX-512")
	}
	bodies := []bool{false}
	if hasBF16Dot {
		bodies = append(bodies, true)
	}
	defer func(old bool) { bf16Cvt = old }(bf16Cvt)
	ps := bf16Patterns()
	n := len(ps) &^ 511 // whole tiles of 512 values
	src := make([]float32, n)
	for i, p := range ps[:n] {
		src[i] = math.Float32frombits(p)
	}
	for _, cvt := range bodies {
		bf16Cvt = cvt
		check := func(kernel string, got BF16, i int) {
			t.Helper()
			if want := bf16Of(src[i]); got != want {
				t.Fatalf("bf16Cvt %v, %s: %#08x gives %#04x, want %#04x", cvt, kernel, ps[i], got, want)
			}
		}
		out := make([]BF16, 2*n)
		toBF16AVX512(&out[0], &src[0], n)
		for i := range n {
			check("toBF16AVX512", out[i], i)
		}
		for _, k := range []struct {
			name string
			f    func(dst *BF16, x *float32, n int)
		}{{"keepBF16AVX512", keepBF16AVX512}, {"keepBF16NTAVX512", keepBF16NTAVX512}} {
			if uintptr(unsafe.Pointer(&out[0]))%32 != 0 {
				t.Fatal("a large allocation is not 32-byte aligned")
			}
			x := slices.Clone(src)
			k.f(&out[0], &x[0], n)
			for i := range n {
				check(k.name, out[i], i)
				if math.Float32bits(x[i]) != uint32(out[i])<<16 {
					t.Fatalf("bf16Cvt %v, %s: %#08x kept as %#08x, converted to %#04x", cvt, k.name, ps[i], math.Float32bits(x[i]), out[i])
				}
			}
		}
		const w, dld = 48, 50 // rows of 48 values, written 50 apart
		toBF16RowsAVX512(&out[0], dld, &src[0], w, n/w, w/16)
		for i := range n / w * w {
			check("toBF16RowsAVX512", out[i/w*dld+i%w], i)
		}
		const ldb = 64 // pairs of rows of 64 columns, a pair 128 values apart
		pairPanelAVX512(&out[0], &src[0], ldb, n/(2*ldb), ldb/16)
		for i := range n {
			r, j := i/ldb, i%ldb
			check("pairPanelAVX512", out[r/2*128+2*j+r%2], i)
		}
		for t0 := 0; t0 < n; t0 += 512 {
			const st = 40                            // 32 rows of 16 columns: 16 rows of 32 values
			pairT16AVX512(&out[0], st, &src[t0], 16) // row q, column i → output row i, value q
			for i := range 512 {
				q, c := i/16, i%16
				check("pairT16AVX512", out[c*st+q], t0+i)
			}
			pairTB16AVX512(&out[0], &src[t0], 32) // row c, value 2p+h → tile row p, pair c, half h
			for i := range 512 {
				c, v := i/32, i%32
				check("pairTB16AVX512", out[v/2*2*bf16Panel+2*c+v%2], t0+i)
			}
		}
	}
}

// TestFusedBodies runs the fused kernels' tests (TestExpSubMulPackBF16,
// TestOnlineSoftmaxBF16, TestGeluBackPackBF16) on both rounding bodies.
func TestFusedBodies(t *testing.T) {
	if !hasBF16Dot {
		t.Skip("no AVX512-BF16: one body, run by the kernels' own tests")
	}
	defer func(old bool) { bf16Cvt = old }(bf16Cvt)
	for _, c := range []struct {
		name  string
		check func(*testing.T)
	}{{"ExpSubMulPack", checkExpSubMulPack}, {"OnlineSoftmax", checkOnlineSoftmaxBF16}, {"GeluBackPack", checkGeluBackPack}} {
		for _, cvt := range []bool{false, true} {
			bf16Cvt = cvt
			t.Run(fmt.Sprintf("%s/cvt=%v", c.name, cvt), c.check)
		}
	}
}
