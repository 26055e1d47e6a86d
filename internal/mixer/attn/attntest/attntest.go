// Package attntest compares a fast attention mixer with its naive
// materialised twin on the same parameters and inputs (forward and backward).
package attntest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tokenmix/tokenmix/mixer"
)

// Twins checks that fast and naive (two mixers with the same parameter
// specs) agree on x [B,T,D] with padding pad (nil or [B·T]): the outputs, dx
// and every parameter gradient, to max|a−b| / max(1e-30, max|b|) ≤ tol per
// tensor. The random inputs are fixed by seed.
func Twins(t *testing.T, fast, naive mixer.Mixer[float64], B, T, D int, pad []bool, tol float64, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	specs := fast.Params()
	var w, gf, gn [][]float64
	for _, s := range specs {
		v := make([]float64, s.Size())
		for i := range v {
			v[i] = rng.NormFloat64() * 0.4
		}
		w = append(w, v)
		gf = append(gf, make([]float64, s.Size()))
		gn = append(gn, make([]float64, s.Size()))
	}
	fast.Bind(w, gf)
	naive.Bind(w, gn)
	n := B * T * D
	x := make([]float64, n)
	dout := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64()
		dout[i] = rng.NormFloat64()
	}
	p := mixer.Pass{B: B, T: T, Pad: pad}
	run := func(m mixer.Mixer[float64]) (out, dx []float64) {
		act := make([]float64, m.ActSize(B, T))
		scr := make([]float64, m.ScratchSize(B, T, 0))
		out = make([]float64, n)
		dx = make([]float64, n)
		m.Forward(out, act, scr, x, p)
		m.Backward(dx, scr, dout, act, x, p)
		return out, dx
	}
	of, dxf := run(fast)
	on, dxn := run(naive)
	Close(t, "forward", of, on, tol)
	Close(t, "dx", dxf, dxn, tol)
	for i, s := range specs {
		Close(t, "grad "+s.Name, gf[i], gn[i], tol)
	}
}

// Close fails when max|got−want| / max(1e-6, max|want|) > tol. The floor
// keeps tensors that are zero in exact arithmetic (the k bias gradient; q and
// k gradients at T = 1) from comparing rounding noise with rounding noise.
func Close(t *testing.T, name string, got, want []float64, tol float64) {
	t.Helper()
	var num, den float64
	for i := range want {
		num = math.Max(num, math.Abs(got[i]-want[i]))
		den = math.Max(den, math.Abs(want[i]))
	}
	if e := num / math.Max(den, 1e-6); e > tol || math.IsNaN(e) {
		t.Errorf("%s: max rel err %.3g > %.3g", name, e, tol)
	}
}

// Pad returns a [B·T] padding mask with key positions marked as padding:
// the last b+1 of sequence b and position T/2 (position 0 stays real). With
// all set, every position of sequence 0 except the first is padding.
func Pad(B, T int, all bool) []bool {
	pad := make([]bool, B*T)
	for b := 0; b < B; b++ {
		for j := max(1, T-1-b); j < T; j++ {
			pad[b*T+j] = true
		}
		if T > 3 {
			pad[b*T+T/2] = true
		}
	}
	if all {
		for j := 1; j < T; j++ {
			pad[j] = true
		}
	}
	return pad
}
