package kernels

import "math"

// RoundHalf rounds every value of x to the nearest IEEE half-precision
// value (binary16, to nearest even, subnormals included), in place: the
// numerics of storing x as fp16. Values that round past 65504 become ±Inf;
// infinities stay, and a NaN stays a NaN. It runs on F16C conversions where
// the CPU has AVX-512, else on the pure-Go twin.
func RoundHalf(x []float32) {
	n := 0
	if path == PathAVX512 {
		if n = len(x) &^ 15; n > 0 {
			roundHalfAVX512(&x[0], n)
		}
	}
	for i := n; i < len(x); i++ {
		x[i] = roundHalf(x[i])
	}
}

// roundHalf is RoundHalf of one value: drop 13 of float32's 23 mantissa
// bits to nearest even for a normal half, or round to a multiple of 2⁻²⁴
// below the smallest normal half (2⁻¹⁴).
func roundHalf(x float32) float32 {
	b := math.Float32bits(x)
	a := b & 0x7FFFFFFF
	switch {
	case a >= 0x7F800000: // Inf or NaN
		return x
	case a >= 0x477FF000: // ≥ 65520, halfway past 65504: rounds to Inf
		return math.Float32frombits(0x7F800000 | b&0x80000000)
	case a < 0x38800000: // below 2⁻¹⁴: a half subnormal
		f := math.RoundToEven(float64(math.Float32frombits(a))*(1<<24)) / (1 << 24)
		return math.Float32frombits(math.Float32bits(float32(f)) | b&0x80000000)
	}
	a = (a + 0xFFF + (a >> 13 & 1)) &^ 0x1FFF
	return math.Float32frombits(a | b&0x80000000)
}
