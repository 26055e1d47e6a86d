package kernels

import (
	"math"
	"testing"
)

// refHalf rounds x to binary16 by comparing the two neighbouring half
// values in float64 (ties to the even mantissa); past 65504 the upper
// neighbour is 65536, i.e. Inf.
func refHalf(x float32) float32 {
	f := float64(x)
	if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
		return x
	}
	a := math.Abs(f)
	e := math.Max(math.Floor(math.Log2(a)), -14) // half exponent (subnormals: −14)
	step := math.Ldexp(1, int(e)-10)
	lo := math.Floor(a/step) * step
	hi := lo + step
	r := lo
	switch {
	case a-lo > hi-a:
		r = hi
	case a-lo == hi-a && int64(lo/step)%2 != 0:
		r = hi
	}
	if r > 65504 {
		r = math.Inf(1)
	}
	return float32(math.Copysign(r, f))
}

// TestRoundHalf: RoundHalf rounds every class of float32 (zeros,
// subnormal and normal halves, ties, the overflow threshold, infinities,
// NaNs) to nearest even on every path, as the float64 reference does.
func TestRoundHalf(t *testing.T) {
	ps := bf16Patterns()
	ps = append(ps, 0x477FE000, 0x477FEFFF, 0x477FF000, 0x477FF001, 0x33800000, 0x33000000, 0x33000001,
		0x387FE000, 0x387FF000, 0x38800000, 0x3F801000, 0x3F803000, 0x3F800FFF, 0xB3800001)
	src := make([]float32, len(ps))
	for i, p := range ps {
		src[i] = math.Float32frombits(p)
	}
	for _, p := range Paths() {
		old := SetPath(p)
		got := append([]float32(nil), src...)
		RoundHalf(got)
		for i, x := range src {
			want := refHalf(x)
			if math.IsNaN(float64(x)) {
				if !math.IsNaN(float64(got[i])) {
					t.Errorf("%v: RoundHalf(NaN %#08x) = %v", p, ps[i], got[i])
				}
				continue
			}
			if math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Errorf("%v: RoundHalf(%#08x = %g) = %g, want %g", p, ps[i], x, got[i], want)
			}
			if g := roundHalf(x); math.Float32bits(g) != math.Float32bits(want) {
				t.Errorf("the Go twin: roundHalf(%#08x = %g) = %g, want %g", ps[i], x, g, want)
			}
		}
		SetPath(old)
	}
}
