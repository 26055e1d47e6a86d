package fft

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tokenmix/tokenmix/internal/bench/stat"
	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/parallel"
)

// setFourStepMin sets fourStepMinNW for the rest of the test: 0 forces the
// four-step path on every composite mixed-radix length, math.MaxInt turns
// it off.
func setFourStepMin(t testing.TB, v int) {
	old := fourStepMinNW
	fourStepMinNW = v
	t.Cleanup(func() { fourStepMinNW = old })
}

// naiveBatch is naiveDFT of each of the w interleaved sequences in (xr, xi).
func naiveBatch(xr, xi []float64, n, w int) ([]float64, []float64) {
	wr, wi := make([]float64, n*w), make([]float64, n*w)
	for q := 0; q < w; q++ {
		cr, ci := make([]float64, n), make([]float64, n)
		for j := 0; j < n; j++ {
			cr[j], ci[j] = xr[j*w+q], xi[j*w+q]
		}
		cr, ci = naiveDFT(cr, ci)
		for j := 0; j < n; j++ {
			wr[j*w+q], wi[j*w+q] = cr[j], ci[j]
		}
	}
	return wr, wi
}

// TestFourStepMatchesNaive forces the four-step path on lengths that split
// evenly (64 = 8·8, 1024 = 32·32), unevenly (210 = 14·15, 1000 = 25·40,
// 143 = 11·13, 6 = 2·3) and whose slabs leave a partial last slab (n2 = 25
// with 4 or 21 columns per slab), and checks that prime and Bluestein
// lengths (no split) still take the plain path, against the naive DFT in
// float64 and float32 on every kernels path.
func TestFourStepMatchesNaive(t *testing.T) {
	setFourStepMin(t, 0)
	for _, tc := range []struct {
		n     int
		split bool
	}{
		{4, true}, {6, true}, {12, true}, {49, true}, {64, true}, {143, true},
		{210, true}, {1000, true}, {1024, true}, {17, false}, {97, false}, {34, false},
	} {
		for _, w := range []int{1, 3, 16, 32} {
			n := tc.n
			if n*n*w > 1<<22 {
				continue // keep the naive oracle fast
			}
			p64, p32 := NewPlan[float64](n), NewPlan[float32](n)
			if got := p64.splitFor(w) != nil; got != tc.split {
				t.Fatalf("n=%d w=%d: fourStep = %v, want %v", n, w, got, tc.split)
			}
			rng := rand.New(rand.NewPCG(uint64(n), uint64(w)+100))
			xr, xi := randVec(rng, n*w), randVec(rng, n*w)
			checkBatch(t, p64, p32, xr, xi, w)
		}
	}
}

// TestFourStepRealPlan forces the four-step path inside RealPlan.Batch
// (half lengths 30 = 5·6, 128 = 8·16, 500 = 20·25) and compares with the
// real part of the naive DFT.
func TestFourStepRealPlan(t *testing.T) {
	setFourStepMin(t, 0)
	for _, n := range []int{60, 256, 1000} {
		for _, w := range []int{1, 3, 16} {
			ld := w + 7
			rng := rand.New(rand.NewPCG(uint64(n), uint64(w)+200))
			zr, zi := randVec(rng, n*ld), randVec(rng, n*ld)
			cr, ci := make([]float64, n*w), make([]float64, n*w)
			for j := 0; j < n; j++ {
				copy(cr[j*w:(j+1)*w], zr[j*ld:])
				copy(ci[j*w:(j+1)*w], zi[j*ld:])
			}
			want, _ := naiveBatch(cr, ci, n, w)
			var den float64
			for _, v := range want {
				den = math.Max(den, math.Abs(v))
			}
			check := func(name string, even, odd []float64, lde int, tol float64) {
				var e float64
				for m := 0; m < n/2; m++ {
					for q := 0; q < w; q++ {
						e = math.Max(e, math.Abs(even[m*lde+q]-want[2*m*w+q]))
						e = math.Max(e, math.Abs(odd[m*lde+q]-want[(2*m+1)*w+q]))
					}
				}
				if e > tol*den {
					t.Errorf("n=%d w=%d %s: max rel err %.3g", n, w, name, e/den)
				}
			}
			r64 := RealPlanFor[float64](n)
			if r64.half.splitFor(w) == nil {
				t.Fatalf("n=%d w=%d: four-step not taken", n, w)
			}
			zr0 := append([]float64(nil), zr...)
			lde := w + 1
			ev, od := make([]float64, n/2*lde), make([]float64, n/2*lde)
			r64.Batch(ev, od, lde, zr, zi, ld, w, make([]float64, r64.ScratchLen(w)))
			check("float64", ev, od, lde, 1e-12)
			for i := range zr {
				if zr[i] != zr0[i] {
					t.Fatalf("n=%d w=%d: Batch modified its input", n, w)
				}
			}
			r32 := RealPlanFor[float32](n)
			for _, path := range kernels.Paths() {
				old := kernels.SetPath(path)
				// In place, as FNet calls it: rows 2m and 2m+1 of zr.
				z32 := to32(zr)
				r32.Batch(z32, z32[ld:], 2*ld, z32, to32(zi), ld, w, make([]float32, r32.ScratchLen(w)))
				kernels.SetPath(old)
				check(fmt.Sprintf("float32 in place path %v", path), to64(z32), to64(z32[ld:]), 2*ld, 3e-6)
			}
		}
	}
}

// TestFourStepLong checks the four-step path at FNet's long lengths
// (n=8192 = 128·64 and 16384 = 256·64 with w=16, 6000 = 75·80, 4096 with
// w=20) against the plain Stockham run of the same plan, in float64 and in
// float32 on every kernels path.
func TestFourStepLong(t *testing.T) {
	if testing.Short() {
		t.Skip("long lengths")
	}
	for _, tc := range []struct{ n, w int }{{8192, 16}, {16384, 16}, {6000, 16}, {4096, 20}} {
		n, w := tc.n, tc.w
		p64, p32 := NewPlan[float64](n), NewPlan[float32](n)
		if p64.splitPlan() == nil {
			t.Fatalf("n=%d: no four-step split", n)
		}
		rng := rand.New(rand.NewPCG(uint64(n), uint64(w)))
		xr, xi := randVec(rng, n*w), randVec(rng, n*w)
		run := func(min int, path kernels.Path, f32 bool) ([]float64, []float64) {
			old, oldPath := fourStepMinNW, kernels.SetPath(path)
			fourStepMinNW = min
			defer func() { fourStepMinNW = old; kernels.SetPath(oldPath) }()
			if f32 {
				fr, fi := to32(xr), to32(xi)
				p32.TransformBatch(fr, fi, w, make([]float32, 2*p32.BatchScratchLen(w)))
				return to64(fr), to64(fi)
			}
			gr, gi := append([]float64(nil), xr...), append([]float64(nil), xi...)
			p64.TransformBatch(gr, gi, w, make([]float64, 2*p64.BatchScratchLen(w)))
			return gr, gi
		}
		wr, wi := run(math.MaxInt, kernels.CurrentPath(), false)
		gr, gi := run(0, kernels.CurrentPath(), false)
		if e := maxErr(gr, gi, wr, wi); e > 1e-13 {
			t.Errorf("n=%d w=%d float64: four-step vs plain rel err %.3g", n, w, e)
		}
		for _, path := range kernels.Paths() {
			fr, fi := run(0, path, true)
			if e := maxErr(fr, fi, wr, wi); e > 3e-6 {
				t.Errorf("n=%d w=%d float32 path %v: rel err %.3g", n, w, path, e)
			}
		}
	}
}

// BenchmarkBatch compares the plain Stockham run and the four-step path of
// TransformBatch at w=16 (FNet's column block), alternating them iteration
// by iteration so that both see the same load on a shared machine, and
// reports the median CPU time of each and their ratio.
func BenchmarkBatch(b *testing.B) {
	for _, n := range []int{2048, 4096, 8192, 16384, 65536} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			setFourStepMin(b, fourStepMinNW)
			const w = 16
			p := PlanFor[float32](n)
			re, im := make([]float32, n*w), make([]float32, n*w)
			for i := range re {
				re[i], im[i] = float32(i%7)-3, float32(i%5)-2
			}
			fourStepMinNW = 0
			s := make([]float32, 2*p.BatchScratchLen(w))
			var ts [2][]float64
			for i := 0; i < b.N; i++ {
				for v, min := range []int{math.MaxInt, 0} {
					fourStepMinNW = min
					t0 := stat.ProcessCPU()
					p.TransformBatch(re, im, w, s)
					ts[v] = append(ts[v], float64(stat.ProcessCPU()-t0)/1e3)
				}
			}
			for v, name := range []string{"plain", "four"} {
				b.ReportMetric(stat.Median(ts[v]), name+"-us")
			}
			b.ReportMetric(stat.Median(ts[1])/stat.Median(ts[0]), "four/plain")
		})
	}
}

// BenchmarkRealBatchAB alternates variants of FNet's time pass at d=256
// (as benchReal: plain and four-step path, column blocks of 16)
// iteration by iteration, so that all see the same load on a shared
// machine, and reports the median CPU time of each and its ratio to
// plain/16.
func BenchmarkRealBatchAB(b *testing.B) {
	type variant struct {
		four bool
		w    int
	}
	vs := []variant{{false, 16}, {true, 16}}
	for _, T := range []int{4096, 8192, 16384} {
		b.Run(fmt.Sprintf("T=%d", T), func(b *testing.B) {
			setFourStepMin(b, fourStepMinNW)
			r := RealPlanFor[float32](T)
			const nk, ld = 129, 144
			zr, zi := make([]float32, T*ld), make([]float32, T*ld)
			for i := range zr {
				zr[i], zi[i] = float32(i%7)-3, float32(i%5)-2
			}
			ws := 0
			for _, v := range vs {
				fourStepMinNW = map[bool]int{false: math.MaxInt, true: 0}[v.four]
				ws = max(ws, r.ScratchLen(v.w))
			}
			work := make([]float32, parallel.Threads()*ws)
			ts := make([][]float64, len(vs))
			for i := 0; i < b.N; i++ {
				for vi, v := range vs {
					fourStepMinNW = map[bool]int{false: math.MaxInt, true: 0}[v.four]
					w := v.w
					ncb := (nk + w - 1) / w
					t0 := stat.ProcessCPU()
					parallel.For(parallel.Threads(), ncb, 1, func(t, lo, hi int) {
						for c := lo; c < hi; c++ {
							k0 := c * w
							r.Batch(zr[k0:], zr[ld+k0:], 2*ld, zr[k0:], zi[k0:], ld, min(k0+w, nk)-k0, work[t*ws:(t+1)*ws])
						}
					})
					ts[vi] = append(ts[vi], float64(stat.ProcessCPU()-t0)/1e3)
				}
			}
			for vi, v := range vs {
				name := fmt.Sprintf("plain%d", v.w)
				if v.four {
					name = fmt.Sprintf("four%d", v.w)
				}
				b.ReportMetric(stat.Median(ts[vi]), name+"-us")
				if vi > 0 {
					b.ReportMetric(stat.Median(ts[vi])/stat.Median(ts[0]), name+"/plain16")
				}
			}
		})
	}
}

// benchReal times FNet's time pass at d=256 on a half spectrum Z [T, 144]
// (129 kept columns in blocks of 16, split over the parallel.For threads,
// each block written back into its own columns, as mixer/fnet does) with
// the four-step path on or off.
func benchReal(b *testing.B, T int, four bool) {
	if four {
		setFourStepMin(b, 0)
	} else {
		setFourStepMin(b, math.MaxInt)
	}
	const nk, ld, w = 129, 144, 16
	r := RealPlanFor[float32](T)
	zr, zi := make([]float32, T*ld), make([]float32, T*ld)
	for i := range zr {
		zr[i], zi[i] = float32(i%7)-3, float32(i%5)-2
	}
	ws := r.ScratchLen(w)
	work := make([]float32, parallel.Threads()*ws)
	ncb := (nk + w - 1) / w
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		parallel.For(parallel.Threads(), ncb, 1, func(t, lo, hi int) {
			for c := lo; c < hi; c++ {
				k0 := c * w
				k1 := min(k0+w, nk)
				r.Batch(zr[k0:], zr[ld+k0:], 2*ld, zr[k0:], zi[k0:], ld, k1-k0, work[t*ws:(t+1)*ws])
			}
		})
	}
}

// BenchmarkRealBatch compares the plain and four-step paths inside
// FNet's time pass (d=256, B=1).
func BenchmarkRealBatch(b *testing.B) {
	for _, T := range []int{4096, 8192, 16384} {
		for _, four := range []bool{false, true} {
			name := "plain"
			if four {
				name = "fourstep"
			}
			b.Run(fmt.Sprintf("T=%d/%s", T, name), func(b *testing.B) { benchReal(b, T, four) })
		}
	}
}
