package kernels

// roundHalfAVX512 rounds n (a multiple of 16) float32 values at x to half
// precision in place (F16C conversions on ZMM registers).
//
//go:noescape
func roundHalfAVX512(x *float32, n int)
