//go:build !amd64

package fft

const haveAsm = false

func radix4AVX512(yr, yi, xr, xi, tw *float32, s, m int) { panic("fft: no assembly on this platform") }

func radix2AVX512(yr, yi, xr, xi, tw *float32, s, m int) { panic("fft: no assembly on this platform") }
