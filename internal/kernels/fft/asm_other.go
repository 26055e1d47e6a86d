//go:build !amd64 || purego

package fft

const haveAsm = false

func radix4AVX512(yr, yi, xr, xi, tw *float32, s, m int) { panic("fft: no assembly on this platform") }

func radix4SplitAVX512(yr, yi, xr, xi, tw *float32, m int) {
	panic("fft: no assembly on this platform")
}

func interleave4AVX512(dr, di, sr, si *float32, rows, ds, qs int) {
	panic("fft: no assembly on this platform")
}

func radix2AVX512(yr, yi, xr, xi, tw *float32, s, m int) { panic("fft: no assembly on this platform") }

func twiddleAVX512(dr, di, sr, si, tw *float32, w, cnt int) {
	panic("fft: no assembly on this platform")
}

func realPackAVX512(or, oi, r0, i0, r1, i1, r2, i2, r3, i3 *float32, n int, c, s float32) {
	panic("fft: no assembly on this platform")
}

func realPackRowsAVX512(or, oi, r0, r1, r2, r3, c, s *float32, dz, ld, cnt int) {
	panic("fft: no assembly on this platform")
}

func copyRowsAVX512(dr, di, sr, si *float32, n, rows, ds, ss int) {
	panic("fft: no assembly on this platform")
}

func realPackPairAVX512(or, or2, r0, r1, r2, r3, c, s *float32, dz, do, ld, cnt int) {
	panic("fft: no assembly on this platform")
}

func radix5AVX512(yr, yi, xr, xi, tw, cs *float32, s, m int) {
	panic("fft: no assembly on this platform")
}

func radix7AVX512(yr, yi, xr, xi, tw, cs *float32, s, m int) {
	panic("fft: no assembly on this platform")
}
