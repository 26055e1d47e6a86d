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

// ToHalf converts src to IEEE half-precision bits in dst (RoundHalf's
// rounding). It panics if len(dst) < len(src).
func ToHalf(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	n := 0
	if path == PathAVX512 {
		if n = len(src) &^ 15; n > 0 {
			toHalfAVX512(&dst[0], &src[0], n)
		}
	}
	for i := n; i < len(src); i++ {
		dst[i] = halfBits(roundHalf(src[i]))
	}
}

// FromHalf converts half-precision bits to float32 (exactly). It panics if
// len(dst) < len(src).
func FromHalf(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	n := 0
	if path == PathAVX512 {
		if n = len(src) &^ 15; n > 0 {
			fromHalfAVX512(&dst[0], &src[0], n)
		}
	}
	for i := n; i < len(src); i++ {
		dst[i] = halfFloat(src[i])
	}
}

// halfBits is the binary16 encoding of x, a float32 that a half holds
// exactly (roundHalf's result).
func halfBits(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	a := b & 0x7FFFFFFF
	switch {
	case a >= 0x7F800000: // Inf or NaN (quiet, top payload bits kept)
		if a > 0x7F800000 {
			return sign | 0x7E00 | uint16(a>>13)&0x1FF
		}
		return sign | 0x7C00
	case a >= 0x38800000: // normal: rebias the exponent 127 → 15
		return sign | uint16((a-0x38000000)>>13)
	}
	// Subnormal (or zero): a multiple of 2⁻²⁴.
	return sign | uint16(math.Float32frombits(a)*(1<<24))
}

// halfFloat is the float32 value of binary16 bits h.
func halfFloat(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	e, m := uint32(h>>10)&0x1F, uint32(h&0x3FF)
	switch {
	case e == 0x1F:
		return math.Float32frombits(sign | 0x7F800000 | m<<13)
	case e == 0:
		v := float32(m) / (1 << 24)
		return math.Float32frombits(sign | math.Float32bits(v))
	}
	return math.Float32frombits(sign | (e+112)<<23 | m<<13)
}
