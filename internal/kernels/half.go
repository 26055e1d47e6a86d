package kernels

import (
	"math"
	"unsafe"
)

// RoundHalf rounds every value of x to the nearest IEEE half-precision
// value (binary16, to nearest even, subnormals included), in place: the
// numerics of storing x as fp16. Values that round past 65504 become ±Inf;
// infinities stay, and a NaN stays a NaN. It runs on F16C conversions where
// the CPU has AVX-512, else on the pure-Go twin.
func RoundHalf(x []float32) {
	for i := roundHalfVec(x); i < len(x); i++ {
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
	for i := toHalfVec(dst, src); i < len(src); i++ {
		dst[i] = halfBits(roundHalf(src[i]))
	}
}

// FromHalf converts half-precision bits to float32 (exactly). It panics if
// len(dst) < len(src).
func FromHalf(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i := fromHalfVec(dst, src); i < len(src); i++ {
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

// Format16 is a 16-bit storage format for float32 activations: bf16 or
// IEEE half.
type Format16 uint8

const (
	StoreBF16 Format16 = iota // bfloat16 (ToBF16's rounding)
	StoreHalf                 // IEEE binary16 (RoundHalf's rounding)
)

// Keep rounds x in place to the format and writes its bits into dst, so
// that x afterwards holds exactly the values Load reads back from dst. It
// splits large inputs across at most threads threads. It panics if
// len(dst) < len(x).
func (f Format16) Keep(threads int, dst []uint16, x []float32) {
	dst = dst[:len(x)]
	splitWork(threads, len(x), 16, 1, func(lo, hi int) { f.KeepST(dst[lo:hi], x[lo:hi]) })
}

// KeepST is Keep on the calling goroutine.
func (f Format16) KeepST(dst []uint16, x []float32) {
	dst = dst[:len(x)]
	n := 0
	if f == StoreBF16 {
		n = keepBF16Vec(AsBF16(dst), x)
	}
	for s := n; s < len(x); s += 4096 { // convert back while in cache
		e := min(s+4096, len(x))
		if f == StoreHalf {
			ToHalf(dst[s:e], x[s:e])
			FromHalf(x[s:e], dst[s:e])
		} else {
			b := AsBF16(dst[s:e])
			ToBF16(b, x[s:e])
			FromBF16(x[s:e], b)
		}
	}
}

// LoadST is Load on the calling goroutine.
func (f Format16) LoadST(dst []float32, src []uint16) {
	if f == StoreHalf {
		FromHalf(dst, src)
	} else {
		FromBF16(dst, AsBF16(src))
	}
}

// Load reads the format's bits src into dst (exactly), splitting large
// inputs across at most threads threads. It panics if len(dst) < len(src).
func (f Format16) Load(threads int, dst []float32, src []uint16) {
	dst = dst[:len(src)]
	splitWork(threads, len(src), 16, 1, func(lo, hi int) { f.LoadST(dst[lo:hi], src[lo:hi]) })
}

// AsBF16 views 16-bit storage as bf16 values.
func AsBF16(x []uint16) []BF16 {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*BF16)(unsafe.Pointer(&x[0])), len(x))
}

// Uint16s views x's memory as 2·len(x) 16-bit values: a float32 buffer
// (a mixer's activations) holding 16-bit storage.
func Uint16s(x []float32) []uint16 {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&x[0])), 2*len(x))
}

// Format16Of is the activation storage format of a model precision: bf16
// for "bf16", IEEE half for "fp16"; ok is false for any other.
func Format16Of(precision string) (f Format16, ok bool) {
	switch precision {
	case "bf16":
		return StoreBF16, true
	case "fp16":
		return StoreHalf, true
	}
	return 0, false
}
