package kernels

import (
	"math"
	"testing"

	"github.com/tokenmix/tokenmix/internal/parallel"
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

// TestRoundHalf: RoundHalf (and ToHalf, FromHalf) rounds every class of float32 (zeros,
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
		// ToHalf and FromHalf: the round trip gives RoundHalf's value, and
		// every one of the 65536 encodings survives it.
		bits := make([]uint16, len(src))
		ToHalf(bits, src)
		back := make([]float32, len(src))
		FromHalf(back, bits)
		for i, x := range src {
			if w := got[i]; math.Float32bits(back[i]) != math.Float32bits(w) && !(x != x && back[i] != back[i]) {
				t.Errorf("%v: FromHalf(ToHalf(%#08x)) = %g, want %g", p, ps[i], back[i], w)
			}
		}
		all := make([]uint16, 1<<16)
		for i := range all {
			all[i] = uint16(i)
		}
		f := make([]float32, len(all))
		FromHalf(f, all)
		again := make([]uint16, len(all))
		ToHalf(again, f)
		for i, h := range all {
			nan := h&0x7C00 == 0x7C00 && h&0x3FF != 0
			if again[i] != h && !(nan && again[i]&0x7C00 == 0x7C00 && again[i]&0x3FF != 0) {
				t.Fatalf("%v: half %#04x → %g → %#04x", p, h, f[i], again[i])
			}
			if g := halfFloat(h); math.Float32bits(g) != math.Float32bits(f[i]) && !nan {
				t.Fatalf("the Go twin: halfFloat(%#04x) = %g, the path %g", h, g, f[i])
			}
		}
		SetPath(old)
	}
}

// TestFormat16: Keep leaves in x exactly what Load reads back from dst,
// and dst holds ToBF16's (or ToHalf's) encoding, on every path and at
// lengths with a partial vector; NaNs stay NaNs.
func TestFormat16(t *testing.T) {
	ps := bf16Patterns()
	for _, p := range Paths() {
		old := SetPath(p)
		for _, n := range []int{1, 15, 16, 17, 100, 4096 + 37, 3 * 4096} {
			src := make([]float32, n)
			for i := range src {
				src[i] = math.Float32frombits(ps[i%len(ps)] ^ uint32(i/len(ps))<<3)
			}
			for _, f := range []Format16{StoreBF16, StoreHalf} {
				x := append([]float32(nil), src...)
				got := make([]uint16, n)
				f.Keep(parallel.Threads(), got, x)
				want := make([]uint16, n)
				if f == StoreHalf {
					ToHalf(want, src)
				} else {
					ToBF16(AsBF16(want), src)
				}
				back := make([]float32, n)
				f.Load(parallel.Threads(), back, got)
				for i := range src {
					nan := math.IsNaN(float64(src[i]))
					switch {
					case got[i] != want[i] && !nan:
						t.Fatalf("%v %d: Keep stored %#04x for %#08x, want %#04x", p, f, got[i], math.Float32bits(src[i]), want[i])
					case nan && !(math.IsNaN(float64(x[i])) && math.IsNaN(float64(back[i]))):
						t.Fatalf("%v %d: NaN %#08x kept as %v, loaded as %v", p, f, math.Float32bits(src[i]), x[i], back[i])
					case !nan && math.Float32bits(x[i]) != math.Float32bits(back[i]):
						t.Fatalf("%v %d: %#08x rounded in place to %#08x, Load gives %#08x", p, f, math.Float32bits(src[i]), math.Float32bits(x[i]), math.Float32bits(back[i]))
					}
				}
			}
		}
		SetPath(old)
	}
}
