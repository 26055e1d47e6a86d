package fft

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tokenmix/tokenmix/internal/kernels"
)

// naiveDFT is the O(n²) oracle, in float64 with exactly reduced angles.
func naiveDFT(re, im []float64) ([]float64, []float64) {
	n := len(re)
	or, oi := make([]float64, n), make([]float64, n)
	for k := 0; k < n; k++ {
		var sr, si float64
		for j := 0; j < n; j++ {
			c, s := angle(j*k, n)
			sr += re[j]*c - im[j]*s
			si += re[j]*s + im[j]*c
		}
		or[k], oi[k] = sr, si
	}
	return or, oi
}

var lengths = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16, 17, 25, 30, 31, 49, 64, 97, 128, 143, 210, 256, 1000, 1024}

func randVec(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

func maxErr(gr, gi []float64, wr, wi []float64) float64 {
	var num, den float64
	for i := range wr {
		num = math.Max(num, math.Hypot(gr[i]-wr[i], gi[i]-wi[i]))
		den = math.Max(den, math.Hypot(wr[i], wi[i]))
	}
	return num / math.Max(den, 1e-300)
}

func TestTransformMatchesNaive(t *testing.T) {
	for _, n := range lengths {
		rng := rand.New(rand.NewPCG(uint64(n), 3))
		xr, xi := randVec(rng, n), randVec(rng, n)
		wr, wi := naiveDFT(xr, xi)

		p64 := NewPlan[float64](n)
		gr, gi := append([]float64(nil), xr...), append([]float64(nil), xi...)
		p64.Transform(gr, gi, make([]float64, 2*p64.ScratchLen()))
		if e := maxErr(gr, gi, wr, wi); e > 1e-12 {
			t.Errorf("n=%d float64: max rel err %.3g", n, e)
		}

		p32 := NewPlan[float32](n)
		for _, path := range kernels.Paths() {
			old := kernels.SetPath(path)
			fr, fi := to32(xr), to32(xi)
			p32.Transform(fr, fi, make([]float32, 2*p32.ScratchLen()))
			kernels.SetPath(old)
			if e := maxErr(to64(fr), to64(fi), wr, wi); e > 2e-6 {
				t.Errorf("n=%d float32 path %v: max rel err %.3g", n, path, e)
			}
		}
	}
}

// TestTransformBatchMatchesNaive checks w interleaved sequences against the
// naive DFT of each, in float64 and in float32 on every kernels path (the
// AVX-512 butterflies run when a pass's stride is a multiple of 16; 35,
// 98 and 392 have radix-5 and radix-7 passes).
func TestTransformBatchMatchesNaive(t *testing.T) {
	for _, n := range []int{1, 2, 6, 8, 17, 30, 35, 64, 98, 128, 392, 512, 1000} {
		for _, w := range []int{1, 3, 16, 32} {
			if n*n*w > 1<<22 {
				continue // keep the naive oracle fast
			}
			rng := rand.New(rand.NewPCG(uint64(n), uint64(w)))
			xr, xi := randVec(rng, n*w), randVec(rng, n*w)
			checkBatch(t, NewPlan[float64](n), NewPlan[float32](n), xr, xi, w)
		}
	}
}

// TestRealPlanMatchesNaive checks RealPlan.Batch (strided rows, several
// widths, also in place) against the real part of the naive DFT, in float64
// and in float32 on every kernels path, with the radix-4 split of the
// half-length transform at its default threshold and forced wherever it
// applies (n/2 = 32, 128 and 500 = 4·125, whose quarters run radix-5
// passes).
func TestRealPlanMatchesNaive(t *testing.T) {
	for _, forceQuarters := range []bool{false, true} {
		if forceQuarters {
			old := quarterMinNW
			quarterMinNW = 0
			defer func() { quarterMinNW = old }()
		}
		testRealPlanMatchesNaive(t, forceQuarters)
	}
}

func testRealPlanMatchesNaive(t *testing.T, forceQuarters bool) {
	for _, n := range []int{2, 4, 6, 8, 30, 34, 64, 196, 256, 1000} {
		for _, w := range []int{1, 3, 16, 20} {
			if n*n*w > 1<<22 {
				continue
			}
			if q := RealPlanFor[float64](n).half.quarters(w); forceQuarters && (n == 64 || n == 256 || n == 1000) && !q {
				t.Fatalf("n=%d w=%d: radix-4 split not taken", n, w)
			}
			ld := w + 5
			rng := rand.New(rand.NewPCG(uint64(n), uint64(w)))
			zr, zi := randVec(rng, n*ld), randVec(rng, n*ld)
			want := make([]float64, n*w) // [n, w]
			for q := 0; q < w; q++ {
				cr, ci := make([]float64, n), make([]float64, n)
				for j := 0; j < n; j++ {
					cr[j], ci[j] = zr[j*ld+q], zi[j*ld+q]
				}
				cr, _ = naiveDFT(cr, ci)
				for j := 0; j < n; j++ {
					want[j*w+q] = cr[j]
				}
			}
			check := func(name string, even, odd []float64, lde int, tol float64) {
				var e, den float64
				for m := 0; m < n/2; m++ {
					for q := 0; q < w; q++ {
						e = math.Max(e, math.Abs(even[m*lde+q]-want[2*m*w+q]))
						e = math.Max(e, math.Abs(odd[m*lde+q]-want[(2*m+1)*w+q]))
					}
				}
				for _, v := range want {
					den = math.Max(den, math.Abs(v))
				}
				if e > tol*den {
					t.Errorf("n=%d w=%d %s: max rel err %.3g", n, w, name, e/den)
				}
			}
			r64 := RealPlanFor[float64](n)
			zr0 := append([]float64(nil), zr...)
			lde := w + 2
			ev, od := make([]float64, n/2*lde), make([]float64, n/2*lde)
			r64.Batch(ev, od, lde, zr, zi, ld, w, make([]float64, r64.ScratchLen(w)))
			check("float64", ev, od, lde, 1e-12)
			for i := range zr {
				if zr[i] != zr0[i] {
					t.Fatalf("n=%d w=%d: Batch modified its input", n, w)
				}
			}
			// In place, as FNet calls it: rows 2m and 2m+1 of zr.
			zr1 := append([]float64(nil), zr...)
			r64.Batch(zr1, zr1[ld:], 2*ld, zr1, zi, ld, w, make([]float64, r64.ScratchLen(w)))
			check("float64 in place", zr1, zr1[ld:], 2*ld, 1e-12)
			r32 := RealPlanFor[float32](n)
			for _, path := range kernels.Paths() {
				old := kernels.SetPath(path)
				ev, od := make([]float32, n/2*w), make([]float32, n/2*w)
				r32.Batch(ev, od, w, to32(zr), to32(zi), ld, w, make([]float32, r32.ScratchLen(w)))
				kernels.SetPath(old)
				check(fmt.Sprintf("float32 path %v", path), to64(ev), to64(od), w, 3e-6)
			}
		}
	}
}

func TestBluesteinPath(t *testing.T) {
	// Lengths with a prime factor > 13 must take the chirp-z path.
	for _, n := range []int{17, 31, 97, 143 * 17} {
		if NewPlan[float32](n).blue == nil {
			t.Errorf("n=%d: expected Bluestein", n)
		}
	}
	for _, n := range []int{1000, 1024, 12, 30, 143} {
		if NewPlan[float32](n).blue != nil {
			t.Errorf("n=%d: expected mixed radix", n)
		}
	}
}

func TestReal2MatchesNaive(t *testing.T) {
	for _, n := range lengths {
		rng := rand.New(rand.NewPCG(uint64(n), 5))
		x1, x2 := randVec(rng, n), randVec(rng, n)
		w1r, w1i := naiveDFT(x1, make([]float64, n))
		w2r, w2i := naiveDFT(x2, make([]float64, n))
		h := n/2 + 1
		p := NewPlan[float64](n)
		r1, i1, r2, i2 := make([]float64, h), make([]float64, h), make([]float64, h), make([]float64, h)
		p.Real2(r1, i1, r2, i2, x1, x2, make([]float64, p.Real2ScratchLen()))
		if e := maxErr(r1, i1, w1r[:h], w1i[:h]); e > 1e-12 {
			t.Errorf("n=%d X1: rel err %.3g", n, e)
		}
		if e := maxErr(r2, i2, w2r[:h], w2i[:h]); e > 1e-12 {
			t.Errorf("n=%d X2: rel err %.3g", n, e)
		}
	}
}

func TestPlanForCaches(t *testing.T) {
	if PlanFor[float32](60) != PlanFor[float32](60) {
		t.Error("PlanFor[float32](60) not cached")
	}
	if any(PlanFor[float64](60)) == any(PlanFor[float32](60)) {
		t.Error("float32 and float64 plans share a cache entry")
	}
}

func TestInputsNotAliasedByScratch(t *testing.T) {
	// Transform must leave scratch-independent results: two scratch
	// buffers with different garbage give the same output.
	for _, n := range []int{17, 60, 64} {
		p := NewPlan[float64](n)
		rng := rand.New(rand.NewPCG(1, 1))
		xr, xi := randVec(rng, n), randVec(rng, n)
		var outs [2][]float64
		for i := range outs {
			s := make([]float64, 2*p.ScratchLen())
			for j := range s {
				s[j] = float64(i*7 + j)
			}
			r, im := append([]float64(nil), xr...), append([]float64(nil), xi...)
			p.Transform(r, im, s)
			outs[i] = append(r, im...)
		}
		for j := range outs[0] {
			if outs[0][j] != outs[1][j] {
				t.Fatalf("n=%d: result depends on scratch contents", n)
			}
		}
	}
}

func to32(v []float64) []float32 {
	o := make([]float32, len(v))
	for i, x := range v {
		o[i] = float32(x)
	}
	return o
}

func to64(v []float32) []float64 {
	o := make([]float64, len(v))
	for i, x := range v {
		o[i] = float64(x)
	}
	return o
}

func BenchmarkTransform(b *testing.B) {
	for _, n := range []int{256, 1024, 4096, 16384, 1000, 4099} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			p := NewPlan[float32](n)
			re, im := make([]float32, n), make([]float32, n)
			s := make([]float32, 2*p.ScratchLen())
			for i := 0; i < b.N; i++ {
				p.Transform(re, im, s)
			}
		})
	}
}

// checkBatch compares TransformBatch of the w interleaved sequences (xr, xi)
// with the naive DFT: to 1e-12 with p64, and to 2e-6 with p32 on every
// kernels path.
func checkBatch(t *testing.T, p64 *Plan[float64], p32 *Plan[float32], xr, xi []float64, w int) {
	t.Helper()
	n := p64.Len()
	wr, wi := naiveBatch(xr, xi, n, w)
	gr, gi := append([]float64(nil), xr...), append([]float64(nil), xi...)
	p64.TransformBatch(gr, gi, w, make([]float64, 2*p64.BatchScratchLen(w)))
	if e := maxErr(gr, gi, wr, wi); e > 1e-12 {
		t.Errorf("n=%d w=%d float64: max rel err %.3g", n, w, e)
	}
	for _, path := range kernels.Paths() {
		old := kernels.SetPath(path)
		fr, fi := to32(xr), to32(xi)
		p32.TransformBatch(fr, fi, w, make([]float32, 2*p32.BatchScratchLen(w)))
		kernels.SetPath(old)
		if e := maxErr(to64(fr), to64(fi), wr, wi); e > 2e-6 {
			t.Errorf("n=%d w=%d float32 path %v: max rel err %.3g", n, w, path, e)
		}
	}
}

// TestBatchPackedMatchesBatch packs z with PackHalf and PackTwiddles (as a
// caller that computes z on the fly does) and checks that BatchPacked gives
// what Batch gives from z itself, in float64 and in float32 on every
// kernels path, with the radix-4 split at its threshold and forced.
func TestBatchPackedMatchesBatch(t *testing.T) {
	for _, forceQuarters := range []bool{false, true} {
		if forceQuarters {
			old := quarterMinNW
			quarterMinNW = 0
			defer func() { quarterMinNW = old }()
		}
		for _, n := range []int{2, 6, 64, 1000} {
			for _, w := range []int{1, 16} {
				rng := rand.New(rand.NewPCG(uint64(n), uint64(w)+300))
				zr, zi := randVec(rng, n*w), randVec(rng, n*w)
				M, lde := n/2, w+3
				want, wantOdd := make([]float64, M*lde), make([]float64, M*lde)
				r64 := RealPlanFor[float64](n)
				r64.Batch(want, wantOdd, lde, zr, zi, w, w, make([]float64, r64.ScratchLen(w)))
				packed := func(zr, zi []float64) ([]float64, []float64) {
					c, s := r64.PackTwiddles()
					pr, pi := make([]float64, M*w), make([]float64, M*w)
					row := func(x []float64, k int) []float64 { return x[k*w : (k+1)*w] }
					for k := 0; k < M; k++ {
						k1, k3 := (n-k)%n, M-k
						PackHalf(row(pr, k), row(pi, k), row(zr, k), row(zi, k), row(zr, k1), row(zi, k1),
							row(zr, k+M), row(zi, k+M), row(zr, k3), row(zi, k3), c[k], s[k])
					}
					return pr, pi
				}
				check := func(name string, ev, od []float64, tol float64) {
					var e, den float64
					for i := range want {
						if i%lde >= w {
							continue
						}
						e = math.Max(e, math.Max(math.Abs(ev[i]-want[i]), math.Abs(od[i]-wantOdd[i])))
						den = math.Max(den, math.Abs(want[i]))
					}
					if e > tol*den {
						t.Errorf("n=%d w=%d quarters=%v %s: max rel err %.3g", n, w, forceQuarters, name, e/den)
					}
				}
				pr, pi := packed(zr, zi)
				pr32, pi32 := to32(pr), to32(pi) // BatchPacked overwrites its input
				ev, od := make([]float64, M*lde), make([]float64, M*lde)
				r64.BatchPacked(ev, od, lde, pr, pi, w, make([]float64, r64.PackedScratchLen(w)))
				check("float64", ev, od, 1e-12)
				r32 := RealPlanFor[float32](n)
				for _, path := range kernels.Paths() {
					old := kernels.SetPath(path)
					ev, od := make([]float32, M*lde), make([]float32, M*lde)
					r32.BatchPacked(ev, od, lde, append([]float32(nil), pr32...), append([]float32(nil), pi32...), w, make([]float32, r32.PackedScratchLen(w)))
					kernels.SetPath(old)
					check(fmt.Sprintf("float32 path %v", path), to64(ev), to64(od), 3e-6)
				}
			}
		}
	}
}
