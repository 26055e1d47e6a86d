package kernels

import (
	"math"

	"github.com/tokenmix/tokenmix/internal/parallel"
)

// BF16 is a bfloat16 value: the top 16 bits of a float32 (sign, 8 exponent
// bits, 7 mantissa bits).
type BF16 uint16

// ToBF16 converts src to bf16, rounding to nearest even (subnormals
// included); a NaN stays a NaN (quiet), infinities stay infinite, and
// values that round past the largest bf16 become infinite. It panics if
// len(dst) < len(src).
func ToBF16(dst []BF16, src []float32) {
	dst = dst[:len(src)]
	for i := toBF16Vec(dst, src); i < len(src); i++ {
		dst[i] = bf16Of(src[i])
	}
}

// FromBF16 converts src to float32 (exactly). It panics if len(dst) <
// len(src).
func FromBF16(dst []float32, src []BF16) {
	dst = dst[:len(src)]
	for i := fromBF16Vec(dst, src); i < len(src); i++ {
		dst[i] = src[i].Float32()
	}
}

// bf16Of rounds x to bf16, to nearest even.
func bf16Of(x float32) BF16 {
	b := math.Float32bits(x)
	if b&0x7FFFFFFF > 0x7F800000 { // NaN: keep the top bits, set the quiet bit
		return BF16(b>>16 | 0x40)
	}
	return BF16((b + 0x7FFF + (b >> 16 & 1)) >> 16)
}

// Float32 is b as a float32 (exact).
func (b BF16) Float32() float32 { return math.Float32frombits(uint32(b) << 16) }

// RoundBF16 rounds x in place to bf16 values (ToBF16's rounding, read back
// exactly), splitting large inputs across at most threads threads; on the
// calling goroutine it allocates nothing.
func RoundBF16(threads int, x []float32) {
	if serialWork(threads, len(x), 1) {
		roundBF16(x)
		return
	}
	parallel.For(threads, len(x), 16, func(_, lo, hi int) { roundBF16(x[lo:hi]) })
}

// roundBF16 is RoundBF16 on the calling goroutine, through a small buffer
// of bits on the stack.
func roundBF16(x []float32) {
	var bits [512]uint16
	for i := 0; i < len(x); i += len(bits) {
		j := min(i+len(bits), len(x))
		StoreBF16.KeepST(bits[:j-i], x[i:j])
	}
}
