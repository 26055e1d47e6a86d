//go:build !amd64 || purego

package kernels

// transpose16 is never called off amd64 (there is no AVX-512 path).
func transpose16(dst *float32, ldd int, src *float32, lds int, add bool) {
	panic("kernels: no AVX-512 transpose on this platform")
}
