package entmax

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// sortSparsemax is the sort-based sparsemax of Martins & Astudillo 2016
// (Algorithm 1): the oracle for the α = 2 path.
func sortSparsemax(z []float64) {
	var s []float64
	for _, v := range z {
		if !math.IsInf(v, -1) {
			s = append(s, v)
		}
	}
	if len(s) == 0 {
		clear(z)
		return
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(s)))
	var cum, tau float64
	for k, v := range s {
		cum += v
		if 1+float64(k+1)*v > cum {
			tau = (cum - 1) / float64(k+1)
		}
	}
	for j, v := range z {
		z[j] = max(v-tau, 0)
	}
}

// sortEntmax15 is the sort-based exact 1.5-entmax of Peters, Niculae,
// Martins 2019 (Algorithm 2 of "Sparse Sequence-to-Sequence Models").
func sortEntmax15(z []float64) {
	var s []float64
	for _, v := range z {
		if !math.IsInf(v, -1) {
			s = append(s, v/2)
		}
	}
	if len(s) == 0 {
		clear(z)
		return
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(s)))
	var cum, cum2, tau float64
	for k, v := range s {
		cum += v
		cum2 += v * v
		rho := float64(k + 1)
		mean := cum / rho
		ss := rho * (cum2/rho - mean*mean)
		delta := max((1-ss)/rho, 0)
		t := mean - math.Sqrt(delta)
		if t <= v {
			tau = t
		}
	}
	for j, v := range z {
		u := max(v/2-tau, 0)
		z[j] = u * u
	}
}

func softmaxRow(z []float64) {
	mx := math.Inf(-1)
	for _, v := range z {
		mx = max(mx, v)
	}
	if math.IsInf(mx, -1) {
		clear(z)
		return
	}
	var s float64
	for j, v := range z {
		z[j] = math.Exp(v - mx)
		s += z[j]
	}
	for j := range z {
		z[j] /= s
	}
}

// randRow returns n scores of scale sc with about a fifth disallowed.
func randRow(rng *rand.Rand, n int, sc float64) []float64 {
	z := make([]float64, n)
	for j := range z {
		z[j] = rng.NormFloat64() * sc
		if j > 0 && rng.IntN(5) == 0 {
			z[j] = math.Inf(-1)
		}
	}
	return z
}

func maxAbsDiff(a, b []float64) float64 {
	var m float64
	for i := range a {
		m = max(m, math.Abs(a[i]-b[i]))
	}
	return m
}

func TestRowExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name   string
		alpha  float64
		mt     Method
		oracle func([]float64)
		tol    float64
	}{
		{"sparsemax", 2, Sparsemax, sortSparsemax, 1e-6},
		{"entmax15", 1.5, Entmax15, sortEntmax15, 1e-6},
		{"bisect2", 2, Bisect, sortSparsemax, 1e-6},
		{"bisect15", 1.5, Bisect, sortEntmax15, 1e-5},
		{"softmax", 1, Softmax, softmaxRow, 1e-12},
	} {
		var worst float64
		for trial := 0; trial < 200; trial++ {
			n := 1 + rng.IntN(300)
			sc := []float64{0.01, 0.3, 1, 5, 50}[trial%5]
			z := randRow(rng, n, sc)
			want := append([]float64(nil), z...)
			tc.oracle(want)
			got := append([]float64(nil), z...)
			_, _, nsup := Row(got, make([]float64, n), tc.alpha, tc.mt)
			worst = max(worst, maxAbsDiff(got, want))
			var s float64
			cnt := 0
			for _, p := range got {
				s += p
				if p > 0 {
					cnt++
				}
			}
			if cnt != nsup {
				t.Fatalf("%s: Row reports support %d, has %d", tc.name, nsup, cnt)
			}
			if math.Abs(s-1) > 1e-9 {
				t.Fatalf("%s: Σp = %v", tc.name, s)
			}
		}
		if worst > tc.tol {
			t.Errorf("%s: max |p − oracle| = %.3g > %.3g", tc.name, worst, tc.tol)
		}
	}
}

// TestRowNearSoftmax: α-entmax → softmax as α → 1, with error O(α−1).
func TestRowNearSoftmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 50; trial++ {
		z := randRow(rng, 1+rng.IntN(200), 1)
		want := append([]float64(nil), z...)
		softmaxRow(want)
		var errs []float64
		for _, a := range []float64{1.01, 1.001} {
			got := append([]float64(nil), z...)
			Row(got, make([]float64, len(z)), a, Bisect)
			errs = append(errs, maxAbsDiff(got, want))
		}
		if errs[1] > 2e-3 || errs[1] > errs[0] {
			t.Fatalf("trial %d: |entmax − softmax| at α=1.01, 1.001: %.3g, %.3g", trial, errs[0], errs[1])
		}
	}
}

func TestRowFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		alpha float64
		mt    Method
	}{{2, Sparsemax}, {1.5, Entmax15}, {1.3, Bisect}, {1, Softmax}} {
		for trial := 0; trial < 50; trial++ {
			z := randRow(rng, 1+rng.IntN(300), 2)
			z32 := make([]float32, len(z))
			for j, v := range z {
				z32[j] = float32(v)
				z[j] = float64(z32[j])
			}
			Row(z, make([]float64, len(z)), tc.alpha, tc.mt)
			Row(z32, make([]float32, len(z)), tc.alpha, tc.mt)
			for j := range z {
				if math.Abs(float64(z32[j])-z[j]) > 2e-6 {
					t.Fatalf("α=%v: float32 p[%d] = %v, float64 %v", tc.alpha, j, z32[j], z[j])
				}
			}
		}
	}
}

// TestRowBackward checks RowBackward against central differences of Row,
// including ∂L/∂α, on rows whose support boundary has a margin.
func TestRowBackward(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		alpha   float64
		mt      Method
		learned bool
	}{{2, Sparsemax, false}, {1.5, Entmax15, false}, {1, Softmax, false}, {1.5, Bisect, true}, {1.2, Bisect, true}, {1.8, Bisect, true}, {2.5, Bisect, true}} {
		for trial := 0; trial < 20; trial++ {
			n := 2 + rng.IntN(40)
			z := randRow(rng, n, 1.5)
			r := make([]float64, n)
			for j := range r {
				r[j] = rng.NormFloat64()
			}
			loss := func(z []float64, a float64) float64 {
				p := append([]float64(nil), z...)
				Row(p, make([]float64, n), a, tc.mt)
				var s float64
				for j := range p {
					s += p[j] * r[j]
				}
				return s
			}
			p := append([]float64(nil), z...)
			tau, _, _ := Row(p, make([]float64, n), tc.alpha, tc.mt)
			if tc.mt == Sparsemax { // keep away from the kink
				ok := true
				for _, v := range z {
					if !math.IsInf(v, -1) && math.Abs(v-tau) < 1e-3 {
						ok = false
					}
				}
				if !ok {
					continue
				}
			}
			dz := append([]float64(nil), r...)
			da := RowBackward(dz, p, tc.alpha, tc.mt, tc.learned)
			const h = 1e-6
			for j := range z {
				if math.IsInf(z[j], -1) {
					if dz[j] != 0 {
						t.Fatalf("α=%v: dz at a disallowed key = %v", tc.alpha, dz[j])
					}
					continue
				}
				zp := append([]float64(nil), z...)
				zp[j] += h
				lp := loss(zp, tc.alpha)
				zp[j] -= 2 * h
				fd := (lp - loss(zp, tc.alpha)) / (2 * h)
				if math.Abs(fd-dz[j]) > 1e-6 {
					t.Fatalf("α=%v method %d: dz[%d] = %.9g, numeric %.9g", tc.alpha, tc.mt, j, dz[j], fd)
				}
			}
			if tc.learned {
				fd := (loss(z, tc.alpha+h) - loss(z, tc.alpha-h)) / (2 * h)
				if math.Abs(fd-da) > 1e-6*max(1, math.Abs(fd)) {
					t.Fatalf("α=%v: ∂L/∂α = %.9g, numeric %.9g", tc.alpha, da, fd)
				}
			}
		}
	}
}

// TestRowBackwardClobber: the dense-mode variants that reuse p as scratch
// give the same gradients as RowBackward.
func TestRowBackwardClobber(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := 0; trial < 50; trial++ {
		n := 1 + rng.IntN(100)
		for _, tc := range []struct {
			alpha float64
			mt    Method
		}{{1.5, Entmax15}, {1.3, Bisect}} {
			p := randRow(rng, n, 1)
			Row(p, make([]float64, n), tc.alpha, tc.mt)
			dp := randVec(rng, n, 1)
			want := append([]float64(nil), dp...)
			wa := RowBackward(want, p, tc.alpha, tc.mt, true)
			got := append([]float64(nil), dp...)
			var ga float64
			if tc.mt == Entmax15 {
				rowBackward15(got, append([]float64(nil), p...))
			} else {
				ga = rowBackwardGeneral(got, append([]float64(nil), p...), tc.alpha, true, true)
				if math.Abs(ga-wa) > 1e-12*max(1, math.Abs(wa)) {
					t.Fatalf("α=%v: ∂L/∂α %v, want %v", tc.alpha, ga, wa)
				}
			}
			if d := maxAbsDiff(got, want); d > 1e-12 {
				t.Fatalf("α=%v: clobbering backward differs by %.3g", tc.alpha, d)
			}
		}
	}
}
