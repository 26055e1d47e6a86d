//go:build !purego

package kernels

// roundHalfAVX512 rounds n (a multiple of 16) float32 values at x to half
// precision in place (F16C conversions on ZMM registers).
//
//go:noescape
func roundHalfAVX512(x *float32, n int)

// toHalfAVX512 converts n (a multiple of 16) float32 values to half bits.
//
//go:noescape
func toHalfAVX512(dst *uint16, src *float32, n int)

// fromHalfAVX512 converts n (a multiple of 16) half values to float32.
//
//go:noescape
func fromHalfAVX512(dst *float32, src *uint16, n int)
